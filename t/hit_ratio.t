#!/usr/bin/perl
# t/hit_ratio.t: hit ratios under a bounded memory, against Debian's
# memcached on the same request streams (doc/tiering.md "Aging and
# probation"; scripts/hitratio runs the same scenarios at a larger scale).
#
#   - a lookaside client (GET, SET on a miss; bench/tcload over one
#     connection at depth 1 with a seed) with a Zipf 0.99 stream over 2.5
#     times what the cache holds, in three phases: from an empty cache, the
#     same keys again, then new keys (the working set moved).  Without an
#     N-zone the moved phase (and, a known gap marked TODO, the stationary
#     one) hits at least as often as
#     memcached's, less 0.005, and the move costs no more than 0.01 over
#     starting from an empty cache; with an N-zone (the default policy) the
#     same bound on the move is a known gap (TODO).
#   - the same stream with a third of its requests for keys asked for once
#     (one-hit wonders, each stored on its miss): the stream's own keys hit
#     at least as often as with memcached, less 0.005.
#   - keys read three times, then new keys stored in batches and each
#     batch read right after: every one of those reads hits (the keys read
#     long ago do not outrank every new key).
#   - rounds of new keys of 100 B to 1 MB, each round read back after it
#     was stored: none lost without an N-zone, and with flush_all before
#     each round no live item evicted at all (the flushed ones go first);
#     with an N-zone, no more lost than memcached loses (one or none) and
#     no live item evicted after the flushes are a known gap (TODO).
# The normal build's suite runs it; a sanitizer build skips it (its code
# paths run there in t/eviction.t and the t/tier_*.t files).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

plan skip_all => 'the stock memcached is the server under test'
    if server_is_stock();
plan skip_all => stock_bin() . ' not installed' unless -x stock_bin();
plan skip_all => 'hit ratios are measured on the normal build: '
    . server_sanitizer() . ' slows the LRU maintainer they depend on'
    if server_sanitizer();

# The hit ratio of each phase (the stream's own keys).
sub lookaside {
    my ($srv, @phases) = @_;
    return tcload_hit_ratios($srv, { depth => 1, seed => 1 }, @phases);
}

my $STREAM = 'dataset=fixed-9500-2000,requests=60000,get=1,set-on-miss=1';
my @MOVE = ("$STREAM,ns=a", "$STREAM,ns=a", "$STREAM,ns=b");

sub fmt { return join ' ', map { sprintf '%.4f', $_ } @_ }

# ---- stationary Zipf and a working-set move
my @stock = lookaside(stock_memcached('-m 8'), @MOVE);
my @dram = lookaside(new_memcached('-m 8'), @MOVE);
diag('memcached -m 8: ' . fmt(@stock) . '; ours: ' . fmt(@dram));
TODO: {
    # with memcached's slab classes (2,000-byte values now take 2,320-byte
    # chunks, as memcached's do, not 2,152) this small stream's
    # stationary phase is 0.003-0.005 behind memcached, whose figure moves
    # with its maintainer's timing (0.9358 against 0.9408 in one CI run);
    # at 64 MB it is +0.0004 (doc/tiering.md "Aging and probation")
    local $TODO = 'stationary Zipf at -m 8 with memcached\'s classes';
    cmp_ok($dram[1], '>=', $stock[1] - 0.005,
        'stationary: at least memcached\'s hit ratio, less 0.005');
}
cmp_ok($dram[2], '>=', $stock[2] - 0.005,
    'after the move: at least memcached\'s hit ratio, less 0.005');
cmp_ok($dram[2], '>=', $dram[0] - 0.01,
    'the move costs at most 0.01 over a start from an empty cache');

my @tier = lookaside(new_memcached('-m 2 -o nvm_size=6m'), @MOVE);
diag('-m 2 -o nvm_size=6m: ' . fmt(@tier));
TODO: {
    # doc/tiering.md "Aging and probation": under hotter only the decay
    # epochs age the counters of both zones; a D-zone that is a quarter of
    # a small cache keeps the old hot set until they bring it down (about
    # 0.04 here; memcached 0.015).
    local $TODO = 'tiered: the D-zone ages only by the decay epochs';
    cmp_ok($tier[2], '>=', $tier[0] - 0.01,
        'tiered: the move costs at most 0.01 over a start from an empty '
        . 'cache');
}

# ---- one-hit wonders mixed into the stream
my @ONE = ("$STREAM,one-hit=0.33,ns=a", "$STREAM,one-hit=0.33,ns=a");
my @stock1 = lookaside(stock_memcached('-m 8'), @ONE);
my @dram1 = lookaside(new_memcached('-m 8'), @ONE);
diag('one-hit: memcached ' . fmt(@stock1) . '; ours ' . fmt(@dram1));
cmp_ok($dram1[1], '>=', $stock1[1] - 0.005,
    'one-hit wonders: the stream keys hit at least as often as with '
    . 'memcached, less 0.005');

# ---- keys read three times, then new keys read right after a batch
sub reread {
    my ($srv) = @_;
    my $s = $srv->sock;
    my ($old, $new, $hits) = (7500, 3750, 0);
    for (my $i = 0; $i < $old; $i += 500) {
        set_batch($s, 'old', $i, $i + 499, 1024);
    }
    for my $round (1 .. 3) {
        for (my $i = 0; $i < $old; $i += 500) {
            get_batch($s, 'old', $i, $i + 499);
        }
    }
    for (my $i = 0; $i < $new; $i += 100) {
        my $last = $i + 99 < $new ? $i + 99 : $new - 1;
        set_batch($s, 'new', $i, $last, 1024);
        $hits += get_batch($s, 'new', $i, $last);
    }
    return ($hits, $new);
}
my ($shits, $n) = reread(stock_memcached('-m 8'));
my ($hits) = reread(new_memcached('-m 8'));
diag("new keys read right after their batch: memcached $shits, ours $hits "
    . "of $n");
is($hits, $n, 'keys read long ago do not evict new keys before their read');

# ---- large new items, rounds read back; with and without flush_all
sub rounds {
    my ($srv, $flush) = @_;
    my $s = $srv->sock;
    srand(7);
    my $lost = 0;
    for my $r (1 .. 60) {
        if ($flush) {
            my $ok = send_recv($s, "flush_all\r\n");
            die "flush_all: $ok" unless $ok eq "OK\r\n";
        }
        my @sizes = map {
            rand() < 0.5 ? 100 + int(rand(999_901))
                         : int(10 ** (2 + rand(4)))
        } 1 .. 12;
        my $req = '';
        for my $i (0 .. $#sizes) {
            $req .= "set r${r}k$i 0 0 $sizes[$i]\r\n" . ('v' x $sizes[$i])
                . "\r\n";
        }
        my $rep = send_recv($s, $req, n => scalar @sizes, timeout => 30);
        my $stored = () = $rep =~ /^STORED\r\n/mg;
        die "round $r: $stored of 12 stored" unless $stored == 12;
        for my $i (0 .. $#sizes) {
            $lost++ unless get_batch($s, "r${r}k", $i, $i);
        }
    }
    return ($lost, mem_stats($s)->{evictions});
}
for my $flush (0, 1) {
    my $what = $flush ? 'with flush_all before each round' : 'rounds';
    my ($slost) = rounds(stock_memcached('-m 64'), $flush);
    my ($lost, $evicted) = rounds(new_memcached('-m 64'), $flush);
    my ($tlost, $tevicted) =
        rounds(new_memcached('-m 16 -o nvm_size=48m'), $flush);
    diag("large items, $what: memcached lost $slost, ours $lost "
        . "(evictions $evicted), tiered $tlost (evictions $tevicted) of 720");
    is($lost, 0, "large items, $what: none of the just-stored keys lost");
    # the N-zone's CLOCK evicts a new key not read yet before one read
    # once, and a class of large items may hold two or three N chunks,
    # fewer than a round stores in it (doc/tiering.md "Aging and
    # probation"); with flush_all, the tier thread's asynchronous moves
    # let one live item go before the flushed ones now and then on a
    # loaded machine (1 of 720 in a CI run with two busy loops)
    my $tiered_todo = $flush ? 'the tier thread under load'
                             : 'the N-zone CLOCK and new keys';
    TODO: {
        local $TODO = $tiered_todo;
        cmp_ok($tlost, '<=', $slost, "... with an N-zone, no more than "
            . 'memcached loses');
    }
    if ($flush) {
        is($evicted, 0, 'flushed items are reclaimed before any live one is '
            . 'evicted');
        TODO: {
            local $TODO = $tiered_todo;
            is($tevicted, 0, '... with an N-zone too');
        }
    }
}

done_testing();
