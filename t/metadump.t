#!/usr/bin/perl
# metadump.t: `lru_crawler metadump` is sent in batches as the client reads
# it.  Clients that ask for a dump and never read leave the server's memory
# about where it was (each holds one batch; the rest waits in the walk),
# where a dump queued whole would grow it by the dump's size per client;
# a slow reader still gets every item once, then END, then the reply to
# what it pipelined after; clients that leave in the middle of a dump
# leave nothing behind (the server stops cleanly, and ASan checks leaks).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use MemcachedTest;

my $ITEMS = 100_000;
my $CLIENTS = 30;

my $server = new_memcached('-m 256 -t 2');
my $sock = $server->sock;
for (my $i = 0; $i < $ITEMS; $i += 10_000) {
    my $last = $i + 10_000 > $ITEMS ? $ITEMS : $i + 10_000;
    send_sync($sock, join '',
        map { "set key:$_ 0 0 5 noreply\r\nvalue\r\n" } $i + 1 .. $last);
}
is(mem_stats($sock)->{curr_items}, $ITEMS, "$ITEMS items stored");

# A whole dump, read slowly: every key once, END, then the pipelined reply.
sub read_dump {
    my ($s, $pause) = @_;
    mc_send($s, "lru_crawler metadump all\r\nversion\r\n");
    my (%seen, $dups, $lines);
    $dups = $lines = 0;
    # the crawler walks for every client in turn: under a sanitizer and
    # a loaded machine a line may take a while
    my $patience = 10 * slowdown() * load_factor();
    while (defined(my $line = read_line($s, $patience))) {
        if ($line =~ /^key=key%3A(\d+) /) {
            $dups++ if $seen{$1}++;
            $lines++;
            sleep $pause if $pause && $lines % 20_000 == 0;
            next;
        }
        return ($lines, $dups, scalar keys %seen, $line,
                read_line($s, $patience) // '<none>');
    }
    return ($lines, $dups, scalar keys %seen, '<timeout>', '');
}

SKIP: {
    my $before = proc_status_kb($server->pid, 'VmRSS');
    skip 'no /proc/PID/status for the server', 3 unless defined $before;
    my @idle = map { $server->sock } 1 .. $CLIENTS;
    mc_send($_, "lru_crawler metadump all\r\n") for @idle;
    # settled once the server has filled what the sockets take
    my ($prev, $now) = (-1, proc_status_kb($server->pid, 'VmRSS'));
    my $deadline = time + 10;
    while (time < $deadline && abs($now - $prev) > 256) {
        sleep 0.5;
        ($prev, $now) = ($now, proc_status_kb($server->pid, 'VmRSS'));
    }
    my $grown_mb = ($now - $before) / 1024;
    my $dump_mb = $ITEMS * 60 / 1024 / 1024;
    diag(sprintf 'RSS %.1f MB -> %.1f MB with %d unread dumps of %.1f MB',
         $before / 1024, $now / 1024, $CLIENTS, $dump_mb);
    # queued whole, the dumps would take $CLIENTS * $dump_mb (over 150 MB);
    # the sanitizer builds add their own overhead (TSan: about 30 MB)
    cmp_ok($grown_mb, '<', 80,
        "$CLIENTS clients not reading a dump: RSS grew by under 80 MB");
    my ($lines, $dups, $keys, $end, $after) = read_dump($server->sock, 0);
    is($keys, $ITEMS, 'meanwhile another client gets every item')
        or diag("its dump ended with: $end");
    close $_ for @idle;
}

my ($lines, $dups, $keys, $end, $after) = read_dump($server->sock, 0.2);
is($lines, $ITEMS, 'a slow reader gets one line per item');
is($dups, 0, '... each item once');
is($keys, $ITEMS, '... every item');
is($end, "END\r\n", '... then END');
is($after, "VERSION 1.6.18\r\n", '... then the reply to the next command');

# clients leaving in the middle of a dump
for (1 .. 10) {
    my $s = $server->sock;
    mc_send($s, "lru_crawler metadump all\r\n");
    read_line($s, 5);
    close $s;
}
reply_is(send_recv($server->sock, "version\r\n"), "VERSION 1.6.18\r\n",
    'server answers after clients left in the middle of dumps');
is($server->stop(term => 1), 0, 'server stops cleanly (no leak under ASan)');

done_testing();
