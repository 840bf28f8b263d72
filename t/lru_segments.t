#!/usr/bin/perl
# lru_segments.t: memcached's segmented-LRU view of the cache, checked the
# same way on this server and (where it is installed) on Debian's
# memcached 1.6.18 started with the same options:
#   - the LRU crawler's first run at start-up (lru_crawler_starts 1), and
#     here, with the debug build's clock, the next ones on memcached's
#     schedule; a metadump counts as a start; none without the maintainer;
#   - new keys are HOT; the maintainer moves them to COLD (moves_to_cold);
#     keys read twice are WARM (moves_to_warm); hits_to_* count the hits
#     by segment; `stats reset` clears the moves and hits;
#   - a cache that evicts: every victim was moved to COLD first;
#   - the field lists of `stats`, `stats items` and `stats settings`.
# doc/tiering.md "Segments" says how the MQ's queues map onto the
# segments, and what differs (a key read once is WARM here).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $have_stock = -x stock_bin() && !server_is_stock();
diag('no stock memcached: checking this server only') unless $have_stock;

sub class_stats {
    my ($sock, $cls) = @_;
    my $st = mem_stats($sock, 'items');
    my %c;
    for my $k (keys %$st) {
        $c{$1} = $st->{$k} if $k =~ /^items:$cls:(\S+)$/;
    }
    return \%c;
}

sub set_keys {
    my ($sock, $prefix, $from, $to) = @_;
    my $v = 'v' x 100;
    return send_sync($sock, join '',
        map { "set $prefix$_ 0 0 100 noreply\r\n$v\r\n" } $from .. $to);
}

sub get_keys {
    my ($sock, $prefix, $from, $to) = @_;
    return send_recv($sock, join('', map { "get $prefix$_\r\n" } $from .. $to),
        n => $to - $from + 1);
}

# ---- the crawler's first run comes with the start ----
my @started = servers_with_stock('-m 64');
# all servers at once: memcached's second run comes 65 s after its first
wait_until(10, sub {
    return !grep { (mem_stats($_->{sock})->{lru_crawler_starts} // 0) < 1 }
        @started;
});
for my $s (@started) {
    is(mem_stats($s->{sock})->{lru_crawler_starts}, 1,
        "$s->{name}: lru_crawler_starts 1 right after start-up");
}
for my $s (grep { $_->{srv}->has_debugtime } @started) {
    my $name = $s->{name};
    my $st;
    # the run found nothing to reclaim: the next one a minute and five
    # seconds after it ended, the one after two minutes and five seconds
    for my $step ([70, 2], [130, 3]) {
        my ($secs, $starts) = @$step;
        wait_until(10, sub { !mem_stats($s->{sock})->{lru_crawler_running} });
        $s->{srv}->debugtime($secs);
        $st = wait_until(10, sub {
            my $st = mem_stats($s->{sock});
            return $st->{lru_crawler_starts} >= $starts ? $st : undef;
        }) || mem_stats($s->{sock});
        is($st->{lru_crawler_starts}, $starts,
            "$name: $secs s later the crawler's own run number $starts");
    }
}

# a class whose items expire within the minute is crawled again 5 s after
{
    my $srv = new_memcached('-m 64');
    my $sock = $srv->sock;
    SKIP: {
        skip 'no debugtime (not a debug build)', 1 unless $srv->has_debugtime;
        wait_until(10, sub {
            my $st = mem_stats($sock);
            return ($st->{lru_crawler_starts} // 0) >= 1
                && !$st->{lru_crawler_running};
        });
        my $v = 'v' x 100;
        send_sync($sock, join '',
            map { "set t$_ 0 100 100 noreply\r\n$v\r\n" } 1 .. 100);
        $srv->debugtime(70);
        wait_until(10, sub { mem_stats($sock)->{lru_crawler_starts} >= 2 });
        my $st = wait_until(15, sub {
            my $st = mem_stats($sock);
            return $st->{lru_crawler_starts} >= 3 ? $st : undef;
        }) || mem_stats($sock);
        cmp_ok($st->{lru_crawler_starts}, '>=', 3,
            'items expiring within the minute: the next run 5 s later');
    }
}

for my $s (@started) {
    wait_until(10, sub { !mem_stats($s->{sock})->{lru_crawler_running} });
    my $before = mem_stats($s->{sock})->{lru_crawler_starts};
    reply_is(send_recv($s->{sock}, "lru_crawler metadump all\r\n"),
        "END\r\n", "$s->{name}: an empty cache's metadump");
    is(mem_stats($s->{sock})->{lru_crawler_starts}, $before + 1,
        "$s->{name}: a metadump counts as a crawler start");
}

for my $s (servers_with_stock('-m 64 -o no_lru_maintainer')) {
    is(mem_stats($s->{sock})->{lru_crawler_starts}, 0,
        "$s->{name}: no maintainer, no crawl of its own");
}

# ---- HOT, COLD, WARM and the moves between them ----
my $N = 100;
for my $s (servers_with_stock('-m 64')) {
    my ($name, $sock) = ($s->{name}, $s->{sock});
    set_keys($sock, 'k', 1, $N);
    my $c = wait_until(10, sub {
        my $c = class_stats($sock, 4);
        return ($c->{number_cold} // 0) == $N ? $c : undef;
    }) || class_stats($sock, 4);
    is_deeply([@$c{qw(number number_hot number_warm number_cold)}],
        [$N, 0, 0, $N], "$name: the maintainer moved every new key to COLD");
    is($c->{moves_to_cold}, $N, "$name: moves_to_cold counts them");
    cmp_ok($c->{age}, '>=', 1, "$name: age is COLD's tail's");

    # keys read twice become WARM
    get_keys($sock, 'k', 1, 10) for 1 .. 2;
    $c = wait_until(10, sub {
        my $c = class_stats($sock, 4);
        return ($c->{number_warm} // 0) == 10 ? $c : undef;
    }) || class_stats($sock, 4);
    is_deeply([@$c{qw(number_hot number_warm number_cold)}], [0, 10, $N - 10],
        "$name: the ten keys read twice are WARM");
    is($c->{moves_to_warm}, 10, "$name: moves_to_warm counts them");
    cmp_ok($c->{hits_to_cold}, '>=', 10,
        "$name: the first reads hit COLD ($c->{hits_to_cold})");
    is($c->{hits_to_hot} + $c->{hits_to_warm} + $c->{hits_to_cold}, 20,
        "$name: hits_to_* add up to the class's hits");
    is($c->{hits_to_temp}, 0, "$name: no temporary LRU, no hits to it");
    my $st = mem_stats($sock);
    is_deeply([@$st{qw(moves_to_cold moves_to_warm)}], [$N, 10],
        "$name: stats sums the classes' moves");

    # new keys are HOT while they are younger than hot_max_factor times
    # COLD's tail age (made long here, so that no clock tick moves them)
    reply_is(send_recv($sock, "lru tune 20 40 1000 2\r\n"), "OK\r\n",
        "$name: lru tune");
    set_keys($sock, 'n', 1, 5);
    $c = class_stats($sock, 4);
    is_deeply([@$c{qw(number_hot number_warm number_cold)}],
        [5, 10, $N - 10], "$name: new keys are HOT");
    get_keys($sock, 'n', 1, 1);
    is(class_stats($sock, 4)->{hits_to_hot}, 1, "$name: a hit to HOT");
    send_recv($sock, "delete n1\r\n");
    reply_is(send_recv($sock, "lru tune 20 40 0.2 2\r\n"), "OK\r\n",
        "$name: lru tune back");
    $c = wait_until(10, sub {
        my $c = class_stats($sock, 4);
        return ($c->{number_hot} // 1) == 0 ? $c : undef;
    }) || class_stats($sock, 4);
    is_deeply([@$c{qw(number_hot number_cold moves_to_cold)}],
        [0, $N - 10 + 4, $N + 4],
        "$name: back to a fifth of COLD's age: HOT went to COLD");

    reply_is(send_recv($sock, "stats reset\r\n"), "RESET\r\n",
        "$name: stats reset");
    $c = class_stats($sock, 4);
    is_deeply([@$c{qw(moves_to_cold moves_to_warm moves_within_lru
        hits_to_hot hits_to_warm hits_to_cold)}], [0, 0, 0, 0, 0, 0],
        "$name: stats reset clears the moves and the hits");
}

# ---- eviction: victims leave from COLD ----
for my $s (servers_with_stock('-m 2')) {
    my ($name, $sock) = ($s->{name}, $s->{sock});
    # about three times what 2 MB of 100-byte values holds
    set_keys($sock, "e$_:", 1, 2000) for 1 .. 20;
    my $c = class_stats($sock, 4);
    cmp_ok($c->{evicted}, '>', 0, "$name: the class evicts");
    cmp_ok($c->{moves_to_cold}, '>=', $c->{evicted},
        "$name: every victim was moved to COLD "
        . "($c->{moves_to_cold} >= $c->{evicted})");
    $c = wait_until(10, sub {
        my $c = class_stats($sock, 4);
        return $c->{number_hot} * 5 <= $c->{number} ? $c : undef;
    }) || class_stats($sock, 4);
    cmp_ok($c->{number_hot} * 5, '<=', $c->{number},
        "$name: HOT keeps to hot_lru_pct of the class");
}

# ---- the fields memcached lists, in its order ----
sub field_names {
    my ($st) = @_;
    return map { /^STAT (\S+)/ ? $1 : () } split /\r\n/, $st->{_raw};
}

SKIP: {
    skip 'no stock memcached to compare with', 3 unless $have_stock;
    my %only_here = map { $_ => 1 } qw(slab_reassign_busy_aborts server
        tiercached_version);
    my @s = servers_with_stock('-m 64 -o temporary_ttl=30');
    for my $s (@s) {
        set_keys($s->{sock}, 'f', 1, 20);
        get_keys($s->{sock}, 'f', 1, 5);
    }
    my ($ours, $theirs) = map { $_->{sock} } @s;
    is_deeply([grep { !$only_here{$_} } field_names(mem_stats($ours))],
        [field_names(mem_stats($theirs))],
        'stats: memcached\'s fields in its order (ours documented after)');
    is_deeply([field_names(mem_stats($ours, 'items'))],
        [field_names(mem_stats($theirs, 'items'))],
        'stats items: the same fields in the same order');
    # extstore's lines (Debian builds it in) and ours aside
    is_deeply(
        [grep { !/^(?:nvm_|tier_|dram_node)/ }
            field_names(mem_stats($ours, 'settings'))],
        [grep { !/^ext_/ } field_names(mem_stats($theirs, 'settings'))],
        'stats settings: memcached\'s fields in its order');
}

done_testing();
