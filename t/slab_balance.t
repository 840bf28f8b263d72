#!/usr/bin/perl
# t/slab_balance.t: without an N-zone, slab_automove=1 moves pages to the
# class where they bring hits (slabs_automove.c, evict_shadow.c;
# doc/tiering.md "Pages that follow the hits"), and the moves rescue the
# items of the pages they take.
#
#   - -m 16: large values (100 KB) fill most of the pages and are never
#     read again; then a lookaside client (bench/tcload: GET, SET on a
#     miss) asks for small keys that do not fit in what is left.  The small
#     class evicts keys it is asked for again; the large class, asked for
#     nothing, gives its pages up, one a second, while the small class's
#     hit ratio goes up.
#   - every large key still counted is there with its value (its page's
#     items were rescued into the class's other chunks, the class's
#     coldest going instead), and slab_reassign_rescues counts them.
#   - the same moves while another client stores new versions of large
#     keys and reads each back: every read is the last version or a miss.
#   - with slab_automove=0 the same load moves nothing.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;
use POSIX ();

plan skip_all => 'the stock memcached is the server under test'
    if server_is_stock();

my $NLARGE = 120;
my $VLEN = 100_000;
sub large_value { my ($i) = @_; return substr("L$i:" x $VLEN, 0, $VLEN) }

# One pass of the small keys' lookaside stream (a new seed each); its hit
# ratio.
my $seed = 0;
sub small_pass {
    my ($srv) = @_;
    $seed++;
    my ($hr) = tcload_hit_ratios($srv, { depth => 4, seed => $seed },
        'dataset=Uni-40000-200,requests=20000,get=1,set-on-miss=1');
    return $hr;
}

# Pages, and items, of the classes whose chunks are in [$lo, $hi).
sub classes_sum {
    my ($srv, $field, $lo, $hi) = @_;
    my $sl = $srv->stats('slabs');
    my $sum = 0;
    for my $k (keys %$sl) {
        next unless $k =~ /^(\d+):chunk_size$/;
        $sum += $sl->{"$1:$field"}
            if $sl->{$k} >= $lo && $sl->{$k} < $hi;
    }
    return $sum;
}
sub large_pages { return classes_sum($_[0], 'total_pages', $VLEN, 2 * $VLEN) }
sub small_pages { return classes_sum($_[0], 'total_pages', 0, 1000) }

sub fill_large {
    my ($srv) = @_;
    my $r = send_sync($srv->sock, join('', map {
        "set big$_ 0 0 $VLEN\r\n" . large_value($_) . "\r\n" } 1 .. $NLARGE),
        timeout => 30);
    return scalar(() = $r =~ /^STORED\r\n/mg);
}

my $srv = new_memcached('-m 16');
is(fill_large($srv), $NLARGE, "$NLARGE values of 100 KB stored");
my $large_before = large_pages($srv);
cmp_ok($large_before, '>=', 10, "they hold $large_before pages");

my $first = small_pass($srv);
my $small_before = small_pages($srv);
my $moved = wait_until(90, sub {
    small_pass($srv);
    return $srv->stats->{slabs_moved} >= 3 ? 1 : undef;
}, 0.1);
ok($moved, 'pages moved while the small keys were asked for');
my $s = $srv->stats;
my $large_after = large_pages($srv);
cmp_ok($large_after, '<', $large_before,
       "the large class gave pages up ($large_before -> $large_after)");
cmp_ok(small_pages($srv), '>', $small_before,
       'the small keys\' classes took them');
cmp_ok($s->{slab_reassign_rescues}, '>', 0,
       "the moved pages' items were rescued ($s->{slab_reassign_rescues})");
my $last = small_pass($srv);
cmp_ok($last, '>', $first + 0.02, sprintf(
       'the small keys hit more often: %.4f, then %.4f', $first, $last));

# Count the large keys with the automover off and no move under way, and
# count again if a page moved meanwhile: a move started before the switch
# can still evict from the class between the reads and the stats.
is(send_recv($srv->sock, "slabs automove 0\r\n"), "OK\r\n",
   'the automover is switched off for the count');
my ($hits, $bad, $large_items);
my $settled = wait_until(60, sub {
    my $before = $srv->stats;
    return undef if $before->{slab_reassign_running};
    ($hits, $bad) = (0, 0);
    for my $i (1 .. $NLARGE) {
        my $g = send_recv($srv->sock, "get big$i\r\n", timeout => 10);
        if ($g eq "VALUE big$i 0 $VLEN\r\n" . large_value($i) . "\r\nEND\r\n") {
            $hits++;
        } elsif ($g ne "END\r\n") {
            $bad++;
        }
    }
    $large_items = classes_sum($srv, 'used_chunks', $VLEN, 2 * $VLEN);
    my $after = $srv->stats;
    return $after->{slabs_moved} == $before->{slabs_moved}
        && !$after->{slab_reassign_running} ? 1 : undef;
}, 0.1);
ok($settled, 'the large keys were counted while no page moved');
is($bad, 0, 'no large value is wrong');
cmp_ok($hits, '>', 0, "$hits large keys are still there");
is($hits, $large_items, 'as many as the class holds');

# ---- the same moves while a client keeps storing and reading large keys:
# each read is the last version stored or a miss, never an older one
{
    my $busy = new_memcached('-m 16');
    is(fill_large($busy), $NLARGE, 'a second server filled the same way');
    my $parent = $$;
    my $child = fork();
    die "fork: $!" unless defined $child;
    if ($child == 0) {
        # the harness's handlers would stop every server on our TERM
        $SIG{$_} = 'DEFAULT' for qw(TERM INT ALRM);
        setpgrp(0, 0);          # its tcload goes with it
        eval { small_pass($busy) while getppid() == $parent };
        POSIX::_exit(0);
    }
    setpgrp($child, $child);    # either side may run first
    my %version;
    my ($reads, $stale, $wrong) = (0, 0, 0);
    my $sock = $busy->sock;
    my $round = 0;
    my $moved_busy = wait_until(90, sub {
        $round++;
        for my $i (1 .. 12) {
            my $v = substr("V$round:$i:" x $VLEN, 0, $VLEN);
            my $r = send_recv($sock, "set big$i 0 0 $VLEN\r\n$v\r\n",
                              timeout => 10);
            $version{$i} = $v if $r eq "STORED\r\n";
            my $g = send_recv($sock, "get big$i\r\n", timeout => 10);
            $reads++;
            next if $g eq "END\r\n";
            if ($g !~ /^VALUE big$i 0 $VLEN\r\n(.*)\r\nEND\r\n\z/s) {
                $wrong++;
            } elsif ($1 ne $version{$i}) {
                $stale++;
            }
        }
        return $busy->stats->{slabs_moved} >= 3 ? 1 : undef;
    }, 0.01);
    kill 'TERM', -$child;
    waitpid($child, 0);
    ok($moved_busy, 'pages moved while large keys were stored and read');
    cmp_ok($busy->stats->{slab_reassign_rescues}, '>', 0,
           'items were rescued meanwhile');
    is($wrong, 0, "no malformed reply in $reads reads");
    is($stale, 0, 'no read returned a version older than the last stored');
    ok($busy->alive, 'that server is alive');
}

my $off = new_memcached('-m 16 -o slab_automove=0');
is(fill_large($off), $NLARGE, 'slab_automove=0: the same values stored');
small_pass($off) for 1 .. 5;
is($off->stats->{slabs_moved}, 0, 'and the same load moves no page');
ok($srv->alive && $off->alive, 'servers alive');

done_testing();
