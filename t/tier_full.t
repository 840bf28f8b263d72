#!/usr/bin/perl
# tier_full.t: a full cache (doc/tiering.md "Replacement", "Stats").  When both
# zones are full the N-zone evicts: n_evictions rise, evictions =
# d_evictions + n_evictions, curr_items + evictions = keys stored, the
# newest keys are all there, every hit is exact and the server keeps
# serving (hmcached and tier_policy=nvm).  Under -M nothing may be evicted:
# a full cache answers "SERVER_ERROR out of memory storing object", every
# key acknowledged STORED reads back exactly, and after deletes the cache
# stores again.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

srand($ENV{TIER_SEED} // 13);

my $VLEN = 8000;

# store $n keys "$prefix$i" of $VLEN bytes (or random sizes when
# $VLEN is a code ref); returns (sock, { key => [flags, value] }, stored)
sub store_many {
    my ($srv, $n, $prefix, $len, %o) = @_;
    my $s = $o{sock} || $srv->sock;
    my %kv;
    my ($stored, @errors) = (0);
    for my $i (1 .. $n) {
        my $k = "$prefix$i";
        my $l = ref $len ? $len->() : $len;
        my $v = random_bytes($l);
        my $f = int rand 65536;
        my $r = send_recv($s, "set $k $f 0 $l\r\n$v\r\n");
        if ($r eq "STORED\r\n") {
            $kv{$k} = [$f, $v];
            $stored++;
        }
        else {
            push @errors, $r;
            last if $o{stop_after_errors} && @errors >= $o{stop_after_errors};
        }
    }
    return ($s, \%kv, $stored, \@errors);
}

# read every key: (hits, misses, wrong)
sub check_all {
    my ($s, $kv) = @_;
    my ($hit, $miss, $wrong) = (0, 0, 0);
    for my $k (sort keys %$kv) {
        my ($f, $v) = @{ $kv->{$k} };
        my $r = send_recv($s, "get $k\r\n", timeout => 10);
        if ($r eq "END\r\n") {
            $miss++;
        }
        elsif ($r eq "VALUE $k $f " . length($v) . "\r\n$v\r\nEND\r\n") {
            $hit++;
        }
        else {
            diag("$k: " . escape_bytes($r, 200)) if $wrong++ < 3;
        }
    }
    return ($hit, $miss, $wrong);
}

for my $policy (qw(hmcached nvm)) {
    my $srv = new_memcached(
        "-m 2 -I 64k -t 1 -o nvm_size=4m,tier_policy=$policy");
    my ($s, $kv, $stored) = store_many($srv, 1500, 'f', $VLEN);
    is($stored, 1500, "$policy: 1500 sets of $VLEN bytes all STORED");
    my $t = $srv->tier_stats;
    my $st = $srv->stats;
    cmp_ok($t->{n_evictions} // 0, '>', 0, "$policy: N-zone full: n_evictions");
    is(($t->{d_evictions} // 0) + ($t->{n_evictions} // 0), $st->{evictions},
        "$policy: evictions = d_evictions + n_evictions");
    is($st->{curr_items} + $st->{evictions}, 1500,
        "$policy: curr_items + evictions = keys stored");
    is(($t->{d_items} // 0) + ($t->{n_items} // 0), $st->{curr_items},
        "$policy: d_items + n_items = curr_items");
    cmp_ok($t->{n_zone_used} // 0, '<=', $t->{n_zone_limit} // -1,
        "$policy: n_zone_used <= n_zone_limit");
    cmp_ok($t->{n_items} // 0, '<=', int(($t->{n_zone_limit} // 0) / $VLEN),
        "$policy: n_items fit in the N-zone");
    if ($policy eq 'nvm') {
        is($t->{d_items}, 0, 'nvm: nothing in D even when N is full');
        is($t->{d_evictions}, 0, 'nvm: no D eviction');
    }
    else {
        cmp_ok($t->{d_items} // 0, '>', 0, 'hmcached: D still holds items');
    }
    my ($hit, $miss, $wrong) = check_all($s, $kv);
    is($wrong, 0, "$policy: every hit exact");
    is($miss, $st->{evictions}, "$policy: misses = evictions");
    my $newest = 0;
    for my $i (1401 .. 1500) {
        my $r = send_recv($s, "get f$i\r\n");
        $newest++ if $r =~ /^VALUE /;
    }
    is($newest, 100, "$policy: the 100 newest keys are all there");
    # more, with random sizes (other classes) on the full cache
    my ($s2, $kv2, $stored2) = store_many($srv, 800, 'r',
        sub { 100 + int rand 20000 }, sock => $s);
    is($stored2, 800, "$policy: 800 more sets of random sizes STORED");
    my ($h2, $m2, $w2) = check_all($s, $kv2);
    is($w2, 0, "$policy: random-size hits exact");
    cmp_ok($h2, '>', 0, "$policy: random-size keys cached");
    my $st2 = $srv->stats;
    is($st2->{curr_items} + $st2->{evictions}, 2300,
        "$policy: curr_items + evictions = 2300 after the second round");
    reply_is(send_recv($s, "version\r\n") =~ /^VERSION / ? "ok" : "no", 'ok',
        "$policy: server answers");
    ok($srv->alive, "$policy: server alive");
    $srv->stop;
}

# -M: refuse instead of evicting
{
    my $srv = new_memcached('-m 2 -I 64k -t 1 -M -o nvm_size=4m');
    my ($s, $kv, $stored, $errors) = store_many($srv, 2000, 'm', $VLEN,
        stop_after_errors => 20);
    ok(@$errors > 0, "-M: the cache filled up after $stored sets");
    my %kinds;
    $kinds{$_}++ for @$errors;
    is_deeply([keys %kinds],
        ["SERVER_ERROR out of memory storing object\r\n"],
        '-M: the refusal is SERVER_ERROR out of memory storing object')
        or diag(join '', map { escape_bytes($_) } keys %kinds);
    cmp_ok($stored, '>', int(2 * 1024 * 1024 / 8256),
        '-M: more stored than the D-zone alone holds');
    my $t = $srv->tier_stats;
    my $st = $srv->stats;
    cmp_ok($t->{n_items} // 0, '>', 0, '-M: the N-zone was used first');
    is($st->{evictions}, 0, '-M: no eviction');
    is(($t->{d_evictions} // 0) + ($t->{n_evictions} // 0), 0,
        '-M: no zone eviction');
    is($st->{curr_items}, $stored, '-M: curr_items = sets acknowledged');
    my ($hit, $miss, $wrong) = check_all($s, $kv);
    is($miss, 0, '-M: nothing acknowledged was lost');
    is($wrong, 0, '-M: every value exact');
    reply_is(send_recv($s, "get m1 m2\r\n") =~ /^VALUE m1 / ? 'ok' : 'no',
        'ok', '-M: connection usable after the refusals');
    # free room and store again
    my $del = 0;
    for my $k ((sort keys %$kv)[0 .. 9]) {
        $del++ if send_recv($s, "delete $k\r\n") eq "DELETED\r\n";
        delete $kv->{$k};
    }
    is($del, 10, '-M: 10 deletes');
    my $v = random_bytes($VLEN);
    reply_is(send_recv($s, "set again 5 0 $VLEN\r\n$v\r\n"), "STORED\r\n",
        '-M: a set after deletes is stored');
    mem_get_is({ sock => $s, flags => 5 }, 'again', $v, '-M: and reads back');
    ($hit, $miss, $wrong) = check_all($s, $kv);
    is($miss + $wrong, 0, '-M: the other keys are still all there');
    ok($srv->alive, '-M: server alive');
    $srv->stop;
}

done_testing();
