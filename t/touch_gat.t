#!/usr/bin/perl
# touch_gat.t: touch, gat and gats: hits and misses, TTL updates visible
# through mg t, multi-key gat, bad exptime, noreply touch, and stats.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $server = new_memcached();
my $sock = $server->sock;

reply_is(send_recv($sock, "touch nokey 10\r\n"), "NOT_FOUND\r\n", 'touch missing');
send_recv($sock, "set k 3 0 2\r\nhi\r\n");
reply_is(send_recv($sock, "mg k t\r\n"), "HD t-1\r\n", 'no TTL initially');
reply_is(send_recv($sock, "touch k 1000\r\n"), "TOUCHED\r\n", 'touch hit');
like(send_recv($sock, "mg k t\r\n"), qr/^HD t(?:1000|999)\r\n\z/, 'TTL now ~1000');
reply_is(send_recv($sock, "touch k 0\r\n"), "TOUCHED\r\n", 'touch 0');
reply_is(send_recv($sock, "mg k t\r\n"), "HD t-1\r\n", 'touch 0 removes the TTL');
reply_is(send_recv($sock, "touch k abc\r\n"),
    "CLIENT_ERROR invalid exptime argument\r\n", 'touch bad exptime');
reply_is(send_recv($sock, "touch k\r\n"), "ERROR\r\n", 'touch without exptime');

# gat / gats
reply_is(send_recv($sock, "gat 500 k\r\n"), "VALUE k 3 2\r\nhi\r\nEND\r\n", 'gat hit');
like(send_recv($sock, "mg k t\r\n"), qr/^HD t(?:500|499)\r\n\z/, 'gat set TTL');
my $r = send_recv($sock, "gats 0 k\r\n");
like($r, qr/^VALUE k 3 2 (\d+)\r\nhi\r\nEND\r\n\z/, 'gats returns cas');
my ($cas) = $r =~ /^VALUE k 3 2 (\d+)/;
my ($cas2) = mem_gets($sock, 'k');
is($cas2, $cas, 'gats cas equals gets cas');
reply_is(send_recv($sock, "mg k t\r\n"), "HD t-1\r\n", 'gats 0 cleared TTL');
send_recv($sock, "set k2 0 0 2\r\nyo\r\n");
reply_is(send_recv($sock, "gat 100 k nokey k2\r\n"),
    "VALUE k 3 2\r\nhi\r\nVALUE k2 0 2\r\nyo\r\nEND\r\n", 'multi-key gat');
reply_is(send_recv($sock, "gat 100 nokey\r\n"), "END\r\n", 'gat miss');
reply_is(send_recv($sock, "gat abc k\r\n"),
    "CLIENT_ERROR invalid exptime argument\r\n", 'gat bad exptime');
reply_is(send_recv($sock, "gat k\r\n"),
    "CLIENT_ERROR invalid exptime argument\r\n", 'gat with a key but no exptime');
reply_is(send_recv($sock, "gat 10\r\n"), "END\r\n", 'gat with no keys: empty reply');
reply_is(send_recv($sock, "gat\r\n"), "ERROR\r\n", 'bare gat');

# negative touch expires the item
reply_is(send_recv($sock, "touch k2 -1\r\n"), "TOUCHED\r\n", 'touch -1');
mem_get_is($sock, 'k2', undef, 'item expired by negative touch');

# noreply touch
reply_is(send_sync($sock, "touch k 300 noreply\r\ntouch nokey 1 noreply\r\n"), '',
    'noreply touch silent');
like(send_recv($sock, "mg k t\r\n"), qr/^HD t(?:300|299)\r\n\z/, 'noreply touch applied');

my $st = $server->stats;
cmp_ok($st->{cmd_touch}, '>=', 10, 'cmd_touch counts touch and gat');
cmp_ok($st->{touch_hits}, '>=', 6, 'touch_hits');
cmp_ok($st->{touch_misses}, '>=', 3, 'touch_misses');

done_testing();
