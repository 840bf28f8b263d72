#!/usr/bin/perl
# stats_zones.t: memcached's stats describe the whole cache when there are
# two zones (doc/tiering.md "Stats with two zones").  A server with a small
# D-zone (-m 4, which the classes' first pages overrun) and a larger N-zone
# is filled past both, then: bytes <= total_malloced <= limit_maxbytes;
# limit_maxbytes, total_malloced, bytes and curr_items are the sums of
# `stats tier`'s d_ and n_ figures; `stats slabs` per class adds up the
# zones of `stats tier classes`; `stats items` numbers add up to
# curr_items and their hot/warm/cold split to number; every ratio a
# memcached dashboard computes lies in 0..1.  Debian's memcached-tool
# (the installed copy, run as it is) prints a sane `display` and `stats`.
# Without an N-zone limit_maxbytes stays -m.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $MB = 1024 * 1024;
my $TOOL = '/usr/share/memcached/scripts/memcached-tool';
# seven slab classes, so that their first D pages pass -m 4
my @SIZES = (40, 300, 1500, 6000, 20000, 90000, 300000);

# Store $n keys cycling through @SIZES, 40 to a round trip; returns how
# many were STORED.
sub fill {
    my ($s, $n) = @_;
    my ($stored, $batch) = (0, '');
    for my $i (1 .. $n) {
        my $len = $SIZES[$i % @SIZES];
        $batch .= "set z$i 0 0 $len\r\n" . ('v' x $len) . "\r\n";
        next unless $i % 40 == 0 || $i == $n;
        my $r = send_sync($s, $batch, timeout => 20);
        $stored += () = $r =~ /^STORED\r$/mg;
        $batch = '';
    }
    return $stored;
}

# { name => { field => value } } from "STAT $prefix<name>:<field> <n>"
sub by_class {
    my ($flat, $prefix) = @_;
    my %c;
    for my $k (keys %$flat) {
        $c{$1}{$2} = $flat->{$k} if $k =~ /^\Q$prefix\E(\d+):(\w+)$/;
    }
    return \%c;
}

# All the stats a dashboard reads, taken while nothing moves: the tier
# thread may still finish promotions, so the snapshot is retaken until
# `stats tier`'s gauges are the same before and after it.
sub snapshot {
    my ($srv) = @_;
    my @keys = qw(d_items n_items d_zone_used n_zone_used promotions
        demotions d_bytes n_bytes);
    my $snap;
    wait_until(10, sub {
        my $before = $srv->tier_stats;
        $snap = {
            stats => $srv->stats,
            slabs => $srv->stats('slabs'),
            items => $srv->stats('items'),
            tier => $srv->tier_stats,
            classes => $srv->tier_classes,
        };
        my $after = $srv->tier_stats;
        return !grep { ($before->{$_} // '') ne ($after->{$_} // '') }
            @keys;
    }, 0.2);
    return $snap;
}

sub ratio_ok {
    my ($name, $num, $den) = @_;
    ok(defined $num && defined $den && $den > 0 && $num >= 0
        && $num <= $den, "$name within 0..100 %")
        or diag(sprintf '%s = %s / %s', $name, $num // 'undef',
            $den // 'undef');
}

# Fill a server under $policy and check its stats; returns the server
# and what the checks learnt (for memcached-tool's turn).
sub check_cache {
    my ($policy) = @_;
    my $srv = new_memcached(
        "-m 4 -t 2 -o nvm_size=32m,tier_policy=$policy");
    my $s = $srv->sock;
    my $n = 900;
    is(fill($s, $n), $n, "$n sets of 40 B .. 300 KB stored");
    # some hits (D and N keys) and misses for the hit ratios
    my $got = 0;
    for my $i (1 .. 60) {
        $got++ if send_recv($s, "get z$i\r\n", timeout => 10) ne "END\r\n";
    }
    send_recv($s, "get nothere$_\r\n") for 1 .. 10;

    my $snap = snapshot($srv);
    my ($st, $sl, $si, $t, $tc) = @$snap{qw(stats slabs items tier classes)};
    my $slc = by_class($sl, '');
    my $sic = by_class($si, 'items:');

    note(sprintf 'D %d items in %d bytes of %d; N %d items in %d of %d',
        $t->{d_items}, $t->{d_zone_used}, $t->{d_zone_limit}, $t->{n_items},
        $t->{n_zone_used}, $t->{n_zone_limit});
    cmp_ok($t->{d_items}, '>', 0, 'items in the D-zone');
    cmp_ok($t->{n_items}, '>', 0, 'items in the N-zone');
    is($t->{n_zone_used}, $t->{n_zone_limit}, 'the N-zone is full: every page '
        . 'given to a class');
    cmp_ok($st->{evictions}, '>', 0, 'the cache is full: it evicts');
    cmp_ok($t->{d_zone_used}, '>', 4 * $MB,
        'the classes\' first D pages took the D-zone past -m');

    # ---- the whole cache in memcached's fields
    is($st->{limit_maxbytes}, $t->{d_zone_limit} + $t->{n_zone_limit},
        'limit_maxbytes = d_zone_limit + n_zone_limit');
    is($sl->{total_malloced}, $t->{d_zone_used} + $t->{n_zone_used},
        'stats slabs total_malloced = d_zone_used + n_zone_used');
    is($st->{curr_items}, $t->{d_items} + $t->{n_items},
        'curr_items = d_items + n_items');
    is($st->{bytes}, $t->{d_bytes} + $t->{n_bytes},
        'bytes = d_bytes + n_bytes');
    cmp_ok($st->{bytes}, '<=', $sl->{total_malloced},
        'bytes <= total_malloced');
    cmp_ok($st->{bytes}, '<=', $st->{limit_maxbytes},
        'bytes <= limit_maxbytes');
    cmp_ok($sl->{total_malloced}, '<=', $st->{limit_maxbytes},
        'total_malloced <= limit_maxbytes');
    is($t->{d_zone_limit}, $t->{d_zone_used},
        'past -m, d_zone_limit is what the D-zone holds (no pool page)');
    cmp_ok($t->{n_zone_limit}, '<=', 32 * $MB, 'n_zone_limit <= nvm_size');

    # ---- stats slabs and stats items, class by class, against stats tier
    my @cls = sort { $a <=> $b }
        grep { $tc->{$_}{d_pages} || $tc->{$_}{n_pages} }
        grep { /^\d+$/ } keys %$tc;
    is_deeply([sort { $a <=> $b } keys %$slc], \@cls,
        'stats slabs lists the classes with pages in either zone');
    is($sl->{active_slabs}, scalar @cls, 'active_slabs counts them');
    my (%sum, @bad);
    for my $c (@cls) {
        my ($l, $i, $z) = ($slc->{$c}, $sic->{$c} // {}, $tc->{$c});
        my $check = sub {
            my ($what, $ok) = @_;
            push @bad, "class $c: $what" unless $ok;
        };
        $check->('total_pages = d_pages + n_pages',
            $l->{total_pages} == $z->{d_pages} + $z->{n_pages});
        $check->('total_chunks = chunks_per_page * total_pages',
            $l->{total_chunks} == $l->{chunks_per_page} * $l->{total_pages});
        $check->('used_chunks = d_used_chunks + n_used_chunks',
            $l->{used_chunks} == $z->{d_used_chunks} + $z->{n_used_chunks});
        $check->('free_chunks = d_free_chunks + n_free_chunks',
            $l->{free_chunks} == $z->{d_free_chunks} + $z->{n_free_chunks});
        $check->('used + free = total',
            $l->{used_chunks} + $l->{free_chunks} == $l->{total_chunks});
        my $number = $i->{number} // 0;
        $check->('number = d_items + n_items',
            $number == $z->{d_items} + $z->{n_items});
        $check->('number <= used_chunks', $number <= $l->{used_chunks});
        $check->('number_hot + number_warm + number_cold = number',
            !$number || $i->{number_hot} + $i->{number_warm}
                + $i->{number_cold} == $number);
        $check->('mem_requested = d_bytes + n_bytes',
            ($i->{mem_requested} // 0) == $z->{d_bytes} + $z->{n_bytes});
        $check->('mem_requested <= used_chunks * chunk_size',
            ($i->{mem_requested} // 0)
                <= $l->{used_chunks} * $l->{chunk_size});
        $sum{$_} += $i->{$_} // 0 for qw(number mem_requested evicted);
        $sum{pages} += $l->{total_pages};
        for my $r (qw(used_chunks free_chunks)) {
            $check->("$r / total_chunks in 0..1",
                $l->{$r} >= 0 && $l->{$r} <= $l->{total_chunks});
        }
    }
    is_deeply(\@bad, [], 'every class: stats slabs and stats items agree with '
        . 'stats tier classes');
    is($sum{number}, $st->{curr_items}, 'stats items numbers add up to '
        . 'curr_items');
    is($sum{mem_requested}, $st->{bytes}, 'mem_requested adds up to bytes');
    is($sum{evicted}, $st->{evictions}, 'evicted adds up to evictions');
    is($sum{pages} * 1024 * 1024, $sl->{total_malloced},
        'total_pages add up to total_malloced (1 MB pages)');

    # ---- the ratios dashboards compute
    ratio_ok('bytes / limit_maxbytes', $st->{bytes}, $st->{limit_maxbytes});
    ratio_ok('total_malloced / limit_maxbytes', $sl->{total_malloced},
        $st->{limit_maxbytes});
    ratio_ok('get_hits / cmd_get', $st->{get_hits}, $st->{cmd_get});
    ratio_ok('get_misses / cmd_get', $st->{get_misses}, $st->{cmd_get});
    ratio_ok('curr_connections / max_connections', $st->{curr_connections},
        $st->{max_connections});
    ratio_ok('d_zone_used / d_zone_limit', $t->{d_zone_used},
        $t->{d_zone_limit});
    ratio_ok('n_zone_used / n_zone_limit', $t->{n_zone_used},
        $t->{n_zone_limit});
    ratio_ok('d_bytes / d_zone_used', $t->{d_bytes}, $t->{d_zone_used});
    ratio_ok('n_bytes / n_zone_used', $t->{n_bytes}, $t->{n_zone_used});
    ratio_ok('n_items / curr_items', $t->{n_items}, $st->{curr_items});
    is($st->{get_hits}, $got, 'get_hits counts the hits of both zones');
    return ($srv, \@cls, $slc, $sic);
}

subtest 'tier_policy=duallru' => sub {
    my ($srv) = check_cache('duallru');
    $srv->stop;
};

my ($srv, @cls, $slc, $sic);
subtest 'tier_policy=hmcached' => sub {
    my $cls;
    ($srv, $cls, $slc, $sic) = check_cache('hmcached');
    @cls = @$cls;
};

# ---- memcached-tool, Debian's copy, as data
{
    SKIP: {
        skip "no $TOOL (Debian's memcached package)", 9 unless -r $TOOL;
        my $addr = '127.0.0.1:' . $srv->port;
        my $display = `perl $TOOL $addr display 2>&1`;
        is($?, 0, 'memcached-tool display exits 0') or diag($display);
        my (%rows, @odd);
        for my $line (split /\n/, $display) {
            next if $line =~ /^\s+#\s+Item_Size/;
            # class, Item_Size, Max_age, Pages, Count, Full?, Evicted,
            # Evict_Time, OOM
            if ($line =~ /^\s*(\d+)\s+(\d+(?:\.\d+)?[BK])\s+(-?\d+)s\s+
                    (-?\d+)\s+(-?\d+)\s+(yes|no)\s+
                    (-?\d+)\s+(-?\d+)\s+(-?\d+)\s*$/x) {
                $rows{$1} = { pages => $4, count => $5, age => $3,
                              nums => [$3, $4, $5, $7, $8, $9] };
            }
            else {
                push @odd, $line;
            }
        }
        is_deeply(\@odd, [],
            'display: every line is the header or a class row');
        is_deeply([sort { $a <=> $b } keys %rows], \@cls,
            'display: one row per class with pages');
        my @with_items = grep { ($sic->{$_}{number} // 0) > 0 } @cls;
        is_deeply([grep { $rows{$_}{count} > 0 }
                   sort { $a <=> $b } keys %rows],
            \@with_items, 'display: a row with a count for every class '
            . 'that has items');
        my @count_off = grep {
            $rows{$_}{count} != ($sic->{$_}{number} // 0) } keys %rows;
        is_deeply(\@count_off, [],
            'display: Count is stats items number (both zones)');
        my @neg = grep { grep { $_ < 0 } @{ $rows{$_}{nums} } } keys %rows;
        is_deeply(\@neg, [], 'display: no negative figure');
        my @pages_off = grep { $rows{$_}{pages} != $slc->{$_}{total_pages} }
            keys %rows;
        is_deeply(\@pages_off, [],
            'display: Pages are stats slabs total_pages');

        my $stats = `perl $TOOL $addr stats 2>&1`;
        my %f = $stats =~ /^\s*(\w+)\s+(\S+)\s*$/mg;
        ok(defined $f{limit_maxbytes} && defined $f{bytes},
            'memcached-tool stats: bytes and limit_maxbytes') or diag($stats);
        my @neg_f = grep { $f{$_} =~ /^-\d/ } keys %f;
        ok(!@neg_f && ($f{bytes} // 1) <= ($f{limit_maxbytes} // 0)
            && ($f{curr_items} // -1) >= 0,
            'memcached-tool stats: no negative figure, bytes within the '
            . 'limit') or diag("negative: @neg_f");
    }
    $srv->stop;
}

# ---- no N-zone: memcached's meaning, -m even when first pages pass it
{
    my $m = new_memcached('-m 2');
    my $ms = $m->sock;
    is(fill($ms, 21), 21, 'no N-zone: sets in seven classes');
    my $gs = $m->stats;
    my $ms_sl = $m->stats('slabs');
    my $mt = $m->tier_stats;
    is($gs->{limit_maxbytes}, 2 * $MB, 'no N-zone: limit_maxbytes is -m');
    is($ms_sl->{total_malloced}, $mt->{d_zone_used},
        'no N-zone: total_malloced is the D pages');
    is($mt->{d_zone_limit},
        $mt->{d_zone_used} > 2 * $MB ? $mt->{d_zone_used} : 2 * $MB,
        'no N-zone: stats tier d_zone_limit is what the D-zone may hold');
    $m->stop;
}

done_testing();
