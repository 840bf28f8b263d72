#!/usr/bin/perl
# slabs_move_stuck.t: a page move that meets a chunk nobody gives back (a
# client that sent half a value and stopped) gives up after a bound instead
# of waiting forever: the page stays with its class, the chunks it had
# already freed are usable again, slab_reassign_busy_aborts counts it, a
# later `slabs reassign` is accepted and completes, nothing stored and
# still listed is lost or corrupt, and the stalled client's value, when it
# finally arrives, is stored.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use MemcachedTest;

my $VLEN = 100_000;
my $NFILL = 25;

my $server = new_memcached('-m 64 -o slab_reassign,slab_automove=0');
my $sock = $server->sock;

sub value_of { my ($k) = @_; return substr(("$k:" x $VLEN), 0, $VLEN) }

sub class_of_big {
    my $sl = $server->stats('slabs');
    for my $k (keys %$sl) {
        next unless $k =~ /^(\d+):used_chunks$/;
        return $1 if $sl->{$k} > 0 && $sl->{"$1:chunk_size"} >= $VLEN;
    }
    return undef;
}

# The stalled upload takes the first chunk of its class: the first page,
# which is the page a move empties first.
my $stuck = $server->sock;
my $stuck_val = value_of('stuck');
ok(mc_send($stuck, "set stuck 0 0 $VLEN\r\n" . substr($stuck_val, 0, $VLEN / 2)),
   'half a value sent');
my $cls = wait_until(5, \&class_of_big);
ok($cls, 'the stalled set holds a chunk of class ' . ($cls // '?'));

my $stored = send_sync($sock,
    join('', map { "set k$_ 0 0 $VLEN\r\n" . value_of("k$_") . "\r\n" } 1 .. $NFILL),
    timeout => 20);
is($stored, "STORED\r\n" x $NFILL, "$NFILL items stored in the same class");
my $sl = $server->stats('slabs');
my $pages = $sl->{"$cls:total_pages"};
cmp_ok($pages, '>=', 3, "class $cls holds $pages pages");
my $per = $sl->{"$cls:chunks_per_page"};
my $free_before = $sl->{"$cls:free_chunks"};

reply_is(send_recv($sock, "slabs reassign $cls 1\r\n"), "OK\r\n",
    'page move of the stalled chunk\'s page accepted');
my $t0 = time;
my $idle = wait_until(15, sub { $server->stats->{slab_reassign_running} == 0 }, 0.1);
my $took = time - $t0;
ok($idle, sprintf('the move gives up on the stalled chunk (%.1f s)', $took));

my $s = $server->stats;
is($s->{slab_reassign_busy_aborts}, 1, 'slab_reassign_busy_aborts counts the give-up');
is($s->{slabs_moved}, 0, 'no page moved');
cmp_ok($s->{slab_reassign_busy_items}, '>', 0, 'the wait counted busy rounds');
$sl = $server->stats('slabs');
is($sl->{"$cls:total_pages"}, $pages, 'the page stayed with its class');
my $evicted = $s->{slab_reassign_evictions_nomem};
is($evicted, $per - 1, "the page's other items left the cache ($evicted)");
is($sl->{"$cls:free_chunks"}, $free_before + $per - 1, 'their chunks are free again');

# Everything still counted is readable and intact; the rest went with the
# move (counted above).
sub check_items {
    my ($what) = @_;
    my ($hits, $bad) = (0, 0);
    for my $i (1 .. $NFILL) {
        my $g = send_recv($sock, "get k$i\r\n", timeout => 10);
        if ($g eq "VALUE k$i 0 $VLEN\r\n" . value_of("k$i") . "\r\nEND\r\n") {
            $hits++;
        } elsif ($g ne "END\r\n") {
            $bad++;
        }
    }
    is($bad, 0, "$what: no item is corrupt");
    return $hits;
}
my $hits = check_items('after the give-up');
is($hits, $NFILL - $evicted, 'the items the move did not take are all there');
is($server->stats->{curr_items}, $hits, 'curr_items matches what get finds');

# The freed chunks serve new items without evicting anything.
my $refill = send_sync($sock,
    join('', map { "set r$_ 0 0 $VLEN\r\n" . value_of("r$_") . "\r\n" } 1 .. $per - 1),
    timeout => 20);
is($refill, "STORED\r\n" x ($per - 1), 'the freed chunks take new items');
$s = $server->stats;
is($s->{evictions} + $s->{slab_reassign_evictions_nomem}, $evicted,
   'no eviction was needed for them');
my $rbad = 0;
for my $i (1 .. $per - 1) {
    my $g = send_recv($sock, "get r$i\r\n", timeout => 10);
    $rbad++ unless $g eq "VALUE r$i 0 $VLEN\r\n" . value_of("r$i") . "\r\nEND\r\n";
}
is($rbad, 0, 'the new items read back intact');

# A later move is accepted and, away from the stalled chunk, completes.
reply_is(send_recv($sock, "slabs reassign $cls 1\r\n"), "OK\r\n",
    'a later slabs reassign is accepted');
ok(wait_until(15, sub { $server->stats->{slabs_moved} == 1 }, 0.1),
   'and moves a page');
$sl = $server->stats('slabs');
is($sl->{"$cls:total_pages"}, $pages - 1, "class $cls gave one page");
$s = $server->stats;
is($s->{slab_reassign_busy_aborts}, 1, 'that move did not give up');
my $stored_now = $NFILL + $per - 1
    - ($s->{slab_reassign_evictions_nomem} + $s->{evictions});
my $hits2 = check_items('after the second move');
my $r_hits = 0;
for my $i (1 .. $per - 1) {
    my $g = send_recv($sock, "get r$i\r\n", timeout => 10);
    $r_hits++ if $g eq "VALUE r$i 0 $VLEN\r\n" . value_of("r$i") . "\r\nEND\r\n";
}
is($hits2 + $r_hits, $stored_now, 'every item not taken by a move is there');
is($server->stats->{curr_items}, $stored_now, 'curr_items agrees');

# The stalled client finishes: its chunk never left it.
reply_is(send_recv($stuck, substr($stuck_val, $VLEN / 2) . "\r\n", timeout => 10),
    "STORED\r\n", 'the stalled set completes: STORED');
reply_is(send_recv($sock, "get stuck\r\n", timeout => 10),
    "VALUE stuck 0 $VLEN\r\n$stuck_val\r\nEND\r\n", 'its value reads back intact');
ok($server->alive, 'server alive');

done_testing();
