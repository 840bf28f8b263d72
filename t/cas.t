#!/usr/bin/perl
# cas.t: gets/cas semantics: NOT_FOUND for missing keys, EXISTS on a stale
# cas, success with the current one, uniqueness across keys, races between
# two connections, noreply, bad cas tokens, and -C (cas disabled).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $server = new_memcached();
my $sock = $server->sock;
my $sock2 = $server->sock;

reply_is(send_recv($sock, "cas nokey 0 0 1 1\r\nx\r\n"), "NOT_FOUND\r\n",
    'cas on missing key');
reply_is(send_sync($sock, "cas bad 0 0 1\r\n"), "ERROR\r\n", 'cas without token');
reply_is(send_sync($sock, "cas bad 0 0 1 abc\r\nx\r\n"),
    "CLIENT_ERROR bad command line format\r\nERROR\r\n", 'non-numeric cas token');

send_recv($sock, "set foo 0 0 3\r\nbar\r\n");
my ($cas, $val) = mem_gets($sock, 'foo');
is($val, 'bar', 'gets value');
reply_is(send_recv($sock, "cas foo 0 0 3 " . ($cas + 1000) . "\r\nnew\r\n"),
    "EXISTS\r\n", 'wrong cas -> EXISTS');
mem_get_is($sock, 'foo', 'bar', 'unchanged after EXISTS');
reply_is(send_recv($sock, "cas foo 9 0 3 $cas\r\nnew\r\n"), "STORED\r\n",
    'right cas -> STORED');
mem_get_is({ sock => $sock, flags => 9 }, 'foo', 'new', 'value and flags updated by cas');
reply_is(send_recv($sock, "cas foo 0 0 3 $cas\r\nold\r\n"), "EXISTS\r\n",
    'reusing a consumed cas -> EXISTS');

# race: two clients gets the same cas, first wins
my ($c1) = mem_gets($sock, 'foo');
my ($c2) = mem_gets($sock2, 'foo');
is($c1, $c2, 'both clients see the same cas');
reply_is(send_recv($sock, "cas foo 0 0 2 $c1\r\nw1\r\n"), "STORED\r\n", 'first cas wins');
reply_is(send_recv($sock2, "cas foo 0 0 2 $c2\r\nw2\r\n"), "EXISTS\r\n", 'second cas loses');
mem_get_is($sock2, 'foo', 'w1', 'winner value visible');

# unique cas values across keys
my %seen;
for my $i (1 .. 50) {
    send_recv($sock, "set u$i 0 0 1\r\n1\r\n");
    my ($c) = mem_gets($sock, "u$i");
    $seen{$c}++;
}
is(scalar(keys %seen), 50, 'cas values are unique');

# cas after delete -> NOT_FOUND; cas on expired -> NOT_FOUND
my ($cd) = mem_gets($sock, 'u1');
send_recv($sock, "delete u1\r\n");
reply_is(send_recv($sock, "cas u1 0 0 1 $cd\r\nx\r\n"), "NOT_FOUND\r\n",
    'cas on deleted key');

# noreply
my ($cn) = mem_gets($sock, 'u2');
reply_is(send_sync($sock, "cas u2 0 0 2 $cn noreply\r\nok\r\ncas u2 0 0 2 $cn noreply\r\nno\r\n"),
    '', 'noreply cas silent');
mem_get_is($sock, 'u2', 'ok', 'noreply cas applied once');

# gets on multiple keys returns each key's own cas
my $r = send_recv($sock, "gets u3 u4\r\n");
my @cas = $r =~ /^VALUE u\d 0 1 (\d+)\r\n/mg;
is(scalar(@cas), 2, 'two cas values');
isnt($cas[0], $cas[1], 'different keys have different cas');

# stats
my $st = $server->stats;
cmp_ok($st->{cas_misses}, '>=', 2, 'cas_misses counted');
cmp_ok($st->{cas_hits}, '>=', 3, 'cas_hits counted');
cmp_ok($st->{cas_badval}, '>=', 3, 'cas_badval counted');
$server->stop;

# -C disables cas: gets returns 0, cas command then cannot match
my $nc = new_memcached('-C');
my $s = $nc->sock;
send_recv($s, "set k 0 0 1\r\nv\r\n");
reply_is(send_recv($s, "gets k\r\n"), "VALUE k 0 1 0\r\nv\r\nEND\r\n", '-C: gets cas is 0');
reply_is(send_recv($s, "mg k c\r\n"), "HD c0\r\n", '-C: mg c returns 0');
is($nc->stats('settings')->{cas_enabled}, 'no', '-C: cas_enabled no');

done_testing();
