#!/usr/bin/perl
# settings_race.t: the admin commands that change settings at run time
# (verbosity, stats detail on|off, lru_crawler sleep|tocrawl, lru mode,
# lru tune, lru temp_ttl, slabs automove) while other connections, served
# by other workers, run the commands that read those settings (every
# command reads the verbosity, get/set/delete the detail switch, the
# crawler its sleep and budget, `stats settings` all of them).  The point
# is the TSan build (scripts/test runs it with halt_on_error): an
# unsynchronised read kills the server, and the last checks fail.  In
# the other builds it checks that the changes take effect and that the
# server keeps answering.  The readers' `mg` of one key from several
# workers also covers mg's reply line, which reads the item's flags that
# another worker's hit changes (built under the item lock).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use MemcachedTest;

my $server = new_memcached('-t 4 -o lru_crawler_sleep=0');
my @readers = map { $server->sock } 1 .. 3;
my $admin = $server->sock;

send_sync($readers[0], join '', map { "set k:$_ 0 0 2\r\nab\r\n" } 1 .. 300);

my @changes = (
    [ "verbosity 1\r\n", "OK\r\n" ],
    [ "verbosity 0\r\n", "OK\r\n" ],
    [ "stats detail on\r\n", "OK\r\n" ],
    [ "stats detail off\r\n", "OK\r\n" ],
    [ "lru_crawler sleep 0\r\n", "OK\r\n" ],
    [ "lru_crawler sleep 1\r\n", "OK\r\n" ],
    [ "lru_crawler tocrawl 50\r\n", "OK\r\n" ],
    [ "lru_crawler tocrawl 0\r\n", "OK\r\n" ],
    [ "lru mode flat\r\n", "OK\r\n" ],
    [ "lru mode segmented\r\n", "OK\r\n" ],
    [ "lru tune 10 30 0.1 2.5\r\n", "OK\r\n" ],
    [ "lru temp_ttl 30\r\n", "OK\r\n" ],
    [ "slabs automove 0\r\n", "OK\r\n" ],
    [ "slabs automove 1\r\n", "OK\r\n" ],
);
my $reads = join '', "get k:1 k:2 miss\r\n", "set k:3 0 0 2\r\ncd\r\n",
    "delete k:299\r\n", "mg k:4 v\r\n";

my ($bad_admin, $bad_reads, $rounds) = (0, 0, 0);
my $deadline = time + 2;
while (time < $deadline && $server->alive) {
    $rounds++;
    for my $ch (@changes) {
        mc_send($admin, $ch->[0]);
        mc_send($_, $reads) for @readers;
        $bad_admin++ unless read_line($admin, 3) eq $ch->[1];
    }
    for my $r (@readers) {
        # get: VALUE/END, set: STORED, delete, mg: VA line and value
        my $reply = send_sync($r, '', timeout => 3);
        $bad_reads++ unless $reply =~ /STORED\r\n/ && $reply =~ /VA 2\r\n/;
    }
    mc_send($readers[0], "stats settings\r\n");
    read_reply($readers[0], 3);
    mc_send($readers[1], "lru_crawler crawl all\r\n");
    read_line($readers[1], 3);
}
cmp_ok($rounds, '>=', 1, "$rounds rounds of changes while workers read");
is($bad_admin, 0, 'every change answered OK');
is($bad_reads, 0, 'the readers got their replies');

my $st = mem_stats($admin, 'settings');
is($st->{verbosity}, 0, 'verbosity back to 0');
is($st->{detail_enabled}, 'no', 'stats detail off');
is($st->{lru_crawler_sleep}, 1, 'lru_crawler sleep as set last');
is($st->{lru_crawler_tocrawl}, 0, 'lru_crawler tocrawl as set last');
is($st->{lru_segmented}, 'yes', 'lru mode as set last');
is($st->{hot_lru_pct}, 10, 'lru tune: hot_lru_pct');
is($st->{warm_max_factor}, '2.50', 'lru tune: warm_max_factor');
is($st->{temporary_ttl}, 30, 'lru temp_ttl');
is($st->{slab_automove}, 1, 'slabs automove as set last');
ok($server->alive, 'server alive (no TSan report under the TSan build)')
    or diag($server->log_text);
is($server->stop(term => 1), 0, 'server exited cleanly on SIGTERM');

done_testing();
