#!/usr/bin/perl
# t/n_probation.t: under the default policy, the N-zone's probation hand
# evicts keys stored and never read before the keys read since they were
# stored, where the paper's CLOCK alone keeps a new key a whole turn and a
# key read once only two (doc/tiering.md "New keys in the N-zone";
# clock_nvm.c).
#
# One slab class, a D-zone filled and read often (so that the keys read
# below stay in the N-zone), then:
#   1. `old` keys are stored and read;
#   2. new keys, never read, are stored: six times what the N-zone
#      holds, the old keys read again after each turn and a half.
# The CLOCK hand alone passes each chunk once a turn and evicts an old
# key whenever two passes met no read between them: 70 of 300 were left.
# With more than 60% of the items it meets unread and new, the probation
# hand, a third of a turn behind, takes new keys first, the CLOCK hand
# comes round half as often, and every old key stays.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

plan skip_all => 'the stock memcached is the server under test'
    if server_is_stock();

my $SIZE = 1000;
my $OLD = 300;

my $srv = new_memcached('-m 2 -o nvm_size=6m');
my $s = $srv->sock;
my $d_chunks = 0;
while (1) {
    set_range($s, 'pre', $d_chunks, 100, $SIZE);
    # n_items counts no copy (a new key stored in D while it has room
    # also leaves one in the N-zone)
    last if $srv->tier_stats->{n_items} > 0 || $d_chunks > 100_000;
    $d_chunks += 100;
}
# the D-zone's keys read often, so that a key read once does not displace
# them: the old keys stay in the N-zone
get_range($s, 'pre', 0, $d_chunks) for 1 .. 4;
is(set_range($s, 'old', 0, $OLD, $SIZE), $OLD, 'the old keys stored');
is(get_range($s, 'old', 0, $OLD), $OLD, '... and read');
# new keys until the N-zone is full, to size the stream by its chunks
my $filled = 0;
while ($srv->tier_stats->{n_evictions} == 0 && $filled < 100_000) {
    set_range($s, 'fill', $filled, 100, $SIZE);
    $filled += 100;
}
my $classes = $srv->tier_classes;
my $n_chunks = 0;
for my $id (grep { /^\d+$/ } keys %$classes) {
    $n_chunks += ($classes->{$id}{n_used_chunks} // 0)
        + ($classes->{$id}{n_free_chunks} // 0);
}
cmp_ok($n_chunks, '>', 1000, "the N-zone holds $n_chunks chunks");
# new keys, six times what the N-zone holds; the old keys read again
# after each turn and a half of them
my $every = int(1.5 * $n_chunks / 100) * 100;
for (my $i = 0; $i < 6 * $n_chunks; $i += $every) {
    set_range($s, 'new', $i, $every, $SIZE);
    get_range($s, 'old', 0, $OLD);
}
my $left = get_range($s, 'old', 0, $OLD);
my $tier = $srv->tier_stats;
diag("$left of $OLD old keys outlasted six turns of new keys; probation "
    . "evictions $tier->{clock_probation_evictions}, N evictions "
    . "$tier->{n_evictions}");
cmp_ok($tier->{n_evictions}, '>=', 5 * $n_chunks,
    'the N-zone evicted (the CLOCK decided)');
cmp_ok($left, '>=', $OLD * 0.9, 'the old keys stayed');
cmp_ok($tier->{clock_probation_evictions}, '>', $n_chunks,
    'the probation hand evicted new keys');

done_testing;
