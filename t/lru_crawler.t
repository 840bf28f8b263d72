#!/usr/bin/perl
# lru_crawler.t: the LRU crawler reclaims expired items without any client
# touching them (curr_items drops, crawler_reclaimed rises), the
# lru_crawler command replies, and the metadump format (key=... exp=...
# la=... cas=... fetch=... cls=... size=..., END).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use MemcachedTest;

my $server = new_memcached('-o lru_crawler_sleep=0');
my $sock = $server->sock;

send_sync($sock, join '', map { "set exp$_ 0 1 3\r\nabc\r\n" } 1 .. 200);
send_sync($sock, join '', map { "set keep$_ 0 0 3\r\nxyz\r\n" } 1 .. 50);
is($server->stats->{curr_items}, 250, '250 items stored');
sleep 2.5;
reply_is(send_recv($sock, "lru_crawler crawl all\r\n"), "OK\r\n", 'crawl all');
# the LRU maintainer may have reclaimed them first: wait for the crawl too
my $st;
wait_until(5, sub {
    $st = $server->stats;
    return $st->{curr_items} == 50 && $st->{lru_crawler_starts} >= 1;
}, 0.1);
is($st->{curr_items}, 50, 'crawler reclaimed the 200 expired items');
cmp_ok($st->{crawler_reclaimed} + $st->{reclaimed}, '>=', 200,
    'reclaimed by the background (crawler_reclaimed + reclaimed)');
cmp_ok($st->{expired_unfetched}, '>=', 200, 'expired_unfetched (never fetched)');
cmp_ok($st->{lru_crawler_starts}, '>=', 1, 'lru_crawler_starts');
mem_get_is($sock, 'keep1', 'xyz', 'live items untouched');

# metadump
send_recv($sock, "set mdone 5 1000 4\r\nabcd\r\n");
send_recv($sock, "get mdone\r\n");
send_recv($sock, "set md%2 0 0 1\r\nz\r\n");
my $dump = send_recv($sock, "lru_crawler metadump all\r\n", timeout => 10);
like($dump, qr/\A(?:key=\S+ exp=-?\d+ la=\d+ cas=\d+ fetch=(?:yes|no) cls=\d+ size=\d+\r?\n)+END\r\n\z/,
    'metadump format');
my @lines = grep { /^key=/ } split /\n/, $dump;
is(scalar(@lines), 52, 'metadump lists every live item once');
my ($md1) = grep { /^key=mdone / } @lines;
ok($md1, 'mdone listed');
like($md1 // '', qr/ fetch=yes /, 'fetched flag');
my ($exp) = ($md1 // '') =~ / exp=(\d+)/;
ok($exp && abs($exp - (time + 1000)) <= 3, 'exp is an absolute unix time');
like(join("\n", @lines), qr/^key=md%252 exp=-1 /m, 'keys are URL-encoded; exp -1 = never');
reply_is(send_recv($sock, "version\r\n"), "VERSION 1.6.18\r\n", 'usable after metadump');

# command replies
reply_is(send_recv($sock, "lru_crawler crawl 99\r\n"), "BADCLASS invalid class id\r\n",
    'crawl bad class');
reply_is(send_recv($sock, "lru_crawler sleep 10\r\n"), "OK\r\n", 'lru_crawler sleep');
reply_is(send_recv($sock, "lru_crawler tocrawl 100\r\n"), "OK\r\n", 'lru_crawler tocrawl');
reply_is(send_recv($sock, "lru_crawler bogus\r\n"), "ERROR\r\n", 'unknown subcommand');
reply_is(send_recv($sock, "lru_crawler\r\n"), "ERROR\r\n", 'bare lru_crawler');
reply_is(send_recv($sock, "lru_crawler disable\r\n"), "OK\r\n", 'disable');
is($server->stats('settings')->{lru_crawler}, 'no', 'settings lru_crawler no');
reply_is(send_recv($sock, "lru_crawler enable\r\n"), "OK\r\n", 'enable');
is($server->stats('settings')->{lru_crawler}, 'yes', 'settings lru_crawler yes');

done_testing();
