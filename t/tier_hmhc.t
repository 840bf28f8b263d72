#!/usr/bin/perl
# tier_hmhc.t: tier_policy=hmhc, HM-HC (doc/tiering.md "HM-HC"): the
# D-zone's victims are the lowest of hits / seconds in D among a sample,
# and they are demoted to the N-zone.  With a 2 MB D-zone, an 8 MB N-zone
# and 8000-byte values:
#   - stats tier and stats settings name the policy and show the sampler;
#     without an N-zone the policy is refused;
#   - of three keys stored before a fill that overflows D, the one read
#     often and recently stays in D, while one read often but idle for a
#     long time and one read once both go to N when promotions of the
#     fill need D chunks (under hmcached's MQ the idle one, high in the
#     queues, would outlive the fill's items read five times); every
#     value reads back intact.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

srand($ENV{TIER_SEED} // 13);

my $VLEN = 8000;
my $BASE = '-m 2 -I 64k -t 1 -o nvm_size=8m,tier_policy=hmhc';

sub set_ok {
    my ($s, $k, $v) = @_;
    return send_recv($s, "set $k 0 0 " . length($v) . "\r\n$v\r\n")
        eq "STORED\r\n";
}

sub read_times {
    my ($s, $k, $v, $n) = @_;
    my $ok = 0;
    for (1 .. $n) {
        $ok++ if send_recv($s, "get $k\r\n")
            eq "VALUE $k 0 " . length($v) . "\r\n$v\r\nEND\r\n";
    }
    return $ok;
}

# ------------------------------------------------------------- options
{
    my $srv = new_memcached($BASE);
    my $t = $srv->tier_stats;
    is($t->{tier_policy}, 'hmhc', 'stats tier: tier_policy hmhc');
    is($srv->stats('settings')->{tier_policy}, 'hmhc',
        'stats settings: tier_policy hmhc');
    is($t->{hmhc_sample_size}, 64, 'stats tier: hmhc_sample_size 64');
    is($t->{hmhc_victims}, 0, 'no victim before D fills');
    $srv->stop;
    my ($code, $out) = run_binary(server_bin(),
        ['-u', 'nobody', '-p', '0', '-o', 'tier_policy=hmhc'], 10);
    isnt($code, 0, 'hmhc without an N-zone is refused');
    like($out, qr/needs an N-zone/, '... saying so');
}

# ------------------------------------------------- the hyperbolic rule
# New keys go to D only while it has a free chunk (tier_placement
# dram_first), so D's victims are made by promotions: the fill's keys that
# landed in N are read past tier_threshold, and each promotion demotes the
# lowest-priority item of a sample.
SKIP: {
    my $srv = new_memcached($BASE);
    skip 'needs the debug build (debugtime moves the server clock)', 13
        unless $srv->has_debugtime;
    my $s = $srv->sock;
    my %v = map { $_ => random_bytes($VLEN) } qw(stale hot rare);

    ok(set_ok($s, 'stale', $v{stale}), 'stale stored');
    is(read_times($s, 'stale', $v{stale}, 20), 20, 'stale read 20 times');
    $srv->debugtime(100);
    ok(set_ok($s, 'hot', $v{hot}), 'hot stored');
    is(read_times($s, 'hot', $v{hot}, 200), 200, 'hot read 200 times');
    ok(set_ok($s, 'rare', $v{rare}), 'rare stored');
    is(read_times($s, 'rare', $v{rare}, 1), 1, 'rare read once');

    my $n = 400;
    my @fill = map { "f$_" } 1 .. $n;
    my ($stored, $reads) = (0, 0);
    for my $k (@fill) {
        $v{$k} = random_bytes($VLEN);
        $stored++ if set_ok($s, $k, $v{$k});
    }
    is($stored, $n, "$n fill items stored, D full");
    $reads += read_times($s, $_, $v{$_}, 2) for @fill;
    # ~10 s on: stale 21 hits / ~110 s (0.19 a second), rare 2 / ~10 s
    # (0.2), the fill's D items 6 / ~10 s (0.6) once read three more
    # times below, hot 201 / ~10 s (20).  hmcached's MQ would demote the
    # fill's D items (counter 6) before stale (counter 21).
    $srv->debugtime(10);
    $reads += read_times($s, $_, $v{$_}, 3) for @fill;
    is($reads, 5 * $n, 'every fill item read 5 times');
    ok(wait_until(30, sub { $srv->tier_stats->{hmhc_victims} >= 100 }),
        'promotions of the fill made 100 D victims')
        or diag(explain($srv->tier_stats));
    cmp_ok($srv->tier_stats->{demotions}, '>=', 100,
        '... demoted to the N-zone');

    is($srv->zone_of('hot', $s), 'D', 'hot (201 hits in ~10 s) stays in D');
    is($srv->zone_of('stale', $s), 'N',
        'stale (21 hits in ~110 s) was demoted');
    is($srv->zone_of('rare', $s), 'N', 'rare (2 hits in ~10 s) was demoted');

    my $bad = 0;
    for my $k (sort keys %v) {
        $bad++ unless read_times($s, $k, $v{$k}, 1) == 1;
    }
    is($bad, 0, 'every value reads back intact (D + N hold them all)');
    $srv->stop;
}

done_testing();
