#!/usr/bin/perl
# tier_duallru.t: tier_policy=duallru, Fogcached's Dual-LRU (doc/tiering.md
# "Dual-LRU"), mostly with a 2 MB D-zone, an 8 MB N-zone and 8000-byte
# values:
#   demotion  - filling D sends COLD tails through Move to N into the
#               N-zone's COLD segment: demotions rise, dlru_to_move_n
#               rises, nothing is evicted while N has room, every value
#               reads back intact, segment sizes add up to the zones'
#               item counts, HOT and WARM keep to their shares;
#   promotion - an N item of COLD needs Fetched, Active (which moves it to
#               WARM and clears Active), Active again and Promote: three
#               reads leave it in N, the fourth makes the tier thread move
#               it through Move to D into D (promotions +1), after which it
#               is served from D with its value intact; a key read twice
#               stays in N;
#   eviction  - with N full too, N's COLD tails leave the cache
#               (n_evictions) and the lists stay consistent under a mixed
#               workload of every storage command checked against a model;
#   lines     - NVM line counts follow the design (links and Active/
#               Promote flags in NVM, Fetched in DRAM): a store into N
#               writes more lines than the same store under hmcached (its
#               LRU link), the first read writes nothing, the reads that
#               set Active and Promote in HOT write exactly one line each,
#               a further read writes nothing, a COLD item read twice moves
#               to WARM (link writes); hmcached's N reads never write;
#   options   - the policy shows in stats tier and stats settings, needs an
#               N-zone.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use MemcachedTest;

srand($ENV{TIER_SEED} // 23);

my $VLEN = 8000;
# one worker: a `get` and the `stats` after it are served in order
my $BASE = '-m 2 -I 64k -t 1 -o nvm_size=8m,tier_policy=duallru';

sub get_value {
    my ($s, $key) = @_;
    my $r = send_recv($s, "get $key\r\n", timeout => 10);
    return undef unless $r =~ /^VALUE \S+ \d+ (\d+)\r\n/;
    my $len = $1;
    return substr($r, length($&), $len);
}

sub wait_for {
    my ($cond, $secs) = @_;
    my $end = time + ($secs // 5);
    while (time < $end) {
        return 1 if $cond->();
        sleep 0.05;
    }
    return $cond->();
}

sub fill {
    my ($srv, $n, $prefix) = @_;
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

# the class holding the 8000-byte items: the one with items in either zone
sub busy_class {
    my ($srv) = @_;
    my $c = $srv->tier_classes;
    my ($id) = sort { ($c->{$b}{d_items} + $c->{$b}{n_items})
        <=> ($c->{$a}{d_items} + $c->{$a}{n_items}) }
        grep { /^\d+$/ } keys %$c;
    return $c->{$id};
}

# ------------------------------------------------------------- options
{
    my $srv = new_memcached($BASE);
    my $t = $srv->tier_stats;
    is($t->{tier_policy}, 'duallru', 'stats tier: tier_policy duallru');
    is($srv->stats('settings')->{tier_policy}, 'duallru',
        'stats settings: tier_policy duallru');
    for my $k (qw(move_to_n_len move_to_d_len dlru_segment_moves
            dlru_to_move_n dlru_to_move_d)) {
        ok(defined $t->{$k}, "stats tier has $k");
    }
    $srv->stop;
    my ($code, $out) = run_binary(server_bin(),
        ['-u', 'nobody', '-p', '0', '-o', 'tier_policy=duallru'], 10);
    isnt($code, 0, 'duallru without an N-zone is refused');
    like($out, qr/needs an N-zone/, '... saying so');
}

# ------------------------------------------------- demotion, promotion
{
    my $srv = new_memcached($BASE);
    my ($s, $v) = fill($srv, 600, 'p');
    ok(wait_for(sub { $srv->tier_stats->{move_to_n_len} == 0 }),
        'Move to N drained');
    my $t = $srv->tier_stats;
    cmp_ok($t->{demotions}, '>', 100, 'demotions rose while D filled');
    cmp_ok($t->{dlru_to_move_n}, '>', 0,
        'COLD tails went through Move to N ahead of demand');
    cmp_ok($t->{n_items}, '>', 100, 'COLD victims are in N');
    is($t->{d_items} + $t->{n_items}, 600, 'every item is in one zone');
    is($t->{d_evictions} + $t->{n_evictions}, 0,
        'nothing evicted while N has room');
    my $c;
    ok(wait_for(sub {
            $c = busy_class($srv);
            $c->{d_hot} + $c->{d_warm} + $c->{d_cold} + $c->{d_move_to_n}
                == $c->{d_items};
        }), 'D segment sizes add up to d_items');
    ok(wait_for(sub {
            $c = busy_class($srv);
            $c->{n_hot} + $c->{n_warm} + $c->{n_cold} + $c->{n_move_to_d}
                == $c->{n_items};
        }), 'N segment sizes add up to n_items');
    is($c->{n_cold}, $c->{n_items}, 'demoted items sit in N COLD');
    ok(wait_for(sub {
            my $x = busy_class($srv);
            $x->{d_hot} * 100 <= $x->{d_items} * 20 + 100;
        }), 'D HOT kept near its 20% share')
        or diag("d_hot $c->{d_hot} of $c->{d_items}");

    my $bad = 0;
    for my $k (sort keys %$v) {
        my $got = get_value($s, $k);
        $bad++ unless defined $got && $got eq $v->{$k};
    }
    is($bad, 0, 'every value reads back intact from either zone');

    # every key was read once (Fetched); find two keys still in N
    my @in_n;
    for my $i (1 .. 600) {
        my $k = "p$i";
        my $t0 = $srv->tier_stats;
        get_value($s, $k);      # the second reference: Active, to WARM
        my $t1 = $srv->tier_stats;
        push @in_n, $k if $t1->{n_hits} == $t0->{n_hits} + 1;
        last if @in_n == 2;
    }
    is(scalar @in_n, 2, 'found keys in N (read twice now)');
    my ($hot, $lukewarm) = @in_n;
    $c = busy_class($srv);
    cmp_ok($c->{n_warm}, '>=', 2, 'an Active read moved them to N WARM');
    sleep 0.3;
    my $p0 = $srv->tier_stats->{promotions};
    is(get_value($s, $hot), $v->{$hot}, 'third read: Active again');
    sleep 0.3;
    my $t1 = $srv->tier_stats;
    is($t1->{promotions}, $p0, 'three reads: still in N');
    is(get_value($s, $hot), $v->{$hot}, 'fourth read: Promote');
    ok(wait_for(sub { $srv->tier_stats->{promotions} == $p0 + 1 }),
        'the tier thread promoted it through Move to D');
    my $t2 = $srv->tier_stats;
    cmp_ok($t2->{dlru_to_move_d}, '>', $t1->{dlru_to_move_d},
        'it went through Move to D');
    is($t2->{move_to_d_len}, 0, 'Move to D drained');
    is($srv->zone_of($hot, $s), 'D', 'the promoted key is served from D');
    is(get_value($s, $hot), $v->{$hot}, 'its value is intact');
    is($srv->zone_of($lukewarm, $s), 'N',
        'a key read only twice (then once more) stays in N');
    $srv->stop;
}

# --------------------------------------------- N full: mixed workload
{
    my $srv = new_memcached('-m 2 -I 64k -t 2 '
        . '-o nvm_size=2m,tier_policy=duallru');
    my $s = $srv->sock;
    my %model;
    my ($wrong, $ops) = (0, 0);
    my @keys = map { "m$_" } 1 .. 800;
    for my $round (1 .. 3000) {
        my $k = $keys[int rand @keys];
        my $op = int rand 10;
        $ops++;
        if ($op < 3 || !exists $model{$k}) {
            my $len = 7000 + int rand 1000;
            my $val = random_bytes($len, 'abcdefgh');
            my $r = send_recv($s, "set $k 0 0 $len\r\n$val\r\n");
            $wrong++ unless $r eq "STORED\r\n";
            $model{$k} = $val;
        }
        elsif ($op < 6) {
            my $got = get_value($s, $k);
            if (defined $got) {
                $wrong++ unless $got eq $model{$k};
            } else {
                delete $model{$k};      # evicted
            }
        }
        elsif ($op == 6) {
            my $r = send_recv($s, "append $k 0 0 3\r\n+++\r\n");
            if ($r eq "STORED\r\n") {
                $model{$k} .= '+++';
            } elsif ($r eq "NOT_STORED\r\n") {
                delete $model{$k};
            } else {
                $wrong++;
            }
        }
        elsif ($op == 7) {
            my $r = send_recv($s, "delete $k\r\n");
            $wrong++ unless $r eq "DELETED\r\n" || $r eq "NOT_FOUND\r\n";
            delete $model{$k};
        }
        elsif ($op == 8) {
            my $r = send_recv($s, "touch $k 1000\r\n");
            delete $model{$k} if $r eq "NOT_FOUND\r\n";
            $wrong++ unless $r eq "TOUCHED\r\n" || $r eq "NOT_FOUND\r\n";
        }
        else {
            my $r = send_recv($s, "set c$k 0 0 1\r\n5\r\n");
            $r .= send_recv($s, "incr c$k 7\r\n");
            $wrong++ unless $r eq "STORED\r\n12\r\n";
        }
    }
    is($wrong, 0, "$ops mixed commands answered as the model says");
    my $t = $srv->tier_stats;
    cmp_ok($t->{n_evictions}, '>', 0, 'N COLD tails left the cache');
    cmp_ok($t->{demotions}, '>', 0, 'D COLD tails went to N');
    # the tier thread may be between the two counts: ask until it is not
    my @sums;
    my $balanced = wait_for(sub {
        my $c = $srv->tier_classes;
        @sums = (0, 0, 0, 0);
        for my $id (grep { /^\d+$/ } keys %$c) {
            $sums[0] += $c->{$id}{"d_$_"} // 0
                for qw(hot warm cold move_to_n);
            $sums[1] += $c->{$id}{"n_$_"} // 0
                for qw(hot warm cold move_to_d);
            $sums[2] += $c->{$id}{d_items};
            $sums[3] += $c->{$id}{n_items};
        }
        $sums[0] == $sums[2] && $sums[1] == $sums[3];
    });
    ok($balanced, 'segments add up to d_items and n_items')
        or diag("D $sums[0]/$sums[2] N $sums[1]/$sums[3]");
    my $bad = 0;
    for my $k (keys %model) {
        my $got = get_value($s, $k);
        $bad++ if defined $got && $got ne $model{$k};
    }
    is($bad, 0, 'no key reads back a wrong value');
    ok($srv->alive, 'server alive');
    $srv->stop;
}

# --------------------------------------------------------- line counts
{
    my $opts = '-m 64 -t 1 -o nvm_size=8m,tier_placement=nvm,'
        . 'no_lru_crawler';
    my $srv = new_memcached("$opts,tier_policy=duallru");
    my $ref = new_memcached("$opts,tier_policy=hmcached,tier_threshold=256");
    my $delta = sub {
        my ($sv, $code) = @_;
        my $a = $sv->tier_stats;
        $code->();
        my $b = $sv->tier_stats;
        return ($b->{nvm_lines_read} - $a->{nvm_lines_read},
            $b->{nvm_lines_written} - $a->{nvm_lines_written});
    };
    my $val = random_bytes(300, 'xyz');
    my %w;
    for my $sv ($srv, $ref) {
        my $s = $sv->sock;
        send_recv($s, "set f$_ 0 0 300\r\n$val\r\n") for 1 .. 20;
        (undef, $w{$sv}) = $delta->($sv, sub {
            send_recv($s, "set k 0 0 300\r\n$val\r\n");
        });
    }
    cmp_ok($w{$srv}, '>', $w{$ref},
        'a store into N writes its LRU link too (more lines than hmcached)');
    my $s = $srv->sock;
    # the maintenance passes HOT's oldest on to COLD: 4 of 21 stay in HOT
    ok(wait_for(sub { busy_class($srv)->{n_hot} == 4 }),
        'N HOT keeps its 20% share');
    my ($r, $w) = $delta->($srv, sub { get_value($s, 'k') });
    cmp_ok($r, '>', 0, 'first read of an N item reads its lines');
    is($w, 0, 'first read writes nothing (Fetched is in DRAM)');
    ($r, $w) = $delta->($srv, sub { get_value($s, 'k') });
    is($w, 1, 'second read, in HOT: one line written (Active, in the '
        . "item's NVM header)");
    ($r, $w) = $delta->($srv, sub { get_value($s, 'k') });
    is($w, 1, 'third read: one line written (Promote)');
    ($r, $w) = $delta->($srv, sub { get_value($s, 'k') });
    is($w, 0, 'fourth read: nothing left to set, nothing written');
    ($r, $w) = $delta->($srv, sub { get_value($s, 'f1') });
    is($w, 0, 'a COLD item read once: nothing written');
    ($r, $w) = $delta->($srv, sub { get_value($s, 'f1') });
    cmp_ok($w, '>=', 1, 'read again it moves COLD -> WARM: link writes');
    is(busy_class($srv)->{n_warm}, 1, '... and is in N WARM');
    my ($dr, $dw) = $delta->($ref, sub {
        my $rs = $ref->sock;
        get_value($rs, 'k') for 1 .. 3;
    });
    cmp_ok($dr, '>', 0, 'hmcached: N reads read lines');
    is($dw, 0, 'hmcached: N reads never write');
    $srv->stop;
    $ref->stop;
}

done_testing();
