#!/usr/bin/perl
# tier_policies.t: each tier_policy does what its name says
# (doc/tiering.md "Policies" and "Hotness and migration"), with
# a 2 MB D-zone, an 8 MB N-zone and 8000-byte values:
#   dram     - the N-zone is never used (n_items 0, no N hit, no demotion)
#   nvm      - every item in N (d_items 0, no D hit, no promotion even for
#              a hot key)
#   uni      - new items split between the zones in proportion to their
#              capacities; no promotion or demotion, even for a hot key
#   tlc      - an N hit is promoted on its first access: promotions rise
#              by one per distinct N key read, which is then served from D
#              (within the request when D has a free chunk, else through
#              the tier thread's queue)
#   hotter   - an N key is promoted when its counter outranks D's coldest
#              items, when D has memory no class holds, or when its class
#              has free D chunks (a good share of a page); a steady
#              workload moves nothing afterwards; its decay epoch is
#              32 requests per D chunk (tier_decay_period=auto)
#   hmcached - an N key read fewer times than tier_threshold stays in N;
#              it is promoted (or queued) by the read where its counter
#              crosses the threshold, within that request under
#              tier_promote=sync when D has a free chunk; with a short
#              tier_decay_period the counter of a key read only once
#              every few epochs decays and the key is not promoted
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

srand($ENV{TIER_SEED} // 11);

my $VLEN = 8000;
my $BASE = "-m 2 -I 64k -t 1 -o nvm_size=8m,tier_promote=sync";

sub fill {
    my ($srv, $n, $prefix) = @_;
    $prefix //= 'p';
    my $s = $srv->sock;
    my %v;
    my $ok = 0;
    for my $i (1 .. $n) {
        my $k = "$prefix$i";
        $v{$k} = random_bytes($VLEN);
        $ok++ if send_recv($s, "set $k $i 0 $VLEN\r\n$v{$k}\r\n")
            eq "STORED\r\n";
    }
    is($ok, $n, "$n sets stored");
    return ($s, \%v);
}

sub hits {
    my ($t0, $t1) = @_;
    return (($t1->{d_hits} // 0) - ($t0->{d_hits} // 0),
        ($t1->{n_hits} // 0) - ($t0->{n_hits} // 0));
}

# ---------------------------------------------------------------- dram
{
    my $srv = new_memcached("$BASE,tier_policy=dram");
    my ($s, $v) = fill($srv, 600);
    my $t0 = $srv->tier_stats;
    is($t0->{tier_policy}, 'dram', 'dram: policy');
    my $miss = 0;
    for my $i (1 .. 600) {
        $miss++ if send_recv($s, "get p$i\r\n") eq "END\r\n";
    }
    my $t = $srv->tier_stats;
    is($t->{n_items}, 0, 'dram: n_items stays 0');
    is($t->{n_hits}, 0, 'dram: no N hit');
    is($t->{demotions}, 0, 'dram: no demotion');
    is($t->{promotions}, 0, 'dram: no promotion');
    is($t->{n_zone_used}, 0, 'dram: n_zone_used 0');
    cmp_ok($t->{d_evictions} // 0, '>', 0, 'dram: D evictions instead');
    cmp_ok($miss, '>', 0, 'dram: the overflow was evicted');
    my ($dh) = hits($t0, $t);
    is($dh, 600 - $miss, 'dram: every hit from D');
    $srv->stop;
}

# ---------------------------------------------------------------- nvm
{
    my $srv = new_memcached("$BASE,tier_policy=nvm");
    my ($s, $v) = fill($srv, 600);
    my $t0 = $srv->tier_stats;
    is($t0->{tier_policy}, 'nvm', 'nvm: policy');
    is($t0->{d_items}, 0, 'nvm: d_items stays 0');
    is($t0->{n_items}, 600, 'nvm: all 600 items in N');
    for (1 .. 50) {
        send_recv($s, "get p1\r\n");
    }
    my $bad = 0;
    for my $i (1 .. 600) {
        $bad++ unless send_recv($s, "get p$i\r\n")
            eq "VALUE p$i $i $VLEN\r\n$v->{\"p$i\"}\r\nEND\r\n";
    }
    is($bad, 0, 'nvm: every key reads back exactly');
    my $t = $srv->tier_stats;
    my ($dh, $nh) = hits($t0, $t);
    is($dh, 0, 'nvm: no D hit');
    is($nh, 650, 'nvm: every hit from N');
    is($t->{promotions}, 0, 'nvm: a key read 50 times is not promoted');
    is($t->{d_items}, 0, 'nvm: d_items still 0');
    $srv->stop;
}

# ---------------------------------------------------------------- uni
{
    my $srv = new_memcached("$BASE,tier_policy=uni");
    my ($s, $v) = fill($srv, 300);
    my $t = $srv->tier_stats;
    is($t->{tier_policy}, 'uni', 'uni: policy');
    my $d = $t->{d_items} // 0;
    my $n = $t->{n_items} // 0;
    my $dl = $t->{d_zone_limit} // 0;
    my $nl = $t->{n_zone_limit} // 0;
    is($d + $n, 300, 'uni: all 300 items resident');
    SKIP: {
        skip 'uni: no zone limits in stats tier', 1 unless $dl && $nl;
        my $want = $dl / ($dl + $nl);
        my $got = $d + $n ? $d / ($d + $n) : -1;
        ok(abs($got - $want) <= 0.1, sprintf(
            'uni: D share %.2f within 0.1 of capacity share %.2f (%d D, %d N)',
            $got, $want, $d, $n));
    }
    # a hot key in N is not promoted
    my $hot;
    for my $i (1 .. 300) {
        my $z = $srv->zone_of("p$i", $s);
        if ($z eq 'N') {
            $hot = "p$i";
            last;
        }
    }
    ok($hot, 'uni: found a key in N');
    SKIP: {
        skip 'uni: no N key', 3 unless $hot;
        send_recv($s, "get $hot\r\n") for 1 .. 50;
        is($srv->zone_of($hot, $s), 'N', "uni: $hot still in N after 51 reads");
        my $t2 = $srv->tier_stats;
        is($t2->{promotions}, 0, 'uni: no promotion');
        is($t2->{demotions}, 0, 'uni: no demotion');
    }
    $srv->stop;
}

# ---------------------------------------------------------------- tlc
# tier_promote=sync promotes within the request only into a free D chunk;
# with D full the promotion is queued to the tier thread (so a GET never
# waits on eviction work), hence the polling below
{
    my $srv = new_memcached("$BASE,tier_policy=tlc");
    my ($s, $v) = fill($srv, 600);
    my $t0 = $srv->tier_stats;
    is($t0->{tier_policy}, 'tlc', 'tlc: policy');
    cmp_ok($t0->{n_items} // 0, '>', 0, 'tlc: overflow in N');
    # read the 40 newest keys once each (tier_placement=dram_first: the
    # keys stored after D filled are in N): every one found in N is promoted
    my ($nreads, $wrong) = (0, 0);
    my @promoted;
    for my $i (561 .. 600) {
        my $a = $srv->tier_stats;
        my $r = send_recv($s, "get p$i\r\n");
        my $b = $srv->tier_stats;
        $wrong++ unless $r eq "VALUE p$i $i $VLEN\r\n$v->{\"p$i\"}\r\nEND\r\n";
        my ($dh, $nh) = hits($a, $b);
        if ($nh == 1) {
            $nreads++;
            push @promoted, "p$i";
        }
    }
    is($wrong, 0, 'tlc: values exact');
    cmp_ok($nreads, '>', 10, "tlc: $nreads of the 40 newest keys were in N");
    my $t1;
    wait_until(5, sub {
        $t1 = $srv->tier_stats;
        ($t1->{promotions} // 0) - ($t0->{promotions} // 0) >= $nreads;
    });
    is(($t1->{promotions} // 0) - ($t0->{promotions} // 0), $nreads,
        'tlc: promotions rose by one per distinct N key read');
    is(($t1->{promotions_dropped} // 0) - ($t0->{promotions_dropped} // 0), 0,
        'tlc: no promotion dropped');
    is(($t1->{demotions} // 0) - ($t0->{demotions} // 0), $nreads,
        'tlc: as many D victims demoted (D full)');
    # read them again: all from D now
    my $a = $srv->tier_stats;
    send_recv($s, "get $_\r\n") for @promoted;
    my $b = $srv->tier_stats;
    my ($dh, $nh) = hits($a, $b);
    is($dh, scalar @promoted, 'tlc: promoted keys now served by D');
    is($nh, 0, 'tlc: none of them from N');
    is($b->{promotions}, $a->{promotions}, 'tlc: D hits promote nothing');
    is($b->{d_items} + $b->{n_items}, $srv->stats->{curr_items},
        'tlc: one copy per item (exclusive zones)');
    $srv->stop;
}

# tlc with room in D (tier_placement=nvm): the N hit itself promotes
{
    my $srv = new_memcached("$BASE,tier_policy=tlc,tier_placement=nvm");
    my ($s, $v) = fill($srv, 50);
    my $t0 = $srv->tier_stats;
    is($t0->{d_items}, 0, 'tlc, placement nvm: new keys in N');
    my $bad = 0;
    for my $i (1 .. 20) {
        my $a = $srv->tier_stats;
        send_recv($s, "get p$i\r\n");
        my $b = $srv->tier_stats;
        my ($dh, $nh) = hits($a, $b);
        $bad++ unless $nh == 1 && $b->{promotions} == $a->{promotions} + 1;
    }
    is($bad, 0, 'tlc, D free: each first N hit promotes at once (sync)');
    my $a = $srv->tier_stats;
    send_recv($s, "get p$_\r\n") for 1 .. 20;
    my ($dh, $nh) = hits($a, $srv->tier_stats);
    is($dh, 20, 'tlc, D free: then served by D');
    $srv->stop;
}

# ---------------------------------------------------------------- hotter
# D full of keys never read since their store (the coldest MQ queue); the
# 40 newest keys are in N.  Two reads put each in a higher queue than D's
# coldest items, so each is promoted and one never-read D item demoted;
# later reads are all D hits and move nothing.
{
    my $srv = new_memcached("$BASE,tier_policy=hotter");
    my ($s, $v) = fill($srv, 600);
    my $t0 = $srv->tier_stats;
    is($t0->{tier_policy}, 'hotter', 'hotter: policy');
    my @newest = map { "p$_" } grep { $_ > 600 - $t0->{n_items} } 561 .. 600;
    my $wrong = 0;
    my $read = sub {
        for my $k (@newest) {
            (my $i = $k) =~ s/^p//;
            $wrong++ unless send_recv($s, "get $k\r\n")
                eq "VALUE $k $i $VLEN\r\n$v->{$k}\r\nEND\r\n";
        }
    };
    $read->() for 1 .. 2;
    my $t2;
    wait_until(5, sub {
        $t2 = $srv->tier_stats;
        $t2->{promotions} - $t0->{promotions} >= @newest;
    });
    is($t2->{promotions} - $t0->{promotions}, scalar @newest,
        'hotter: two reads promote each N key');
    is($t2->{demotions} - $t0->{demotions}, scalar @newest,
        'hotter: as many never-read D items demoted');
    $read->() for 1 .. 3;
    my $t3 = $srv->tier_stats;
    my ($dh, $nh) = hits($t2, $t3);
    is("$dh $nh", 3 * @newest . ' 0', 'hotter: then served by D only');
    is($t3->{promotions} - $t2->{promotions}
        + $t3->{demotions} - $t2->{demotions}, 0,
        'hotter: and nothing moves in a steady workload');
    is($wrong, 0, 'hotter: values exact');
    $srv->stop;
}

# hotter while the D-zone has memory no class holds yet: new keys in N
# (tier_placement=nvm); two reads promote every key, though each
# promoted item lands in the same queue as the ones before it, and
# nothing is demoted.
{
    my $srv = new_memcached("$BASE,tier_policy=hotter,tier_placement=nvm");
    my ($s, $v) = fill($srv, 40);
    my $t0 = $srv->tier_stats;
    is($t0->{d_items}, 0, 'hotter, D with room: new keys in N');
    for (1 .. 2) {
        send_recv($s, "get p$_\r\n") for 1 .. 40;
    }
    my $t1;
    wait_until(5, sub {
        $t1 = $srv->tier_stats;
        $t1->{promotions} - $t0->{promotions} >= 40;
    });
    is($t1->{promotions} - $t0->{promotions}, 40,
        'hotter, D with room: two reads promote every key');
    is($t1->{demotions} - $t0->{demotions}, 0,
        'hotter, D with room: nothing demoted');
    mem_get_is({ sock => $s, flags => 17 }, 'p17', $v->{p17},
        'hotter, D with room: value exact in D');
    $srv->stop;
}

# hotter once a class has free D chunks (here: deletes free most of a
# page; in service, a page the reassignment moved in): an N key read once
# is promoted into them though D's coldest items are hotter, and nothing
# is demoted for it; with the class full, the same read promotes nothing.
{
    my $srv = new_memcached("$BASE,tier_policy=hotter");
    my ($s, $v) = fill($srv, 600);
    my $t0 = $srv->tier_stats;
    my $nd = $t0->{d_items};
    cmp_ok($nd, '>=', 200, "hotter, class room: $nd keys in D");
    for (1 .. 8) {
        send_recv($s, "get p$_\r\n") for 1 .. $nd;
    }
    my $t1 = $srv->tier_stats;
    is($t1->{n_hits} - $t0->{n_hits}, 0, 'hotter, class room: D keys made hot');
    send_recv($s, "get p$_\r\n") for 561 .. 580;
    my $t2 = $srv->tier_stats;
    is($t2->{promotions} - $t1->{promotions}, 0,
        'hotter, class room: a full class takes no key read once');
    my $gone = 0;
    for (1 .. 100) {
        $gone++ if send_recv($s, "delete p$_\r\n") eq "DELETED\r\n";
    }
    is($gone, 100, 'hotter, class room: 100 D keys deleted');
    # the tier thread's tick notes the room: until it has, probes read
    # the 20 keys read above in turn, so that no probe's own counter
    # gets near D's coldest queue (16 accesses) within the wait
    my ($probe, $turn) = (0, 0);
    wait_until(10, sub {
        send_recv($s, 'get p' . (561 + $turn++ % 20) . "\r\n");
        $probe = $srv->tier_stats->{promotions} - $t2->{promotions};
    });
    is($probe, 1, 'hotter, class room: a probe key promoted');
    my $t3a = $srv->tier_stats;
    send_recv($s, "get p$_\r\n") for 581 .. 600;
    my $t3 = $srv->tier_stats;
    is($t3->{promotions} - $t3a->{promotions}, 20,
        'hotter, class room: then each key read once promoted');
    is($t3->{demotions} - $t2->{demotions}, 0,
        'hotter, class room: nothing demoted for them');
    mem_get_is({ sock => $s, flags => 590 }, 'p590', $v->{p590},
        'hotter, class room: value exact in D');
    $srv->stop;
}

# The decay epoch, tier_decay_period not given: hotter's is auto, 32
# requests for each chunk the D-zone's pages hold and never under
# 1,000,000, so it grows as stores fill D pages; hmcached's stays at the
# fixed 1,000,000 however full D is.
sub d_zone_chunks {
    my ($srv) = @_;
    my $slabs = $srv->stats('slabs');
    my $tier = $srv->stats('tier classes');
    my $chunks = 0;
    for my $key (grep { /^\d+:d_pages$/ } keys %$tier) {
        my ($id) = $key =~ /^(\d+):/;
        $chunks += $tier->{$key} * $slabs->{"$id:chunks_per_page"};
    }
    return $chunks;
}

sub fill_small {
    my ($srv, $n) = @_;
    my $s = $srv->sock;
    for my $i (1 .. $n) {
        print $s sprintf("set small%06d 0 0 10 noreply\r\n0123456789\r\n",
            $i);
    }
    return send_recv($s, "version\r\n") =~ /^VERSION /;
}

my $DECAY_PER_D_CHUNK = 32;
for my $case (['hotter', 'auto'], ['hmcached', 1000000]) {
    my ($policy, $setting) = @$case;
    my $srv = new_memcached("-m 64 -t 1 -o nvm_size=16m,tier_policy=$policy");
    is($srv->stats('settings')->{tier_decay_period}, $setting,
        "decay period, $policy: stats settings says $setting");
    is($srv->tier_stats->{decay_period_requests}, 1000000,
        "decay period, $policy: 1,000,000 requests with D empty");
    ok(fill_small($srv, 40000), "decay period, $policy: 40,000 small sets");
    my $chunks = d_zone_chunks($srv);
    cmp_ok($DECAY_PER_D_CHUNK * $chunks, '>', 1000000,
        "decay period, $policy: D pages hold $chunks chunks");
    my $want = $setting eq 'auto' ? $DECAY_PER_D_CHUNK * $chunks : $setting;
    my $got;
    wait_until(10, sub {
        $got = $srv->tier_stats->{decay_period_requests};
        return $got == $want;
    });
    is($got, $want, "decay period, $policy: now $want requests");
    $srv->stop;
}

# ---------------------------------------------------------------- hmcached
my $T = 8;
{
    my $srv = new_memcached("$BASE,tier_policy=hmcached,tier_threshold=$T");
    my ($s, $v) = fill($srv, 600);
    my $t0 = $srv->tier_stats;
    is($t0->{tier_policy}, 'hmcached', 'hmcached: policy');
    my $cls = $srv->tier_classes;
    my @thr = map { $cls->{$_}{threshold} }
        grep { /^\d+$/ && ($cls->{$_}{n_items} // 0) > 0 } keys %$cls;
    ok(@thr && !(grep { $_ != $T } @thr),
        "hmcached: class threshold = tier_threshold ($T)")
        or diag('thresholds: ' . join(',', map { $_ // 'undef' } @thr));
    my $key;
    for my $i (reverse 500 .. 600) {
        if ($srv->zone_of("p$i", $s) eq 'N') {
            $key = "p$i";
            last;
        }
    }
    ok($key, 'hmcached: found an N key');
    SKIP: {
        skip 'hmcached: no N key', 6 unless $key;
        # 1 read by zone_of, 2 more: 3 < T - 1
        my $a = $srv->tier_stats;
        send_recv($s, "get $key\r\n") for 1 .. 2;
        my $b = $srv->tier_stats;
        my ($dh, $nh) = hits($a, $b);
        is($nh, 2, "hmcached: $key read 3 times, still served by N");
        ok($b->{promotions} == $a->{promotions}
            && $b->{promotions_queued} == $a->{promotions_queued},
            "hmcached: 3 reads < threshold $T: not promoted nor queued");
        # keep reading until it is promoted or queued (D is full: a sync
        # promotion is queued), on the read where the counter crosses T
        my $reads = 3;
        my $crossed = 0;
        while ($reads < 4 * $T) {
            send_recv($s, "get $key\r\n");
            $reads++;
            my $c = $srv->tier_stats;
            if ($c->{promotions} > $a->{promotions}
                || $c->{promotions_queued} > $a->{promotions_queued}) {
                $crossed = 1;
                last;
            }
        }
        ok($crossed, "hmcached: promoted or queued after $reads reads");
        ok($reads >= $T - 1 && $reads <= $T + 2,
            "hmcached: at the read where the counter crosses $T "
            . "($reads reads, SET counted or not)");
        ok(wait_until(5, sub {
            $srv->tier_stats->{promotions} > $a->{promotions} }),
            'hmcached: promotion done within 5 s');
        is($srv->zone_of($key, $s), 'D', 'hmcached: then served by D');
    }
    $srv->stop;
}

# hmcached, sync, with free D chunks (tier_placement=nvm): the request that
# crosses the threshold promotes, nothing is queued
{
    my $srv = new_memcached(
        "$BASE,tier_policy=hmcached,tier_placement=nvm,tier_threshold=$T");
    my ($s, $v) = fill($srv, 50);
    my $a = $srv->tier_stats;
    is($a->{d_items}, 0, 'sync: new keys in N (placement nvm)');
    my $reads = 0;
    my $c;
    while ($reads < 4 * $T) {
        send_recv($s, "get p7\r\n");
        $reads++;
        $c = $srv->tier_stats;
        last if $c->{promotions} > $a->{promotions};
    }
    ok($reads >= $T - 1 && $reads <= $T + 2,
        "sync: promoted by the crossing read ($reads reads, threshold $T)");
    is($c->{promotions_queued}, $a->{promotions_queued}, 'sync: not queued');
    is($srv->zone_of('p7', $s), 'D', 'sync: p7 served by D at once');
    mem_get_is({ sock => $s, flags => 7 }, 'p7', $v->{p7},
        'sync: value exact after the move');
    $srv->stop;
}

# hmcached with async promotion: the request queues, the tier thread moves
{
    (my $base = $BASE) =~ s/tier_promote=sync/tier_promote=async/;
    my $srv = new_memcached("$base,tier_policy=hmcached,tier_threshold=4");
    my ($s, $v) = fill($srv, 600);
    my $a = $srv->tier_stats;
    is($a->{tier_promote}, 'async', 'async: tier_promote in stats tier');
    send_recv($s, "get p600\r\n") for 1 .. 12;
    my $ok = wait_until(5, sub {
        ($srv->tier_stats->{promotions} // 0) > ($a->{promotions} // 0);
    });
    ok($ok, 'async: a key read 12 times is promoted within 5 s');
    my $b = $srv->tier_stats;
    cmp_ok($b->{promotions_queued} // 0, '>', $a->{promotions_queued} // 0,
        'async: promotions_queued rose');
    ok(wait_until(3, sub { $srv->zone_of('p600', $s) eq 'D' }),
        'async: p600 served by D');
    mem_get_is({ sock => $s, flags => 600 }, 'p600', $v->{p600},
        'async: value exact after the move');
    $srv->stop;
}

# decay: with short epochs, reads spaced by several epochs never add up
{
    my $srv = new_memcached(
        "$BASE,tier_policy=hmcached,tier_threshold=4,tier_decay_period=50");
    my ($s, $v) = fill($srv, 600);
    my $d = 'p1';        # the oldest key: in D (dram_first)
    my $key = 'p599';    # stored after D filled: in N
    my $t0 = $srv->tier_stats;
    my $epochs_moved = 1;
    for my $round (1 .. 10) {
        my $e0 = $srv->tier_stats->{decay_epochs} // 0;
        send_recv($s, "get $d\r\n") for 1 .. 250;
        $epochs_moved = 0 unless wait_until(3, sub {
            ($srv->tier_stats->{decay_epochs} // 0) >= $e0 + 4;
        });
        last unless $epochs_moved;
        send_recv($s, "get $key\r\n");
    }
    ok($epochs_moved, 'decay: 250 requests pass at least 4 epochs of 50');
    my $t1 = $srv->tier_stats;
    ok($t1->{promotions} == $t0->{promotions}
        && $t1->{promotions_queued} == $t0->{promotions_queued},
        "decay: $key read 10 times, 4+ epochs apart: never promoted/queued");
    my ($dh, $nh) = hits($t0, $t1);
    is($nh, 10, "decay: all 10 reads of $key served by N");
    # the same reads back to back do promote it
    send_recv($s, "get $key\r\n") for 1 .. 10;
    ok(wait_until(5, sub {
        ($srv->tier_stats->{promotions} // 0) > ($t1->{promotions} // 0) }),
        "decay: 10 reads of $key back to back promote it");
    $srv->stop;
}

done_testing();
