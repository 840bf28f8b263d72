#!/usr/bin/perl
# expire.t: item expiry: relative TTLs, absolute unix times (> 30 days),
# negative TTLs (already expired), absolute times in the past, TTL reported
# by mg t, expired items invisible to every command, and the related stats.
# Uses short real sleeps; the long-TTL parts need the debug build's
# `debugtime` command and are skipped (with the reason printed) without it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use MemcachedTest;

# The gets below must find the expired items still linked (get_expired
# counts those), so neither background thread that reclaims dead items
# runs: on a slow run one could take them first (the count was 0 once
# under TSan with two `yes` loads)
my $server = new_memcached('-o no_lru_crawler,no_lru_maintainer');
my $sock = $server->sock;
my $now = time;

# negative TTL: expired at once
reply_is(send_recv($sock, "set neg 0 -1 1\r\nx\r\n"), "STORED\r\n", 'set with TTL -1');
mem_get_is($sock, 'neg', undef, 'negative TTL item is never visible');
reply_is(send_recv($sock, "mg neg v\r\n"), "EN\r\n", 'mg misses it too');

# absolute time in the past (> 30 days, so unix time)
reply_is(send_recv($sock, "set past 0 " . ($now - 3600) . " 1\r\nx\r\n"), "STORED\r\n",
    'set with absolute time in the past');
mem_get_is($sock, 'past', undef, 'absolute past time: expired');
reply_is(send_recv($sock, "set past2 0 2592001 1\r\nx\r\n"), "STORED\r\n",
    'TTL 30 days + 1 s is an absolute time (1970) ...');
mem_get_is($sock, 'past2', undef, '... so the item is expired');

# 30 days exactly is still relative
send_recv($sock, "set d30 0 2592000 1\r\nx\r\n");
mem_get_is($sock, 'd30', 'x', 'TTL of exactly 30 days is relative');
like(send_recv($sock, "mg d30 t\r\n"), qr/^HD t259(?:2000|1999)\r\n\z/,
    'mg t shows 30 days');

# absolute future time
my $abs = $now + 3600;
send_recv($sock, "set fut 0 $abs 1\r\nx\r\n");
my $r = send_recv($sock, "mg fut t v\r\n");
my ($ttl) = $r =~ /^VA 1 t(-?\d+)\r\n/;
ok(defined $ttl && $ttl > 3590 && $ttl <= 3601, "absolute future time -> TTL ~3600 ("
    . escape_bytes($r) . ')');

# short relative TTLs with real time
send_recv($sock, "set short 0 2 1\r\na\r\n");
send_recv($sock, "set short_mg 0 2 1\r\nb\r\n");
send_recv($sock, "set longer 0 100 1\r\nc\r\n");
send_recv($sock, "set abs_short 0 " . (time + 2) . " 1\r\nd\r\n");
send_recv($sock, "set forever 0 0 1\r\ne\r\n");
mem_get_is($sock, 'short', 'a', 'TTL 2 visible at once');
sleep 3.5;
mem_get_is($sock, 'short', undef, 'TTL 2 gone after 3.5 s');
reply_is(send_recv($sock, "mg short_mg v\r\n"), "EN\r\n", 'mg misses the expired item');
mem_get_is($sock, 'abs_short', undef, 'absolute now+2 gone after 3.5 s');
mem_get_is($sock, 'longer', 'c', 'TTL 100 still there');
mem_get_is($sock, 'forever', 'e', 'TTL 0 still there');

# expired items are missing for every command
send_recv($sock, "set x1 0 1 1\r\n1\r\n");
send_recv($sock, "set x2 0 1 1\r\n1\r\n");
send_recv($sock, "set x3 0 1 1\r\n1\r\n");
send_recv($sock, "set x4 0 1 1\r\n1\r\n");
send_recv($sock, "set x5 0 1 1\r\n1\r\n");
sleep 2.5;
reply_is(send_recv($sock, "incr x1 1\r\n"), "NOT_FOUND\r\n", 'incr on expired');
reply_is(send_recv($sock, "append x2 0 0 1\r\n2\r\n"), "NOT_STORED\r\n", 'append on expired');
reply_is(send_recv($sock, "touch x3 100\r\n"), "NOT_FOUND\r\n", 'touch on expired');
reply_is(send_recv($sock, "delete x4\r\n"), "NOT_FOUND\r\n", 'delete on expired');
reply_is(send_recv($sock, "add x5 0 0 1\r\n9\r\n"), "STORED\r\n", 'add on expired');

my $st = $server->stats;
cmp_ok($st->{get_expired}, '>=', 2, "get_expired counted ($st->{get_expired})");

# TTL counts down with real time
send_recv($sock, "set cd 0 50 1\r\nx\r\n");
sleep 2.2;
($ttl) = send_recv($sock, "mg cd t\r\n") =~ /^HD t(\d+)/;
ok(defined $ttl && $ttl >= 46 && $ttl <= 48, 'TTL counts down: ' . ($ttl // 'undef'));

SKIP: {
    skip 'server has no debugtime command (stock or non-debug build): '
        . 'long-TTL expiry via clock shift not tested', 6
        unless $server->has_debugtime;
    send_recv($sock, "set t100 0 100 1\r\nx\r\n");
    my $stored_at = time;
    send_recv($sock, "set t1000 0 1000 1\r\ny\r\n");
    send_recv($sock, "set tabs 0 " . (time + 500) . " 1\r\nz\r\n");
    $server->debugtime(101);
    mem_get_is($sock, 't100', undef, 'TTL 100 expired after debugtime 101');
    mem_get_is($sock, 't1000', 'y', 'TTL 1000 still there');
    ($ttl) = send_recv($sock, "mg t1000 t\r\n") =~ /^HD t(\d+)/;
    # 1000 - 101 less the real seconds since the set (the server's clock
    # ticks once a second, so one more on either side)
    my $real = time - $stored_at;
    ok(defined $ttl && $ttl >= 897 - $real && $ttl <= 899,
       'TTL reflects the clock shift: ' . ($ttl // 'undef')
       . " after $real s of real time");
    $server->debugtime(400);
    mem_get_is($sock, 'tabs', undef, 'absolute time reached via debugtime');
    $server->debugtime(1000);
    mem_get_is($sock, 't1000', undef, 'TTL 1000 expired');
    mem_get_is($sock, 'forever', 'e', 'TTL 0 item survives clock shifts');
}

done_testing();
