#!/usr/bin/perl
# t/returning_keys.t: with an N-zone, a key stored again after the cache
# evicted it starts with its CLOCK bit set, so it outlasts a key stored
# for the first time at the same moment (doc/tiering.md "Keys that come
# back"; evict_shadow.c, items_n.c).
#
# One slab class, a D-zone the first keys fill (new keys then go to the
# N-zone), and no reads until the end, so that no hit sets a bit:
#   1. `ret` keys are stored, then enough `fill` keys to evict them all;
#   2. the `ret` keys are stored again, each batch beside as many `new`
#      keys, never stored before;
#   3. more `fill2` keys push the CLOCK's hand about once round the zone.
# The hand evicts every `new` key it meets and passes over the returning
# ones once.  Without the shadow both kinds leave alike (about 200 of
# 1,000 each survived); with it most returning keys survive (about 930)
# and few new ones (about 5).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

plan skip_all => 'the stock memcached is the server under test'
    if server_is_stock();

my $SIZE = 1000;
my $KEYS = 1000;

my $srv = new_memcached('-m 2 -o nvm_size=6m');
my $s = $srv->sock;
is(set_range($s, 'pre', 0, 3000, $SIZE, 500), 3000, 'the D-zone filled');
is(set_range($s, 'ret', 0, $KEYS, $SIZE, 500), $KEYS, 'the keys that will come back');
set_range($s, 'fill', 0, 12000, $SIZE, 500);
is(get_range($s, 'ret', 0, $KEYS, 500), 0, 'the cache evicted them all');
my $stored = 0;
for (my $i = 0; $i < $KEYS; $i += 100) {
    $stored += set_batch($s, 'ret', $i, $i + 99, $SIZE);
    $stored += set_batch($s, 'new', $i, $i + 99, $SIZE);
}
is($stored, 2 * $KEYS, 'stored again, beside as many new keys');
set_range($s, 'fill2', 0, 4000, $SIZE, 100);
my $returning = get_range($s, 'ret', 0, $KEYS, 500);
my $new = get_range($s, 'new', 0, $KEYS, 500);
diag("survived one turn of the hand: $returning returning keys, $new new "
    . "ones, of $KEYS each");
cmp_ok($returning - $new, '>=', $KEYS / 2,
    'a key that came back outlasts a key seen once');
my $tier = $srv->tier_stats;
cmp_ok($tier->{n_evictions}, '>=', 2 * $KEYS,
    'the N-zone evicted (the CLOCK decided)');

done_testing;
