#!/usr/bin/perl
# t/bench_generator.t - checks tcload's request-stream generator without a
# server (--dump-keys): YCSB zipfian frequencies, uniform/hotspot/latest,
# dataset value sizes, seed repeatability, CacheLib models (--model: the
# folded popularity law, GET and lone-GET shares, value and key sizes) and
# bad-setting rejection.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use MemcachedTest ();    # its watchdog, scaled for the build and the load

my $root = "$FindBin::Bin/..";
my $tc = "$root/bench/tcload";
system("make -s -C $root/bench >/dev/null") == 0 or die "make -C bench failed\n";
ok(-x $tc, "bench/tcload built");

# run tcload, return (exit code, stdout, stderr)
sub tcload {
    my @args = @_;
    my $err = "/tmp/tcload-gen-$$.err";
    my $cmd = join(' ', map { "'$_'" } $tc, @args);
    my $out = `$cmd 2>$err`;
    my $rc = $? >> 8;
    open(my $fh, '<', $err) or die;
    local $/;
    my $e = <$fh> // '';
    close $fh;
    unlink $err;
    return ($rc, $out, $e);
}

# parse a dump into [op, key, size] triples
sub records {
    my ($out) = @_;
    return [map { [split / /] } grep { !/^#/ } split /\n/, $out];
}

# upper chi-square quantile (Wilson-Hilferty), z = 4.75 ~ p = 1e-6
sub chi_crit {
    my ($df) = @_;
    my $z = 4.75;
    my $h = 2 / (9 * $df);
    return $df * (1 - $h + $z * sqrt($h)) ** 3;
}

sub slope {
    my ($xs, $ys) = @_;
    my $n = @$xs;
    my ($mx, $my) = (0, 0);
    $mx += $_ / $n for @$xs;
    $my += $_ / $n for @$ys;
    my ($sxy, $sxx) = (0, 0);
    for my $i (0 .. $n - 1) {
        $sxy += ($xs->[$i] - $mx) * ($ys->[$i] - $my);
        $sxx += ($xs->[$i] - $mx) ** 2;
    }
    return $sxy / $sxx;
}

# exact probabilities of YCSB's ZipfianGenerator (ranks, unscrambled)
sub ycsb_probs {
    my ($n, $th) = @_;
    my $zetan = 0;
    $zetan += $_ ** -$th for reverse 1 .. $n;
    my $zeta2 = 1 + 2 ** -$th;
    my $eta = (1 - (2 / $n) ** (1 - $th)) / (1 - $zeta2 / $zetan);
    my @p = (0) x $n;
    $p[0] = 1 / $zetan;
    $p[1] = 0.5 ** $th / $zetan;
    my $u2 = (1 + 0.5 ** $th) / $zetan;
    # u at which n*(eta*u - eta + 1)^(1/(1-th)) reaches v
    my $uof = sub { my ($v) = @_; (($v / $n) ** (1 - $th) - 1 + $eta) / $eta };
    for my $k (0 .. $n - 1) {
        my $lo = $uof->($k);
        my $hi = $k == $n - 1 ? 1 : $uof->($k + 1);
        $lo = $u2 if $lo < $u2;
        $hi = 1 if $hi > 1;
        $p[$k] += $hi - $lo if $hi > $lo;
    }
    return \@p;
}

# --- zipf, unscrambled: chi-square against YCSB's exact law, slope ---
{
    my ($n, $th, $samples) = (1000, 0.99, 200000);
    my ($rc, $out) = tcload('--dump-keys', $samples, '--no-scramble',
        '--dist', 'zipf', '--theta', $th, "--dataset", "Uni-$n-100",
        '--seed', 11, '-g', 1);
    is($rc, 0, 'zipf dump runs');
    my $recs = records($out);
    is(scalar(@$recs), $samples, 'zipf dump has the asked number of lines');
    my @c = (0) x $n;
    $c[$_->[1]]++ for @$recs;
    my $p = ycsb_probs($n, $th);
    my $psum = 0;
    $psum += $_ for @$p;
    ok(abs($psum - 1) < 1e-9, "YCSB law sums to 1 ($psum)");
    my $chi = 0;
    for my $k (0 .. $n - 1) {
        my $e = $samples * $p->[$k];
        $chi += ($c[$k] - $e) ** 2 / $e;
    }
    my $crit = chi_crit($n - 1);
    ok($chi < $crit, sprintf("zipf chi-square vs YCSB law %.1f < %.1f", $chi, $crit));
    # ranks 0 and 1 are exact Zipf in YCSB
    my $zetan = 0;
    $zetan += $_ ** -$th for 1 .. $n;
    for my $r (0, 1) {
        my $q = (($r + 1) ** -$th) / $zetan;
        my $sd = sqrt($samples * $q * (1 - $q));
        ok(abs($c[$r] - $samples * $q) < 5 * $sd,
           "rank $r frequency $c[$r] ~ exact zipf " . int($samples * $q));
    }
    my (@x, @y);
    for my $k (0 .. $n - 1) {
        next unless $c[$k];
        push @x, log($k + 1);
        push @y, log($c[$k]);
    }
    my $s = slope(\@x, \@y);
    ok(abs($s + $th) < 0.05, sprintf("rank-frequency log-log slope %.3f ~ -%g", $s, $th));
    my $nget = grep { $_->[0] eq 'G' } @$recs;
    is($nget, $samples, '-g 1 gives only GETs');
}

# --- other thetas accepted (YCSB allows theta != 1) ---
for my $th (0.5, 1.5) {
    my ($rc, $out) = tcload('--dump-keys', 50000, '--no-scramble', '--theta', $th,
        '--dataset', 'Uni-100-10', '--seed', 3);
    is($rc, 0, "theta $th accepted");
    my @c = (0) x 100;
    $c[$_->[1]]++ for @{records($out)};
    my (@x, @y);
    for my $k (0 .. 99) {
        next unless $c[$k];
        push @x, log($k + 1);
        push @y, log($c[$k]);
    }
    my $s = slope(\@x, \@y);
    ok(abs($s + $th) < 0.15, sprintf("theta %g: slope %.3f", $th, $s));
}

# --- scrambled zipf: keys spread over the space, still skewed ---
{
    my ($n, $samples) = (10000, 100000);
    my ($rc, $out) = tcload('--dump-keys', $samples, '--dataset', "Uni-$n-100",
        '--seed', 5);
    is($rc, 0, 'scrambled zipf dump runs');
    my %c;
    my $inrange = 1;
    for (@{records($out)}) {
        $c{$_->[1]}++;
        $inrange = 0 if $_->[1] < 0 || $_->[1] >= $n;
    }
    ok($inrange, 'scrambled keys stay in [0, N)');
    my @f = sort { $b <=> $a } values %c;
    my ($hot) = sort { $c{$b} <=> $c{$a} } keys %c;
    isnt($hot, 0, "hottest key is scrambled away from id 0 (it is $hot)");
    my $zetan = 0;
    $zetan += $_ ** -0.99 for 1 .. $n;
    my $q = 1 / $zetan;
    ok(abs($f[0] / $samples - $q) < 0.01, sprintf("hottest key share %.4f ~ %.4f", $f[0] / $samples, $q));
    my (@x, @y);
    for my $i (0 .. 199) {
        push @x, log($i + 1);
        push @y, log($f[$i]);
    }
    my $s = slope(\@x, \@y);
    ok(abs($s + 0.99) < 0.15, sprintf("scrambled top-200 slope %.3f", $s));
}

# --- uniform: chi-square ---
{
    my ($n, $samples) = (500, 100000);
    my ($rc, $out) = tcload('--dump-keys', $samples, '--dist', 'uniform',
        '--dataset', "Uni-$n-100", '--seed', 9, '-g', 0.9);
    is($rc, 0, 'uniform dump runs');
    my $recs = records($out);
    my @c = (0) x $n;
    $c[$_->[1]]++ for @$recs;
    my $e = $samples / $n;
    my $chi = 0;
    $chi += ($_ - $e) ** 2 / $e for @c;
    my $crit = chi_crit($n - 1);
    ok($chi < $crit, sprintf("uniform chi-square %.1f < %.1f", $chi, $crit));
    my $nget = grep { $_->[0] eq 'G' } @$recs;
    my $sd = sqrt($samples * 0.9 * 0.1);
    ok(abs($nget - 0.9 * $samples) < 5 * $sd, "GET ratio 0.9 ($nget of $samples)");
}

# --- hotspot and latest ---
{
    my ($rc, $out) = tcload('--dump-keys', 50000, '--dist', 'hotspot',
        '--hot-frac', 0.1, '--hot-ops', 0.7, '--dataset', 'Uni-1000-10', '--seed', 2);
    is($rc, 0, 'hotspot dump runs');
    my $recs = records($out);
    my $hot = grep { $_->[1] < 100 } @$recs;
    ok(abs($hot / @$recs - 0.7) < 0.02, sprintf("hotspot: %.3f of requests to the hot 10%%", $hot / @$recs));
    ($rc, $out) = tcload('--dump-keys', 20000, '--dist', 'latest',
        '--dataset', 'Uni-1000-10', '--seed', 2);
    is($rc, 0, 'latest dump runs');
    my %c;
    $c{$_->[1]}++ for @{records($out)};
    my ($top) = sort { $c{$b} <=> $c{$a} } keys %c;
    is($top, 999, 'latest: the newest key is the hottest');
}

# --- value sizes ---
{
    my ($n, $y) = (20000, 200);
    my ($rc, $out) = tcload('--dump-keys', 100000, '--dist', 'uniform',
        '--dataset', "Uni-$n-$y", '--seed', 4);
    is($rc, 0, 'Uni dump runs');
    my (%size, $bad, $sum, $cnt, $incons);
    for (@{records($out)}) {
        my ($op, $k, $s) = @$_;
        $bad++ if $s < 1 || $s > $y;
        $incons++ if defined $size{$k} && $size{$k} != $s;
        $size{$k} = $s;
    }
    ok(!$bad, "Uni-$n-$y sizes all in 1..$y");
    ok(!$incons, 'a key always has the same size');
    $sum += $_ for values %size;
    $cnt = keys %size;
    my $mean = $sum / $cnt;
    my $want = ($y + 1) / 2;
    ok(abs($mean - $want) < 0.03 * $want, sprintf("mean size %.2f ~ %.1f over %d keys", $mean, $want, $cnt));
    my %seen = map { $_ => 1 } values %size;
    ok($seen{1} && $seen{$y}, "both 1 and $y occur");

    ($rc, $out) = tcload('--dump-keys', 2000, '--dataset', 'fixed-1000-77');
    my @s = grep { $_->[2] != 77 } @{records($out)};
    ok($rc == 0 && !@s, 'fixed-1000-77 sizes are all 77');

    ($rc, $out) = tcload('--dump-keys', 60000, '--dist', 'uniform',
        '--dataset', 'etc-50000', '--seed', 8);
    my %es;
    $es{$_->[1]} = $_->[2] for @{records($out)};
    my @b = (0, 0, 0);
    my $out_of = 0;
    for (values %es) {
        if ($_ >= 1 && $_ <= 13) { $b[0]++ }
        elsif ($_ <= 300) { $b[1]++ }
        elsif ($_ <= 8000) { $b[2]++ }
        else { $out_of++ }
    }
    my $t = keys %es;
    ok(!$out_of && abs($b[0] / $t - 0.40) < 0.02 && abs($b[1] / $t - 0.55) < 0.02
       && abs($b[2] / $t - 0.05) < 0.01,
       sprintf("etc bands %.3f/%.3f/%.3f ~ 0.40/0.55/0.05", map { $_ / $t } @b));
}

# --- repeatability ---
{
    my @a = ('--dump-keys', 20000, '-c', 4, '--dataset', 'Uni-5000-300');
    my (undef, $o1) = tcload(@a, '--seed', 42);
    my (undef, $o2) = tcload(@a, '--seed', 42);
    my (undef, $o3) = tcload(@a, '--seed', 43);
    my (undef, $o4) = tcload(@a, '--seed', 42, '-T', 3);
    ok(length($o1) > 100000, 'dump is not empty');
    ok($o1 eq $o2, 'same seed: byte-identical stream');
    ok($o1 ne $o3, 'different seed: different stream');
    ok($o1 eq $o4, 'stream does not depend on the thread count');
    # a key's size belongs to the dataset, not to the stream's seed
    my %size_of;
    my $differ = 0;
    for my $o ($o1, $o3) {
        for (@{records($o)}) {
            my (undef, $key, $size) = @$_;
            $differ++ if exists $size_of{$key} && $size_of{$key} != $size;
            $size_of{$key} = $size;
        }
    }
    is($differ, 0, 'a key has one size under --seed 42 and 43');
    my (undef, $o5) = tcload(@a, '--seed', 42, '--dataset-seed', 2);
    my $moved = grep { $size_of{$_->[1]} != $_->[2] } @{records($o5)};
    cmp_ok($moved, '>', 1000, "--dataset-seed 2 gives $moved requests "
        . 'other sizes');
    my (undef, $s1) = tcload(@a[0 .. 1], '--seed', 42, '-c', 1, '--dataset', 'Uni-5000-300');
    my (undef, $s2) = tcload(@a[0 .. 1], '--seed', 42, '-c', 2, '--dataset', 'Uni-5000-300');
    my @l1 = split /\n/, $s1;
    my @l2 = split /\n/, $s2;
    is_deeply([@l2[1 .. 100]], [@l1[1 .. 100]], 'connection 0 stream is the same whatever -c');
    my $tr = "/tmp/tcload-gen-$$.trace";
    my ($rc) = tcload(@a, '--seed', 42, '--trace', $tr);
    open(my $fh, '<', $tr) or die;
    my $t = do { local $/; <$fh> };
    close $fh;
    unlink $tr;
    ok($rc == 0 && $t eq $o1, '--trace in a dry run holds the same stream');
}

# --- phases ---
{
    my ($rc, $out) = tcload('--dump-keys', 100,
        '--phase', 'dataset=Uni-1000-100,get=1',
        '--phase', 'dataset=fixed-500-9,get=0,ns=b');
    is($rc, 0, 'two phases dump');
    my @h = grep { /^# phase/ } split /\n/, $out;
    is(scalar(@h), 2, 'two phase headers');
    like($h[1], qr/ns=b dataset=fixed-500-9/, 'second phase header names its dataset');
    my @l = grep { !/^#/ } split /\n/, $out;
    my $p2ok = !grep { !/^S \d+ 9$/ } @l[100 .. 199];
    ok($p2ok, 'second phase: sets of 9 bytes');
}

# --- one-hit keys and keys never stored ---
{
    my $n = 2000;
    my ($rc, $out) = tcload('--dump-keys', 20000, '-c', 2, '-g', 1,
        '--dataset', "Uni-$n-100", '--one-hit', 0.25, '--absent', 0.1,
        '--phase', 'ns=a', '--phase', 'ns=b');
    is($rc, 0, 'one-hit and absent dump');
    my (%seen, $one, $absent, $stream, $repeat, $odd);
    for (@{records($out)}) {
        my (undef, $key) = @$_;
        if ($key >= 900000000) {
            $absent++;
        } elsif ($key >= $n) {
            $one++;
            $repeat++ if $seen{$key}++;
        } else {
            $stream++;
        }
    }
    my $all = $one + $absent + $stream;
    is($all, 40000, 'every request of both phases is listed');
    ok(abs($one / $all - 0.25) < 0.02,
       sprintf('one-hit share %.3f ~ 0.25', $one / $all));
    ok(abs($absent / $all - 0.1) < 0.02,
       sprintf('absent share %.3f ~ 0.10', $absent / $all));
    is($repeat // 0, 0, 'no one-hit key is asked for twice, across phases');
    my (undef, $plain) = tcload('--dump-keys', 5000, '--seed', 9);
    my (undef, $zero) = tcload('--dump-keys', 5000, '--seed', 9,
        '--one-hit', 0, '--absent', 0);
    ok($plain eq $zero, 'shares of 0 leave the stream as it was');
}

# --- CacheLib models (--model): popularity, shares, value sizes ---
my $mdir = "/tmp/tcload-model-$$";
END { system('rm', '-rf', $mdir) if defined $mdir }

sub write_model {
    my ($name, %f) = @_;
    my $d = "$mdir/$name";
    system('mkdir', '-p', $d) == 0 or die "mkdir $d";
    for my $file (keys %f) {
        open(my $fh, '>', "$d/$file") or die "$d/$file: $!";
        print $fh $f{$file};
        close $fh;
    }
    return $d;
}

# 1,000 objects: one of weight 1000, 9 sharing 900, 90 sharing 900, 900
# sharing 900; at model-mb 10 of 100 they fold onto 100 keys, 10 each
my $pop = '{"popularityBuckets": [1, 9, 90, 900], '
    . '"popularityWeights": [1000, 900, 900, 900], "oneHits": 0.5}';
my $cfg = sub {
    my ($extra) = @_;
    return "{\"cache_config\": {\"cacheSizeMB\": 100},\n \"test_config\": "
        . "{\"numKeys\": 1000000, \"getRatio\": 0.6, \"setRatio\": 0.2,\n"
        . "  \"loneGetRatio\": 0.2, \"enableLookaside\": true,\n"
        . "  \"popDistFile\": \"pop.json\", \"valSizeDistFile\": "
        . "\"sizes.json\"$extra}}\n";
};
my $discrete = write_model('discrete',
    'config.json' => $cfg->(', "keySizeRange": [10, 11], '
        . '"keySizeRangeProbability": [1.0]'),
    'pop.json' => $pop,
    'sizes.json' => '{"valSizeRange": [100, 200, 1000], '
        . '"valSizeRangeProbability": [5, 3, 2]}');
{
    my $samples = 200000;
    my ($rc, $out, $err) = tcload('--dump-keys', $samples, '--model',
        $discrete, '--model-mb', 10, '--seed', 3);
    is($rc, 0, 'a model dumps') or diag($err);
    like($out, qr/^# phase 0 .*dataset=model:discrete\/10MB .*keys=100 set-on-miss=1$/m,
        'the header names the model, its keys and set-on-miss');
    my (@c, %size, $lone, $get, $set, $odd);
    @c = (0) x 100;
    for (@{records($out)}) {
        my ($op, $key, $s) = @$_;
        $odd++ if defined $size{$key} && $size{$key} != $s;
        $size{$key} = $s;
        if ($key >= 100) {
            $lone++;
            next;
        }
        $c[$key]++;
        $op eq 'G' ? $get++ : $set++;
    }
    my $n = $get + $set;
    ok(abs($lone / $samples - 0.2) < 0.005,
       sprintf('lone GETs are one-hit keys: %.4f ~ 0.2 of requests',
               $lone / $samples));
    ok(abs($get / $n - 0.75) < 0.005,
       sprintf('GET share of the model keys %.4f ~ 0.6 / 0.8', $get / $n));
    # exact law of the folded histogram
    my @p = (19 / 37, (1 / 37) x 9, (0.1 / 37) x 90);
    my $chi = 0;
    $chi += ($c[$_] - $n * $p[$_]) ** 2 / ($n * $p[$_]) for 0 .. 99;
    my $crit = chi_crit(99);
    ok($chi < $crit, sprintf('popularity chi-square %.1f < %.1f', $chi,
                             $crit));
    ok(!$odd, 'a key always has the same size');
    my %by;
    $by{$_}++ for values %size;
    my $keys = keys %size;
    my @other = grep { !/^(100|200|1000)$/ } keys %by;
    ok(!@other, 'discrete sizes only: ' . join(',', sort keys %by));
    ok(abs(($by{100} // 0) / $keys - 0.5) < 0.02
       && abs(($by{200} // 0) / $keys - 0.3) < 0.02
       && abs(($by{1000} // 0) / $keys - 0.2) < 0.02,
       sprintf('value sizes 100/200/1000 over %d keys: %.3f/%.3f/%.3f ~ '
               . '0.5/0.3/0.2', $keys, map { ($by{$_} // 0) / $keys }
               100, 200, 1000));

    my (undef, $again) = tcload('--dump-keys', 1000, '--model', $discrete,
        '--model-mb', 10, '--seed', 3);
    my (undef, $global) = tcload('--dump-keys', 1000, '--seed', 3,
        '--phase', "model=$discrete,model-mb=10");
    ok($again eq $global, '--model and phase model= give the same stream');
    my (undef, $own) = tcload('--dump-keys', 100, '--model', $discrete);
    like($own, qr/keys=1000 /, 'without --model-mb the model keeps its '
         . 'own size (its 1,000 objects)');
    my (undef, $plain) = tcload('--dump-keys', 20000, '--seed', 3,
        '--phase', "model=$discrete,model-mb=10,get=1,one-hit=0,"
        . 'set-on-miss=0');
    my @r = @{records($plain)};
    my @not = grep { $_->[0] ne 'G' || $_->[1] >= 100 } @r;
    ok(@r == 20000 && !@not, 'phase get= and one-hit= override the model');
    unlike($plain, qr/set-on-miss=1/, '... and set-on-miss=');
}
{
    # piecewise value sizes, and key sizes beyond 10 bytes go to the value
    my $piece = write_model('piece',
        'config.json' => $cfg->(', "keySizeRange": [20, 30], '
            . '"keySizeRangeProbability": [1.0]'),
        'pop.json' => $pop,
        'sizes.json' => '{"valSizeRange": [100, 200], '
            . '"valSizeRangeProbability": [1]}');
    my ($rc, $out) = tcload('--dump-keys', 50000, '--model', $piece,
        '--model-mb', 100, '--seed', 4);
    is($rc, 0, 'a model with piecewise sizes dumps');
    my %size;
    $size{$_->[1]} = $_->[2] for @{records($out)};
    my @s = values %size;
    my @out_of = grep { $_ < 110 || $_ > 218 } @s;
    my $mean = 0;
    $mean += $_ / @s for @s;
    ok(!@out_of, 'sizes in 100..199 + 20..29 - 10');
    ok(abs($mean - 164) < 2, sprintf('mean size %.1f ~ 149.5 + 24.5 - 10',
                                     $mean));
}
SKIP: {
    my $kv = "$root/bench/cachelib/kvcache_reg";
    skip 'bench/cachelib is not here', 3 unless -d $kv;
    my ($rc, $out, $err) = tcload('--dump-keys', 100000, '--model', $kv,
        '--model-mb', 64);
    is($rc, 0, 'kvcache_reg loads') or diag($err);
    like($out, qr/keys=81903 /, 'kvcache_reg at 64 MB of 8,192: 81,903 keys');
    my $lone = grep { $_->[1] >= 81903 } @{records($out)};
    ok(abs($lone / 100000 - 0.1204) < 0.005,
       sprintf('kvcache_reg lone GETs %.4f ~ 0.1347 / 1.1192', $lone / 1e5));
}

# --- bad settings ---
my $unsup = write_model('unsupported',
    'config.json' => $cfg->(', "delRatio": 0.1'), 'pop.json' => $pop,
    'sizes.json' => '{"valSizeRange": [1], "valSizeRangeProbability": [1]}');
my $badpop = write_model('badpop',
    'config.json' => $cfg->(''),
    'pop.json' => '{"popularityBuckets": [1, 2], "popularityWeights": [1]}',
    'sizes.json' => '{"valSizeRange": [1], "valSizeRangeProbability": [1]}');
my @bad = (
    [['--model', "$mdir/none"], qr/cannot read .*config\.json/],
    [['--model', $unsup], qr/delRatio is not supported/],
    [['--model', $badpop], qr/popularityBuckets/],
    [['--model', $discrete, '--model-mb', 200], qr/larger cache/],
    [['--phase', "model=$discrete,dataset=Uni-10-10"], qr/replaces dataset/],
    [['--phase', "model=$discrete,dist=uniform"], qr/replaces dist/],
    [['--theta', 1], qr/theta/],
    [['--theta', 0], qr/theta/],
    [['--theta', -0.5], qr/theta/],
    [['--theta', 11], qr/theta/],
    [['--dist', 'pareto'], qr/unknown distribution/],
    [['--dataset', 'Uni-0-100'], qr/zero keys/],
    [['--dataset', 'Uni-10-0'], qr/value size/],
    [['--dataset', 'bogus-1'], qr/dataset/],
    [['--dataset', 'Uni-10x-3'], qr/dataset/],
    [['-g', 1.5], qr/GET ratio/],
    [['--phase', 'dataset=Uni-10-10,colour=red'], qr/unknown key/],
    [['--phase', 'dist=nope'], qr/unknown distribution/],
    [['--one-hit', 0.7, '--absent', 0.5], qr/one-hit and absent/],
    [['--phase', 'absent=-1'], qr/one-hit and absent/],
);
for my $b (@bad) {
    my ($args, $re) = @$b;
    my ($rc, undef, $err) = tcload('--dump-keys', 10, @$args);
    is($rc, 2, "exit 2 for @$args");
    like($err, $re, "message for @$args");
}
{
    my ($rc, undef, $err) = tcload('-n', 10);
    is($rc, 2, 'no server and no --dry-run: exit 2');
    like($err, qr/need -s/, '... with a message');
    ($rc, undef, $err) = tcload('--dry-run');
    is($rc, 2, '--dry-run without a request count: exit 2');
}

done_testing();
