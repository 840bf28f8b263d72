#!/usr/bin/perl
# t/bench_hitsim.t - checks bench/hitsim.py, which replays a tcload stream
# through libCacheSim's policies for scripts/experiments --only hitratio:
# an object's cost (10 + value + 59 bytes, or its memcached slab chunk for
# LRU-slab), a new ns= making new keys, absent GETs left out, SETs fed but
# not counted, per-phase hit ratios counted by hand for LRU, and a real
# `tcload --dry-run` stream whose only misses are the first requests.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use MemcachedTest ();    # its watchdog, scaled for the build and the load
use JSON::PP;

my $root = "$FindBin::Bin/..";
my $sim = "$root/bench/hitsim.py";
plan skip_all => 'python3 cannot import libcachesim (scripts/install-deps)'
    if system('python3', '-c', 'import libcachesim') != 0;
system("make -s -C $root/bench >/dev/null") == 0 or die "make -C bench failed\n";

my $tmp = "/tmp/hitsim-t-$$";
END { unlink "$tmp.trace", "$tmp.json", "$tmp.stats" if defined $tmp }

# run hitsim on a trace file; (exit code, decoded --json or undef).
# $mb undef: the size comes from @more (--class-pages)
sub hitsim {
    my ($trace, $mb, @more) = @_;
    unlink "$tmp.json";
    open(my $out, '>&', \*STDOUT) or die;
    open(STDOUT, '>', '/dev/null') or die;    # its table: not TAP
    my $st = system('python3', $sim, $trace,
                    (defined $mb ? ('--mb', $mb) : ()), '--json',
                    "$tmp.json", @more);
    open(STDOUT, '>&', $out) or die;
    return ($? >> 8, undef) if $st != 0;
    open(my $fh, '<', "$tmp.json") or die "$tmp.json: $!";
    my $j = decode_json(do { local $/; <$fh> });
    close $fh;
    return (0, $j->{results});
}

# Objects of 31-byte values cost 100 bytes; 300 bytes hold three (LRU),
# their slab chunks of 120 bytes only two (LRU-slab).
open(my $fh, '>', "$tmp.trace") or die;
print $fh "# phase 0 ns=a\n", map({ "G $_ 31\n" } 1, 2, 3, 1, 4, 2),
    "G 900000001 31\n", "G 1 31\n",
    "# phase 1 ns=b\n", "G 1 31\n", "S 5 31\n", "G 5 31\n";
close $fh;
my ($rc, $r) = hitsim("$tmp.trace", 300 / 1048576);
is($rc, 0, 'hitsim runs');
my @lru = map { [$_->{hits}, $_->{gets}] } @{ $r->{LRU} };
is_deeply($lru[0], [2, 7], 'LRU, phase 0: 1 hits twice in 7 GETs (the '
    . 'absent GET left out)');
is_deeply($lru[1], [1, 2], 'LRU, phase 1: ns=b is a new key 1; the SET '
    . 'of 5 is fed, not counted');
is($r->{'LRU-slab'}[0]{hits}, 0, 'LRU-slab: 120-byte chunks, two fit, no '
    . 'hit in phase 0');
for my $p (0, 1) {
    cmp_ok($r->{BeladySize}[$p]{hits}, '>=', $r->{LRU}[$p]{hits},
           "BeladySize at least LRU in phase $p");
}
is(scalar(keys %$r), 7, 'all seven policies ran');
($rc, $r) = hitsim("$tmp.trace", 300 / 1048576, '--policies',
                   'ARC,ARC-slab,Sieve-slab');
is($rc, 0, 'the chunk-charged variants run when named');
cmp_ok($r->{'ARC-slab'}[0]{hits}, '<', $r->{ARC}[0]{hits},
       'ARC-slab: two 120-byte chunks fit where ARC holds three objects, '
       . 'fewer hits');
is($r->{'Sieve-slab'}[0]{hits}, 0, 'Sieve-slab: no hit in phase 0 either');

# a real stream that fits: LRU misses each key's first request only
my $dump = `$root/bench/tcload --dry-run -c 1 --seed 2 --phase dataset=Uni-2000-100,requests=20000,get=1,ns=a`;
is($? >> 8, 0, 'tcload --dry-run');
my %seen = map { (split / /)[1] => 1 } grep { !/^#/ } split /\n/, $dump;
open($fh, '>', "$tmp.trace") or die;
print $fh $dump;
close $fh;
($rc, $r) = hitsim("$tmp.trace", 64, '--policies', 'LRU,Sieve');
is($rc, 0, 'hitsim on the dry run');
is($r->{LRU}[0]{gets}, 20000, 'every GET counted');
is($r->{LRU}[0]{hits}, 20000 - keys %seen, 'LRU misses only the '
    . scalar(keys %seen) . ' first requests');
is($r->{Sieve}[0]{hits}, $r->{LRU}[0]{hits}, 'so does Sieve');
($rc) = hitsim("$tmp.trace", 64, '--policies', 'MRU');
is($rc, 2, 'an unknown policy: exit 2');

# per class: a 120-byte class with a page, a 152-byte one with none.  Key
# 1 (100 bytes) goes to the first and hits on its second GET; key 2 (129
# bytes) to the second, key 3 (1,069 bytes, past every class) to the
# largest, whole chunks of it: no page, no hit.
open($fh, '>', "$tmp.stats") or die;
print $fh "STAT 1:chunk_size 120\r\nSTAT 1:total_pages 1\r\n",
    "STAT 2:chunk_size 152\r\nSTAT 2:total_pages 0\r\nEND\r\n";
close $fh;
open($fh, '>', "$tmp.trace") or die;
print $fh "# phase 0 ns=a\n", "G 1 31\n", "G 1 31\n", "G 2 60\n",
    "G 2 60\n", "G 3 1000\n", "G 3 1000\n";
close $fh;
($rc, $r) = hitsim("$tmp.trace", undef, '--class-pages', "$tmp.stats",
                   '--policies', 'LRU,ARC');
is($rc, 0, 'hitsim --class-pages runs');
is_deeply([$r->{LRU}[0]{hits}, $r->{LRU}[0]{gets}], [1, 6],
          'per class: only the class with a page hits');
is($r->{ARC}[0]{hits}, 1, '... under ARC too');
($rc) = hitsim("$tmp.trace", undef, '--class-pages', "$tmp.stats",
               '--policies', 'BeladySize');
is($rc, 2, 'per class: online policies only, exit 2 otherwise');

done_testing();
