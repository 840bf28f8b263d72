#!/usr/bin/perl
# incrdecr.t: incr/decr: 64-bit wrap on incr, floor at 0 on decr, missing
# keys, non-numeric values and deltas, length changes of the stored value
# (memcached pads a shrinking decr with spaces), noreply, and cas bumps.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $server = new_memcached();
my $sock = $server->sock;

reply_is(send_recv($sock, "incr num 1\r\n"), "NOT_FOUND\r\n", 'incr missing');
reply_is(send_recv($sock, "decr num 1\r\n"), "NOT_FOUND\r\n", 'decr missing');

send_recv($sock, "set num 5 0 1\r\n1\r\n");
reply_is(send_recv($sock, "incr num 1\r\n"), "2\r\n", 'incr 1');
reply_is(send_recv($sock, "incr num 8\r\n"), "10\r\n", 'incr 8 -> two digits');
mem_get_is({ sock => $sock, flags => 5 }, 'num', '10', 'value grew to 2 bytes, flags kept');
reply_is(send_recv($sock, "decr num 1\r\n"), "9\r\n", 'decr to one digit');
mem_get_is({ sock => $sock, flags => 5 }, 'num', '9 ', 'shrinking decr pads with a space');
reply_is(send_recv($sock, "decr num 100\r\n"), "0\r\n", 'decr floors at 0');
reply_is(send_recv($sock, "decr num 1\r\n"), "0\r\n", 'decr at 0 stays 0');
reply_is(send_recv($sock, "incr num 0\r\n"), "0\r\n", 'incr 0');

# 64-bit wrap
send_recv($sock, "set big 0 0 20\r\n18446744073709551615\r\n");
reply_is(send_recv($sock, "incr big 1\r\n"), "0\r\n", 'incr wraps 2^64-1 -> 0');
send_recv($sock, "set big 0 0 20\r\n18446744073709551610\r\n");
reply_is(send_recv($sock, "incr big 10\r\n"), "4\r\n", 'incr wraps modulo 2^64');
reply_is(send_recv($sock, "incr big 18446744073709551615\r\n"), "3\r\n",
    'max 64-bit delta accepted');
reply_is(send_recv($sock, "incr big 18446744073709551616\r\n"),
    "CLIENT_ERROR invalid numeric delta argument\r\n", 'delta over 2^64-1 rejected');
send_recv($sock, "set big 0 0 1\r\n0\r\n");
reply_is(send_recv($sock, "incr big 18446744073709551615\r\n"), "18446744073709551615\r\n",
    'incr to 2^64-1');
mem_get_is($sock, 'big', '18446744073709551615', '20-digit value stored');

# non-numeric values and deltas
send_recv($sock, "set text 0 0 3\r\nabc\r\n");
reply_is(send_recv($sock, "incr text 1\r\n"),
    "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n", 'incr on text');
reply_is(send_recv($sock, "decr text 1\r\n"),
    "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n", 'decr on text');
mem_get_is($sock, 'text', 'abc', 'text value untouched');
reply_is(send_recv($sock, "incr num abc\r\n"),
    "CLIENT_ERROR invalid numeric delta argument\r\n", 'non-numeric delta');
reply_is(send_recv($sock, "incr num -1\r\n"),
    "CLIENT_ERROR invalid numeric delta argument\r\n", 'negative delta');
reply_is(send_recv($sock, "incr num\r\n"), "ERROR\r\n", 'incr without delta');
reply_is(send_recv($sock, "incr\r\n"), "ERROR\r\n", 'bare incr');

# value with leading spaces / trailing garbage
send_recv($sock, "set lz 0 0 3\r\n007\r\n");
reply_is(send_recv($sock, "incr lz 1\r\n"), "8\r\n", 'leading zeros parsed');
mem_get_is($sock, 'lz', '8  ', 'stored with padding');

# cas changes on incr
send_recv($sock, "set c 0 0 1\r\n1\r\n");
my ($c1) = mem_gets($sock, 'c');
send_recv($sock, "incr c 1\r\n");
my ($c2, $v) = mem_gets($sock, 'c');
isnt($c2, $c1, 'incr changes cas');
is($v, '2', 'incr result visible to gets');

# noreply
reply_is(send_sync($sock, "incr c 5 noreply\r\ndecr c 2 noreply\r\nincr nokey 1 noreply\r\n"),
    '', 'noreply incr/decr silent');
mem_get_is($sock, 'c', '5', 'noreply incr/decr applied');

# incr on an expired item
send_recv($sock, "set gone 0 -1 1\r\n1\r\n");
reply_is(send_recv($sock, "incr gone 1\r\n"), "NOT_FOUND\r\n", 'incr on expired item');

my $st = $server->stats;
cmp_ok($st->{incr_misses}, '>=', 2, 'incr_misses');
cmp_ok($st->{incr_hits}, '>=', 6, 'incr_hits');
cmp_ok($st->{decr_misses}, '>=', 1, 'decr_misses');
cmp_ok($st->{decr_hits}, '>=', 3, 'decr_hits');

done_testing();
