#!/usr/bin/perl
# tier_stats.t: the tier statistics (doc/tiering.md "Stats").  `stats tier` has every documented name, also without an
# N-zone (the policy, and zeros for everything N); the per-class lines of
# `stats tier classes` exist for every class in use and add up to the
# totals; zone usage is whole pages; `stats settings` shows every tier
# option; `stats reset` zeroes the tier counters (totals and per class) and
# leaves the gauges; decay_epochs and threshold_adjustments advance with
# short tier_decay_period / tier_adjust_period.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

srand($ENV{TIER_SEED} // 17);

my @NAMES = qw(tier_policy d_zone_limit n_zone_limit d_zone_used n_zone_used
    d_items n_items d_hits n_hits promotions demotions d_evictions
    n_evictions nvm_lines_read nvm_lines_written index_bytes
    index_bytes_per_item decay_epochs reassign_moves nvm_backend
    nvm_granularity nvm_emulate_read_ns nvm_emulate_write_ns
    nvm_tsc_ticks_per_ns tier_placement tier_promote promotions_queued
    promotions_dropped threshold_adjustments);
my %TEXT = map { $_ => 1 }
    qw(tier_policy nvm_backend nvm_granularity tier_placement tier_promote);
my @CLASS = qw(d_pages n_pages d_items n_items threshold d_hits n_hits
    promotions demotions d_evictions n_evictions nvm_lines_read
    nvm_lines_written benefit);
# counters that `stats reset` zeroes
my @RESET = qw(d_hits n_hits promotions demotions d_evictions n_evictions
    nvm_lines_read nvm_lines_written promotions_queued promotions_dropped);
my @CLASS_RESET = qw(d_hits n_hits promotions demotions d_evictions
    n_evictions nvm_lines_read nvm_lines_written);
my @GAUGES = qw(d_zone_limit n_zone_limit d_zone_used n_zone_used d_items
    n_items index_bytes);
my @CLASS_GAUGES = qw(d_pages n_pages d_items n_items threshold);
my $NUM = qr/^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$/;

sub names_ok {
    my ($t, $label) = @_;
    my @missing = grep { !defined $t->{$_} } @NAMES;
    is_deeply(\@missing, [], "$label: every stats tier name present")
        or diag('stats tier: ' . escape_bytes($t->{_raw}));
    my @bad = grep { defined $t->{$_} && !$TEXT{$_} && $t->{$_} !~ $NUM }
        @NAMES;
    is_deeply(\@bad, [], "$label: numeric values are numbers");
    like($t->{_raw} // '', qr/END\r\n\z/, "$label: reply ends with END");
}

sub fill {
    my ($srv, $n, $len, $prefix) = @_;
    my $s = $srv->sock;
    my $ok = 0;
    for my $i (1 .. $n) {
        my $v = random_bytes($len);
        $ok++ if send_recv($s, "set $prefix$i 0 0 $len\r\n$v\r\n")
            eq "STORED\r\n";
    }
    return $ok;
}

# ---------------------------------------------------------------- no N-zone
{
    my $srv = new_memcached('-m 2 -I 64k -t 1');
    my $t = $srv->tier_stats;
    names_ok($t, 'no N-zone');
    is($t->{tier_policy}, $srv->stats('settings')->{tier_policy},
        'no N-zone: tier_policy as in stats settings');
    is(fill($srv, 300, 8000, 'k'), 300, 'no N-zone: 300 sets');
    my $s = $srv->sock;
    send_recv($s, "get k$_\r\n") for 1 .. 300;
    $t = $srv->tier_stats;
    for my $k (qw(n_zone_limit n_zone_used n_items n_hits promotions
            demotions n_evictions nvm_lines_read nvm_lines_written
            promotions_queued promotions_dropped)) {
        is($t->{$k}, 0, "no N-zone: $k = 0");
    }
    my $st = $srv->stats;
    is($t->{d_items}, $st->{curr_items}, 'no N-zone: d_items = curr_items');
    is($t->{d_hits}, $st->{get_hits}, 'no N-zone: d_hits = get_hits');
    is($t->{d_evictions}, $st->{evictions},
        'no N-zone: d_evictions = evictions');
    is($t->{d_zone_limit}, 2 * 1024 * 1024, 'no N-zone: d_zone_limit = -m');
    $srv->stop;
}

# ---------------------------------------------------------------- settings
{
    my $opts = 'nvm_size=6m,nvm_emulate=3:5,tier_policy=tlc,'
        . 'tier_placement=nvm,tier_promote=sync,tier_threshold=9,'
        . 'tier_adjust_period=777,tier_decay_period=8888,tier_mq_queues=5';
    my $srv = new_memcached("-m 2 -I 64k -t 1 -o $opts");
    my $st = $srv->stats('settings');
    my %want = (nvm_size => 6 * 1024 * 1024, nvm_emulate => '3:5',
        tier_policy => 'tlc', tier_placement => 'nvm', tier_promote => 'sync',
        tier_threshold => 9, tier_adjust_period => 777,
        tier_decay_period => 8888, tier_mq_queues => 5);
    for my $k (sort keys %want) {
        is($st->{$k}, $want{$k}, "stats settings $k");
    }
    for my $k (qw(nvm_path nvm_node dram_node)) {
        ok(defined $st->{$k}, "stats settings has $k");
    }
    is($st->{nvm_node_bound}, -1,
        'stats settings nvm_node_bound: -1 for an anonymous N-zone');
    my $t = $srv->tier_stats;
    names_ok($t, 'tlc server');
    is($t->{tier_policy}, 'tlc', 'stats tier tier_policy');
    is($t->{tier_placement}, 'nvm', 'stats tier tier_placement');
    is($t->{tier_promote}, 'sync', 'stats tier tier_promote');
    is($t->{nvm_emulate_read_ns}, 3, 'stats tier nvm_emulate_read_ns');
    is($t->{nvm_emulate_write_ns}, 5, 'stats tier nvm_emulate_write_ns');
    is($t->{n_zone_limit}, 5 * 1024 * 1024,
        'stats tier n_zone_limit: nvm_size less the metadata page');
    $srv->stop;
}

# ---------------------------------------------------------------- classes
my $srv = new_memcached('-m 2 -I 64k -t 1 -o nvm_size=8m,'
    . 'tier_policy=hmcached,tier_promote=sync,tier_threshold=4');
is(fill($srv, 600, 8000, 'b'), 600, '600 sets of 8000 bytes');
is(fill($srv, 200, 300, 's'), 200, '200 sets of 300 bytes');
my $s = $srv->sock;
send_recv($s, "get b600\r\n") for 1 .. 10;    # in N (dram_first): promoted
send_recv($s, "get b$_ s$_\r\n") for 1 .. 100;
# D is full, so the promotion goes through the tier thread's queue
wait_until(5, sub { ($srv->tier_stats->{promotions} // 0) > 0 });
my $t = $srv->tier_stats;
names_ok($t, 'hmcached server');
is($t->{nvm_backend}, 'anonymous', 'nvm_backend anonymous');
is($t->{nvm_granularity}, 'none', 'nvm_granularity none (not libpmem2)');
is($t->{nvm_emulate_read_ns}, 0, 'no emulation: read ns 0');
is($t->{nvm_emulate_write_ns}, 0, 'no emulation: write ns 0');
cmp_ok($t->{index_bytes} // 0, '>', 0, 'index_bytes > 0');
cmp_ok($t->{index_bytes_per_item} // 0, '>', 0, 'index_bytes_per_item > 0');
note("index_bytes=" . ($t->{index_bytes} // '?') . ' per item='
    . ($t->{index_bytes_per_item} // '?'));
cmp_ok($t->{promotions} // 0, '>', 0, 'a promotion happened');
cmp_ok($t->{demotions} // 0, '>', 0, 'demotions happened');

my $c = $srv->tier_classes;
my $si = $srv->stats('items');
my @used = sort { $a <=> $b } map { /^items:(\d+):number$/ ? $1 : () }
    keys %$si;
is(scalar @used, 2, 'two slab classes in use');
for my $cl (@used) {
    my @missing = grep { !defined $c->{$cl}{$_} } @CLASS;
    is_deeply(\@missing, [], "class $cl: every per-class name present")
        or diag('stats tier classes: ' . escape_bytes($c->{_raw}, 2000));
    my @bad = grep { defined $c->{$cl}{$_} && $c->{$cl}{$_} !~ $NUM } @CLASS;
    is_deeply(\@bad, [], "class $cl: values are numbers");
    my $thr = $c->{$cl}{threshold} // 0;
    ok($thr >= 1 && $thr <= 2**8, "class $cl: threshold $thr in [1, 2^Q]");
    is(($c->{$cl}{d_items} // 0) + ($c->{$cl}{n_items} // 0),
        $si->{"items:$cl:number"},
        "class $cl: d_items + n_items = stats items number");
}
like($c->{_raw} // '', qr/END\r\n\z/, 'stats tier classes ends with END');
my %sum;
for my $cl (grep { /^\d+$/ } keys %$c) {
    $sum{$_} += $c->{$cl}{$_} // 0 for @CLASS;
}
for my $k (qw(d_items n_items d_hits n_hits promotions demotions
        d_evictions n_evictions)) {
    is($sum{$k}, $t->{$k}, "per-class $k add up to the total");
}
for my $k (qw(nvm_lines_read nvm_lines_written)) {
    ok(($sum{$k} // 0) <= ($t->{$k} // -1) && ($sum{$k} // 0) > 0,
        "per-class $k > 0 and at most the total");
}
{
    my $st = $srv->stats('settings');
    my $page = $st->{item_size_max} > 1048576 ? $st->{item_size_max} : 1048576;
    is($t->{d_zone_used}, $sum{d_pages} * $page, 'd_zone_used = D pages');
    is($t->{n_zone_used}, $sum{n_pages} * $page, 'n_zone_used = N pages');
    # every class's first D page comes whatever -m says; past -m the
    # zone is full at what it holds (doc/tiering.md "Stats with two zones")
    my $m = 2 * 1024 * 1024;
    is($t->{d_zone_limit}, $t->{d_zone_used} > $m ? $t->{d_zone_used} : $m,
        'd_zone_limit = -m, or the D pages held when first pages passed it');
    cmp_ok($t->{d_zone_used}, '<=', $t->{d_zone_limit},
        'd_zone_used <= d_zone_limit');
    is($t->{n_zone_limit}, 7 * 1024 * 1024,
        'n_zone_limit = nvm_size less the metadata page (doc/restart.md)');
    my $gs = $srv->stats;
    is($gs->{curr_items}, $t->{d_items} + $t->{n_items},
        'stats curr_items = d_items + n_items');
    is($gs->{get_hits}, $t->{d_hits} + $t->{n_hits},
        'stats get_hits = d_hits + n_hits (gets only here)');
}

# ---------------------------------------------------------------- reset
{
    my $before = $srv->tier_stats;
    my $cb = $srv->tier_classes;
    reply_is(send_recv($s, "stats reset\r\n"), "RESET\r\n", 'stats reset');
    my $a = $srv->tier_stats;
    my $ca = $srv->tier_classes;
    for my $k (@RESET) {
        is($a->{$k}, 0, "stats reset zeroes $k (was "
            . ($before->{$k} // 'undef') . ')');
    }
    for my $k (@GAUGES) {
        is($a->{$k}, $before->{$k}, "stats reset keeps $k");
    }
    for my $cl (@used) {
        my @nz = grep { ($ca->{$cl}{$_} // -1) != 0 } @CLASS_RESET;
        is_deeply(\@nz, [], "class $cl: stats reset zeroes its counters");
        my @chg = grep { ($ca->{$cl}{$_} // -1) != ($cb->{$cl}{$_} // -2) }
            @CLASS_GAUGES;
        is_deeply(\@chg, [], "class $cl: stats reset keeps its gauges");
    }
    # counting resumes from zero: one hit in N
    my $nkey;
    for my $i (reverse 500 .. 599) {
        my $z = $srv->zone_of("b$i", $s);
        if ($z eq 'N') {
            $nkey = "b$i";
            last;
        }
    }
    ok($nkey, 'an N key after the reset');
    my $x = $srv->tier_stats;
    cmp_ok($x->{n_hits} // 0, '>=', 1, 'counting resumes after reset');
    cmp_ok($x->{nvm_lines_read} // 0, '>', 0,
        'nvm_lines_read counts again after reset');
    cmp_ok($x->{nvm_lines_read} // 0, '<', 10000,
        'nvm_lines_read small after reset (no stale count)');
}
$srv->stop;

# ---------------------------------------------------------------- periods
{
    my $p = new_memcached('-m 2 -I 64k -t 1 -o nvm_size=8m,'
        . 'tier_policy=hmcached,tier_promote=sync,'
        . 'tier_decay_period=100,tier_adjust_period=100');
    is(fill($p, 400, 8000, 'p'), 400, 'periods: 400 sets');
    my $ps = $p->sock;
    my $e0 = $p->tier_stats;
    for my $i (1 .. 1000) {
        send_recv($ps, 'get p' . (1 + $i % 400) . "\r\n");
    }
    my $ok = wait_until(3, sub {
        ($p->tier_stats->{decay_epochs} // 0) >= ($e0->{decay_epochs} // 0) + 5;
    });
    ok($ok, 'decay_epochs advances with tier_decay_period=100 ('
        . ($e0->{decay_epochs} // '?') . ' -> '
        . ($p->tier_stats->{decay_epochs} // '?') . ')');
    $ok = wait_until(3, sub {
        ($p->tier_stats->{threshold_adjustments} // 0)
            > ($e0->{threshold_adjustments} // 0);
    });
    ok($ok, 'threshold_adjustments advance with tier_adjust_period=100');
    my $pc = $p->tier_classes;
    my @out = grep { /^\d+$/ && defined $pc->{$_}{threshold}
        && ($pc->{$_}{threshold} < 1 || $pc->{$_}{threshold} > 256) }
        keys %$pc;
    is_deeply(\@out, [], 'thresholds stay within [1, 2^Q] while tuning');
    ok($p->alive, 'periods: alive');

    # after epochs have passed, `stats reset` zeroes the request counters
    # the epochs are measured in: epochs must restart, not run away
    reply_is(send_recv($ps, "stats reset\r\n"), "RESET\r\n",
        'periods: stats reset after epochs');
    my $r0 = $p->tier_stats->{decay_epochs} // 0;
    send_recv($ps, 'get p' . (1 + $_ % 400) . "\r\n") for 1 .. 350;
    $ok = wait_until(3, sub {
        ($p->tier_stats->{decay_epochs} // 0) >= $r0 + 1;
    });
    my $r1 = $p->tier_stats->{decay_epochs} // 0;
    # 350 requests at 50 per epoch after the reset: 7 epochs, give or take
    # the ones the tier thread had not walked yet when the reset came
    ok($ok && $r1 <= $r0 + 9, "epochs resume at the configured pace after "
        . "a reset ($r0 -> $r1 for 350 requests)");
    reply_is(send_recv($ps, "version\r\n"), "VERSION 1.6.18\r\n",
        'periods: answers after reset');

    my $q = new_memcached('-m 2 -I 64k -t 1 -o nvm_size=8m');
    is(fill($q, 100, 1000, 'q'), 100, 'default periods: 100 sets');
    my $qs = $q->sock;
    send_recv($qs, 'get q' . (1 + $_ % 100) . "\r\n") for 1 .. 500;
    my $qt = $q->tier_stats;
    is($qt->{threshold_adjustments}, 0,
        'default tier_adjust_period: no adjustment after 600 requests');
    is($qt->{decay_epochs}, 0,
        'default tier_decay_period: no decay epoch after 600 requests');
}

done_testing();
