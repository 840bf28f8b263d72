#!/usr/bin/perl
# tier_basic.t: the tiered engine's basic life cycle over the wire
# (doc/tiering.md).  With a tiny D-zone (-m 2 -I 64k) and a
# larger N-zone, filling the cache puts the overflow in the N-zone (d_items
# and n_items move; with the default tier_placement=dram_first new keys go
# to N once D has no free chunk); every stored key that was not evicted reads
# back with its exact value and flags, wherever it lives (random binary
# values of random sizes, random 32-bit flags); `stats` curr_items and
# `stats items` count both zones; a hot key in the N-zone is promoted
# (promotions rises, then it is served from the D-zone: d_hits grows while
# n_hits does not) and, the D-zone being full, a victim is demoted
# (demotions rise); an overwrite or delete of an N key leaves one copy.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

srand($ENV{TIER_SEED} // time);
note('seed: set TIER_SEED to repeat a run');

# hmcached's threshold (4 accesses): the reads that find a key's zone
# below must not promote it themselves, as under the default (hotter) two
# reads of an N key can
my $srv = new_memcached('-m 2 -I 64k -t 1 -o '
    . 'nvm_size=16m,tier_policy=hmcached');
my $s = $srv->sock;

my $t0 = $srv->tier_stats;
ok(defined $t0->{d_items}, 'stats tier answers')
    or diag('stats tier: ' . escape_bytes($t0->{_raw}));
is($t0->{tier_policy}, 'hmcached', 'policy is hmcached');
is($t0->{d_items} // -1, 0, 'no D items at start');
is($t0->{n_items} // -1, 0, 'no N items at start');

# 1500 keys: mostly 4000..8000 bytes (a few slab classes, about 9 MB:
# more than the D-zone can hold even with a page per class), some tiny
my $N = 1500;
my (%val, %flg);
my $stored = 0;
my @order;
for my $i (1 .. $N) {
    my $k = "key:$i";
    my $len = $i % 10 == 0 ? int rand 100 : 4000 + int rand 4001;
    $val{$k} = random_bytes($len);
    $flg{$k} = $i % 7 == 0 ? 4294967295 : int rand 4294967296;
    my $r = send_recv($s, "set $k $flg{$k} 0 $len\r\n$val{$k}\r\n",
        timeout => 10);
    $stored++ if $r eq "STORED\r\n";
    push @order, $k;
}
is($stored, $N, "$N sets answered STORED");

my $t1 = $srv->tier_stats;
my $st1 = $srv->stats;
cmp_ok($t1->{n_items} // 0, '>', 0, 'the N-zone holds items');
cmp_ok($t1->{d_items} // 0, '>', 0, 'the D-zone holds items');
cmp_ok($t1->{d_zone_used} // 0, '>', 0, 'd_zone_used > 0');
cmp_ok($t1->{n_zone_used} // 0, '>', 0, 'n_zone_used > 0');
cmp_ok($t1->{n_zone_used} // 0, '<=', $t1->{n_zone_limit} // -1,
    'n_zone_used <= n_zone_limit');
my $evicted = ($st1->{evictions} // 0);
my $zone_evicted = ($t1->{d_evictions} // 0) + ($t1->{n_evictions} // 0);
is($zone_evicted, $evicted,
    'evictions = d_evictions + n_evictions');
is($st1->{curr_items}, ($t1->{d_items} // 0) + ($t1->{n_items} // 0),
    'curr_items = d_items + n_items');
is($st1->{total_items}, $N, "total_items = $N");
is($st1->{curr_items} + $evicted, $N,
    'curr_items + evictions = keys stored (nothing silently lost)');
note("d_items=$t1->{d_items} n_items=$t1->{n_items} "
    . "demotions=$t1->{demotions} evictions=$evicted") if defined $t1->{d_items};

# every key reads back exactly (misses only for evicted keys)
my ($hits, $misses, $wrong) = (0, 0, 0);
my $t2a = $srv->tier_stats;
for my $k (@order) {
    my $r = send_recv($s, "get $k\r\n", timeout => 10);
    if ($r eq "END\r\n") {
        $misses++;
        next;
    }
    my $exp = "VALUE $k $flg{$k} " . length($val{$k})
        . "\r\n$val{$k}\r\nEND\r\n";
    if ($r eq $exp) {
        $hits++;
    }
    else {
        diag("$k: " . escape_bytes($r, 200)) if $wrong++ < 3;
    }
}
my $t2b = $srv->tier_stats;
is($wrong, 0, 'every hit has the exact value and flags');
cmp_ok($misses, '<=', $evicted, 'misses only for evicted keys');
is($hits + $misses, $N, 'every get answered');
my $dh = ($t2b->{d_hits} // 0) - ($t2a->{d_hits} // 0);
my $nh = ($t2b->{n_hits} // 0) - ($t2a->{n_hits} // 0);
is($dh + $nh, $hits, 'd_hits + n_hits rose by the number of hits');
cmp_ok($nh, '>', 0, 'some hits served by the N-zone');
cmp_ok($dh, '>', 0, 'some hits served by the D-zone');

# the same with multi-get, in batches of 50 keys, from both zones
{
    my $bad = 0;
    for (my $i = 0; $i < @order; $i += 50) {
        my @ks = @order[$i .. ($i + 49 > $#order ? $#order : $i + 49)];
        my $r = send_recv($s, 'get ' . join(' ', @ks) . "\r\n",
            timeout => 10);
        my %got;
        while ($r =~ /\GVALUE (\S+) (\d+) (\d+)\r\n/gc) {
            my ($k, $f, $l) = ($1, $2, $3);
            my $v = substr($r, pos($r), $l);
            pos($r) = pos($r) + $l + 2;
            $got{$k} = [$f, $v];
        }
        $bad++ unless substr($r, pos($r) // 0) eq "END\r\n";
        for my $k (keys %got) {
            $bad++ unless $got{$k}[0] == $flg{$k} && $got{$k}[1] eq $val{$k};
        }
    }
    is($bad, 0, 'multi-get over both zones returns exact values');
}

# a key in the N-zone: with tier_placement=dram_first the keys stored
# after the D-zone filled went to N, so look from the newest back
my $cold;
for my $k (reverse @order[-200 .. -1]) {
    next if $k =~ /:\d*0$/;    # skip the tiny ones (own class)
    my $z = $srv->zone_of($k, $s);
    if ($z eq 'N') {
        $cold = $k;
        last;
    }
}
ok($cold, 'found a key served by the N-zone') or diag('none of the '
    . 'newest 200 keys answered from N: '
    . escape_bytes($srv->tier_stats->{_raw}));

SKIP: {
    skip 'no N key found', 10 unless $cold;
    my $before = $srv->tier_stats;
    my $items_before = $srv->stats->{curr_items};
    # hit it repeatedly until promoted (async by default: the tier thread
    # may take a moment), at most 400 reads / 8 s
    my $reads = 0;
    my $promoted = wait_until(8, sub {
        send_recv($s, "get $cold\r\n");
        $reads++;
        return ($srv->tier_stats->{promotions} // 0)
            > ($before->{promotions} // 0) || $reads >= 400;
    }, 0.01);
    my $after = $srv->tier_stats;
    cmp_ok($after->{promotions} // 0, '>', $before->{promotions} // 0,
        "hot key $cold promoted after $reads reads");
    # wait until the key is the one served from D (the async promotion of
    # the key may complete just after the counter moved)
    my $z = wait_until(3, sub { $srv->zone_of($cold, $s) eq 'D' });
    ok($z, 'promoted key served by the D-zone');
    my $a = $srv->tier_stats;
    for (1 .. 20) {
        mem_get_is({ sock => $s, flags => $flg{$cold} }, $cold, $val{$cold},
            "promoted key reads back exactly ($_)") if $_ == 1;
        send_recv($s, "get $cold\r\n") if $_ > 1;
    }
    my $b = $srv->tier_stats;
    is(($b->{d_hits} // 0) - ($a->{d_hits} // 0), 20,
        'd_hits grows by one per read of the promoted key');
    is(($b->{n_hits} // 0) - ($a->{n_hits} // 0), 0,
        'n_hits does not grow while reading it');
    is($srv->stats->{curr_items}, $items_before,
        'curr_items unchanged by the promotion (one copy)');
    is(($b->{d_items} // 0) + ($b->{n_items} // 0), $items_before,
        'd_items + n_items still = curr_items');
    cmp_ok($b->{demotions} // 0, '>', $before->{demotions} // 0,
        'the promotion into the full D-zone demoted a victim to N');
    my $cs = $srv->tier_classes;
    my ($sum_p, $sum_d) = (0, 0);
    for my $c (grep { /^\d+$/ } keys %$cs) {
        $sum_p += $cs->{$c}{promotions} // 0;
        $sum_d += $cs->{$c}{demotions} // 0;
    }
    is($sum_p, $b->{promotions}, 'per-class promotions add up');
    is($sum_d, $b->{demotions}, 'per-class demotions add up');
}

# overwrite and delete of N keys keep one copy
{
    my @n;
    for my $k (reverse @order[-400 .. -1]) {
        next if $k =~ /:\d*0$/ || (defined $cold && $k eq $cold);
        push @n, $k if $srv->zone_of($k, $s) eq 'N';
        last if @n == 2;
    }
    SKIP: {
        skip 'fewer than two N keys found', 8 unless @n == 2;
        my ($ow, $del) = @n;
        my $items = $srv->stats->{curr_items};
        my $nv = random_bytes(5000);
        reply_is(send_recv($s, "set $ow 77 0 5000\r\n$nv\r\n"), "STORED\r\n",
            "overwrite of N key $ow");
        mem_get_is({ sock => $s, flags => 77 }, $ow, $nv,
            'overwritten N key reads the new value');
        is($srv->stats->{curr_items}, $items, 'overwrite: curr_items same');
        my $t = $srv->tier_stats;
        is($t->{d_items} + $t->{n_items}, $items,
            'overwrite: d_items + n_items same');
        reply_is(send_recv($s, "delete $del\r\n"), "DELETED\r\n",
            "delete of N key $del");
        mem_get_is($s, $del, undef, 'deleted N key is gone');
        is($srv->stats->{curr_items}, $items - 1, 'delete: curr_items - 1');
        my $t2 = $srv->tier_stats;
        is($t2->{d_items} + $t2->{n_items}, $items - 1,
            'delete: d_items + n_items - 1');
    }
}

# stats items counts both zones
{
    my $si = $srv->stats('items');
    my $sum = 0;
    $sum += $si->{$_} for grep { /^items:\d+:number$/ } keys %$si;
    is($sum, $srv->stats->{curr_items},
        'stats items numbers add up to curr_items (both zones)');
}

ok($srv->alive, 'server alive');
done_testing();
