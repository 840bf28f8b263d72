#!/usr/bin/perl
# tier_crawler.t: the LRU crawler, `lru_crawler metadump` and `stats
# cachedump` cover the N-zone too (doc/tiering.md "Replacement").
#
# With tier_policy=nvm every item lives in the N-zone: metadump (by class
# and by hash) lists every key once with the fields `me` reports; cachedump
# lists them; metadump reads NVM lines (nvm_lines_read rises) and writes
# none.  After the debug build's `debugtime` expires some of them, `lru_crawler
# crawl all` reclaims exactly those (curr_items, n_items drop,
# crawler_reclaimed and items:N:crawler_reclaimed rise, the keys read as
# misses, get_expired stays 0), reading NVM but not writing it; tocrawl
# bounds the N walk; flush_all'd N items are reclaimed too.  With a tiny
# D-zone and the default policy, items sit in both zones: metadump lists
# each exactly once, cachedump lists the whole class, a crawl after expiry
# leaves exactly the survivors in both zones.  Crawls and dumps run while
# another client stores, touches and deletes N items (the sanitizer builds
# check those walks).  -X still refuses dumps.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use POSIX ();
use Test::More;
use MemcachedTest;

sub dump_lines {
    my ($sock, $what) = @_;
    my $r = send_recv($sock, "lru_crawler metadump $what\r\n", timeout => 20);
    like($r, qr/END\r\n\z/, "metadump $what ends with END");
    return grep { /^key=/ } split /\r?\n/, $r;
}

sub parse_line {
    my ($l) = @_;
    my %f = map { split /=/, $_, 2 } split / /, $l;
    return \%f;
}

# key => parsed fields; a key listed twice is reported
sub keyed {
    my ($label, @lines) = @_;
    my (%h, @dups);
    for my $l (@lines) {
        my $f = parse_line($l);
        push @dups, $f->{key} if exists $h{$f->{key}};
        $h{$f->{key}} = $f;
    }
    is(scalar(@dups), 0, "$label: no key listed twice")
        or diag("twice: @dups[0 .. ($#dups < 5 ? $#dups : 5)]");
    return \%h;
}

sub wait_crawl_done {
    my ($srv, $starts) = @_;
    return wait_until(20, sub {
        my $st = $srv->stats;
        return ($st->{lru_crawler_starts} // 0) > $starts
            && ($st->{lru_crawler_running} // 1) == 0 ? $st : undef;
    }, 0.1);
}

sub crawl_all {
    my ($srv, $sock) = @_;
    my $starts = $srv->stats->{lru_crawler_starts} // 0;
    reply_is(send_recv($sock, "lru_crawler crawl all\r\n"), "OK\r\n",
        'lru_crawler crawl all');
    my $st = wait_crawl_done($srv, $starts);
    ok($st, 'the crawl finished');
    return $st;
}

my $debug;

# The servers whose clock debugtime moves run without the LRU maintainer:
# it starts crawls of its own on that clock (as memcached's does), and
# only the test's crawls are wanted there.

# ---- every item in the N-zone ----
{
    my $srv = new_memcached('-m 2 -I 64k -t 2 '
        . '-o nvm_size=16m,tier_policy=nvm,lru_crawler_sleep=0,'
        . 'no_lru_maintainer');
    my $s = $srv->sock;
    $debug = $srv->has_debugtime;

    # the expired items share the class of the live keep_ items, which
    # keeps the class in `stats items` once they are reclaimed
    send_sync($s, join '', map { "set exp_$_ 0 100 60\r\n" . ('e' x 60) . "\r\n" } 1 .. 200);
    send_sync($s, join '', map { "set keep_$_ 0 0 60\r\n" . ('k' x 60) . "\r\n" } 1 .. 50);
    send_sync($s, "set sp%ce 0 0 1\r\nx\r\n");
    my $t = $srv->tier_stats;
    is($t->{n_items}, 251, 'all 251 items are in the N-zone');
    is($t->{d_items}, 0, 'none in the D-zone');
    mem_get_is($s, 'keep_1', 'k' x 60, 'keep_1 reads back (fetched now)');

    my $l0 = $srv->tier_stats;
    my $h = keyed('metadump all', dump_lines($s, 'all'));
    my $l1 = $srv->tier_stats;
    is(scalar(keys %$h), 251, 'metadump all lists every N item');
    cmp_ok($l1->{nvm_lines_read}, '>=', $l0->{nvm_lines_read} + 251,
        'metadump reads the N items through nvm.h (nvm_lines_read rises)');
    is($l1->{nvm_lines_written}, $l0->{nvm_lines_written},
        'metadump writes no NVM line');

    my $now = time;
    my $f = $h->{'keep_1'} // {};
    is($f->{exp}, -1, 'exp=-1 for a key that never expires');
    is($f->{fetch}, 'yes', 'fetch=yes from the slot after a get');
    is(($h->{'keep_2'} // {})->{fetch}, 'no', 'fetch=no for a key never read');
    my $fe = $h->{'exp_7'} // {};
    ok(defined $fe->{exp} && abs($fe->{exp} - ($now + 100)) <= 3,
        'exp is an absolute unix time') or diag("exp=$fe->{exp} now=$now");
    ok(defined $f->{la} && abs($f->{la} - $now) <= 3,
        'la is the absolute time of the last access') or diag("la=$f->{la}");
    ok(exists $h->{'sp%25ce'}, 'keys are URL-encoded');
    my $g = send_recv($s, "gets keep_3\r\n");
    my ($cas) = $g =~ /^VALUE keep_3 0 60 (\d+)/;
    is(($h->{'keep_3'} // {})->{cas}, $cas, 'cas is the item\'s cas');
    my $me = send_recv($s, "me keep_4\r\n");
    my ($mcls, $msize) = $me =~ / cls=(\d+) size=(\d+)/;
    ok(defined $mcls, 'me answers for an N item') or diag($me);
    is(($h->{'keep_4'} // {})->{cls}, $mcls, 'cls is the one me reports');
    is(($h->{'keep_4'} // {})->{size}, $msize, 'size is the one me reports');

    my $hh = keyed('metadump hash', dump_lines($s, 'hash'));
    is_deeply([sort keys %$hh], [sort keys %$h],
        'metadump hash lists the same keys');
    is_deeply($hh->{'exp_9'}, $h->{'exp_9'}, 'with the same fields');

    my $cd = send_recv($s, "stats cachedump $mcls 0\r\n", timeout => 10);
    my @items = $cd =~ /^ITEM (\S+) \[/mg;
    my %cls_keys = map { $_ => 1 }
        grep { $h->{$_}{cls} == $mcls } keys %$h;
    is(scalar(@items), scalar(keys %cls_keys),
        'stats cachedump lists every N item of the class');
    like($cd, qr/^ITEM keep_4 \[60 b; 0 s\]\r\n/m, 'cachedump line format');
    my $cd5 = send_recv($s, "stats cachedump $mcls 5\r\n");
    my @five = $cd5 =~ /^ITEM /mg;
    is(scalar(@five), 5, 'cachedump limit holds for N items');

    SKIP: {
        skip 'no debugtime (not a debug build)', 24 unless $debug;
        $srv->debugtime(101);

        # tocrawl bounds the N walk: 20 chunks of exp_*'s class looked at
        my $ec = $fe->{cls} // 0;
        reply_is(send_recv($s, "lru_crawler tocrawl 20\r\n"), "OK\r\n",
            'tocrawl 20');
        my $c0 = $srv->stats('items');
        crawl_all($srv, $s);
        my $c1 = $srv->stats('items');
        my $k = "items:$ec:crawler_items_checked";
        is(($c1->{$k} // 0) - ($c0->{$k} // 0), 20,
            'tocrawl 20: 20 N items of the class checked');
        cmp_ok($srv->stats->{curr_items}, '>=', 251 - 40,
            'at most 20 reclaimed per class');
        reply_is(send_recv($s, "lru_crawler tocrawl 0\r\n"), "OK\r\n",
            'tocrawl 0');

        my $before = $srv->stats->{curr_items};
        my $t0 = $srv->tier_stats;
        my $st = crawl_all($srv, $s);
        my $t1 = $srv->tier_stats;
        is($st->{curr_items}, 51, 'the crawler reclaimed the 200 expired N items');
        is($t1->{n_items}, 51, 'n_items dropped to 51');
        cmp_ok($st->{crawler_reclaimed}, '>=', 200, 'crawler_reclaimed');
        cmp_ok($st->{expired_unfetched}, '>=', 200, 'expired_unfetched');
        is($st->{get_expired}, 0, 'no request found them');
        cmp_ok($t1->{nvm_lines_read}, '>', $t0->{nvm_lines_read},
            'the crawl reads headers (nvm_lines_read rises)');
        is($t1->{nvm_lines_written} - $t0->{nvm_lines_written},
            $before - 51,
            'the crawl writes one NVM line per reclaimed item (its seal)');
        my $it = $srv->stats('items');
        cmp_ok($it->{"items:$mcls:crawler_reclaimed"} // 0, '>', 0,
            "stats items: items:$mcls:crawler_reclaimed");
        cmp_ok($it->{"items:$mcls:crawler_items_checked"} // 0, '>', 0,
            "stats items: items:$mcls:crawler_items_checked");
        is(send_recv($s, "get exp_1 exp_200\r\n"), "END\r\n",
            'reclaimed keys read as misses');
        mem_get_is($s, 'keep_50', 'k' x 60, 'live N items untouched');
        my $h2 = keyed('metadump after crawl', dump_lines($s, 'all'));
        is(scalar(keys %$h2), 51, 'metadump lists the 51 survivors');

        # flush_all: the crawler reclaims flushed N items too
        reply_is(send_recv($s, "flush_all\r\n"), "OK\r\n", 'flush_all');
        sleep 1.1;
        $st = crawl_all($srv, $s);
        is($st->{curr_items}, 0, 'flushed N items reclaimed by the crawler');
        is($srv->tier_stats->{n_items}, 0, 'n_items 0');
    }
}

# ---- both zones ----
{
    my $srv = new_memcached('-m 2 -I 64k -t 2 '
        . '-o nvm_size=16m,lru_crawler_sleep=0,no_lru_maintainer');
    my $s = $srv->sock;
    my $val = 'v' x 900;
    my $N = 4000;
    for my $b (0 .. $N / 500 - 1) {
        send_sync($s, join('', map {
            my $i = $b * 500 + $_;
            "set k_$i 0 " . ($i % 2 ? 100 : 0) . " 900\r\n$val\r\n"
        } 1 .. 500), timeout => 20);
    }
    my $t = $srv->tier_stats;
    my $st = $srv->stats;
    is($st->{curr_items}, $N, "$N items stored");
    cmp_ok($t->{d_items}, '>', 0, 'the D-zone holds items');
    cmp_ok($t->{n_items}, '>', 0, 'the N-zone holds items');
    is($t->{d_items} + $t->{n_items}, $N, 'd_items + n_items = curr_items');

    my $h = keyed('metadump all (both zones)', dump_lines($s, 'all'));
    is_deeply([sort keys %$h], [sort map { "k_$_" } 1 .. $N],
        'metadump all lists every key of both zones exactly once');
    my $hh = keyed('metadump hash (both zones)', dump_lines($s, 'hash'));
    is(scalar(keys %$hh), $N, 'metadump hash lists every key too');
    my %cls = map { $_->{cls} => 1 } values %$h;
    is(scalar(keys %cls), 1, 'one class');
    my ($c) = keys %cls;
    my $cd = send_recv($s, "stats cachedump $c 0\r\n", timeout => 10);
    my %seen;
    $seen{$_}++ for $cd =~ /^ITEM (\S+) \[900 b;/mg;
    is(scalar(keys %seen), $N, 'cachedump lists D then N items: all of them');
    is(scalar(grep { $_ > 1 } values %seen), 0, 'each once');

    SKIP: {
        skip 'no debugtime (not a debug build)', 7 unless $debug;
        $srv->debugtime(101);
        my $st2 = crawl_all($srv, $s);
        my $t2 = $srv->tier_stats;
        is($st2->{curr_items}, $N / 2, 'the crawl leaves the survivors');
        is($t2->{d_items} + $t2->{n_items}, $N / 2,
            'd_items + n_items = curr_items');
        cmp_ok($t2->{n_items}, '<', $t->{n_items}, 'n_items dropped');
        my $h2 = keyed('metadump after crawl', dump_lines($s, 'all'));
        is_deeply([sort keys %$h2],
            [sort map { "k_" . (2 * $_) } 1 .. $N / 2],
            'metadump lists exactly the survivors');
    }
}

# ---- crawls and dumps while clients store, touch and delete N items ----
# (for the sanitizer builds: the walks read headers of chunks being
# rewritten; the server must stay consistent and report nothing;
# TIER_CRAWLER_SECS sets how long, 3 s by default)
{
    my $secs = $ENV{TIER_CRAWLER_SECS} // 3;
    my $srv = new_memcached('-m 2 -I 64k -t 2 '
        . '-o nvm_size=8m,tier_policy=nvm,lru_crawler_sleep=0');
    my $s = $srv->sock;
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        my $c = $srv->sock;
        my $end = time + $secs;
        my $i = 0;
        while (time < $end) {
            my $k = 'c_' . ($i % 300);
            my $len = 20 + $i % 200;
            send_sync($c, "set $k 0 " . ($i % 3 ? 1 : 0) . " $len\r\n"
                . ('c' x $len) . "\r\ntouch c_" . (($i * 7) % 300)
                . " 2\r\ndelete c_" . (($i * 13) % 300) . "\r\n");
            $i++;
        }
        POSIX::_exit(0);    # no END blocks: they would stop the server
    }
    my ($dumps, $bad) = (0, 0);
    my $end = time + $secs;
    while (time < $end) {
        for my $what ('all', 'hash') {
            my $r = send_recv($s, "lru_crawler metadump $what\r\n",
                timeout => 10);
            $dumps++;
            $bad++ unless $r =~ /END\r\n\z/;
        }
        send_recv($s, "lru_crawler crawl all\r\n");
        my $cd = send_recv($s, "stats cachedump 1 0\r\n");
        $bad++ unless $cd =~ /END\r\n\z/;
    }
    waitpid $pid, 0;
    is($bad, 0, "$dumps metadumps and the cachedumps under traffic all ended");
    ok($srv->alive, 'the server is alive') or diag($srv->log_text);
    my $t = $srv->tier_stats;
    is($t->{d_items} + $t->{n_items}, $srv->stats->{curr_items},
        'd_items + n_items = curr_items after the traffic');
}

# ---- -X ----
{
    my $srv = new_memcached('-X -o nvm_size=16m,tier_policy=nvm');
    my $s = $srv->sock;
    send_sync($s, "set a 0 0 1\r\nx\r\n");
    reply_is(send_recv($s, "lru_crawler metadump all\r\n"),
        "ERROR metadump not allowed\r\n", '-X refuses metadump');
    reply_is(send_recv($s, "lru_crawler metadump hash\r\n"),
        "ERROR metadump not allowed\r\n", '-X refuses metadump hash');
    reply_is(send_recv($s, "stats cachedump 1 0\r\n"),
        "CLIENT_ERROR stats cachedump not allowed\r\n", '-X refuses cachedump');
}

done_testing();
