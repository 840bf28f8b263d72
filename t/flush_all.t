#!/usr/bin/perl
# flush_all.t: flush_all invalidates everything stored before it (at once,
# or after a delay), items stored afterwards survive, noreply, bad
# arguments, the cmd_flush stat, and -F (flush_all disabled).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use MemcachedTest;

my $server = new_memcached();
my $sock = $server->sock;

send_sync($sock, join '', map { "set f$_ 0 0 2\r\nv$_\r\n" } 0 .. 9);
mem_get_is($sock, 'f1', 'v1', 'item present');
reply_is(send_recv($sock, "flush_all\r\n"), "OK\r\n", 'flush_all');
reply_is(send_recv($sock, "get f0 f1 f2 f9\r\n"), "END\r\n", 'all items gone');
reply_is(send_recv($sock, "mg f3 v\r\n"), "EN\r\n", 'mg misses flushed items');
reply_is(send_recv($sock, "add f4 0 0 1\r\nn\r\n"), "STORED\r\n", 'add on flushed key');
reply_is(send_recv($sock, "incr f5 1\r\n"), "NOT_FOUND\r\n", 'incr on flushed key');

# items stored after the flush are kept
send_recv($sock, "set after 0 0 1\r\na\r\n");
mem_get_is($sock, 'after', 'a', 'item stored after flush survives');

# delayed flush
send_recv($sock, "set delayed 0 0 1\r\nd\r\n");
reply_is(send_recv($sock, "flush_all 2\r\n"), "OK\r\n", 'flush_all 2');
mem_get_is($sock, 'delayed', 'd', 'still there before the delay passes');
sleep 3.2;
mem_get_is($sock, 'delayed', undef, 'gone after the delay');
mem_get_is($sock, 'after', undef, 'older items gone too');
send_recv($sock, "set later 0 0 1\r\nl\r\n");
mem_get_is($sock, 'later', 'l', 'items stored after the deadline are kept');

# noreply, explicit 0, negative, bad argument
send_recv($sock, "set nr 0 0 1\r\nx\r\n");
reply_is(send_sync($sock, "flush_all noreply\r\n"), '', 'flush_all noreply silent');
mem_get_is($sock, 'nr', undef, 'noreply flush took effect');
send_recv($sock, "set nr 0 0 1\r\nx\r\n");
reply_is(send_sync($sock, "flush_all 0 noreply\r\n"), '', 'flush_all 0 noreply silent');
mem_get_is($sock, 'nr', undef, 'flush_all 0 noreply took effect');
reply_is(send_recv($sock, "flush_all 0\r\n"), "OK\r\n", 'flush_all 0');
reply_is(send_recv($sock, "flush_all abc\r\n"),
    "CLIENT_ERROR invalid exptime argument\r\n", 'non-numeric delay');
reply_is(send_recv($sock, "flush_all 1 2 3\r\n"), "ERROR\r\n", 'too many arguments');

# flushed items are not counted as hits
my $st = $server->stats;
cmp_ok($st->{cmd_flush}, '>=', 5, "cmd_flush counted ($st->{cmd_flush})");
cmp_ok($st->{get_flushed}, '>=', 1, 'get_flushed counted');
$server->stop;

# -F disables flush_all
my $nf = new_memcached('-F');
my $s = $nf->sock;
send_recv($s, "set k 0 0 1\r\nv\r\n");
reply_is(send_recv($s, "flush_all\r\n"), "CLIENT_ERROR flush_all not allowed\r\n",
    '-F: flush_all refused');
mem_get_is($s, 'k', 'v', '-F: items kept');
is($nf->stats('settings')->{flush_enabled}, 'no', '-F: flush_enabled no');

done_testing();
