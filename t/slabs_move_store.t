#!/usr/bin/perl
# slabs_move_store.t: a store into a class while a page move is taking a
# page from it is stored, as memcached stores it, even when every victim
# it evicts lies on the page being emptied (the class's first page holds
# its oldest items, which are the queues' tails): those chunks go to the
# move, so the store takes one of them back (slabs_alloc_from_move).
# Without that the store answered SERVER_ERROR out of memory storing
# object, seen with the default slab_automove=1 on CacheLib's
# graph_cache_leader_fbobj model.
#
# `debugmove hold` (debug build) keeps the move at the point where it has
# chosen its page and keeps that page's chunks, so the store meets the
# class in that state every time; `debugmove release` lets the move end.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

plan skip_all => 'the stock memcached is the server under test'
    if server_is_stock();

my $VLEN = 100;
my $NFILL = 40_000;
my $value = 'v' x $VLEN;

my $srv = new_memcached('-m 4 -o slab_automove=0');
my $sock = $srv->sock;
plan skip_all => 'debugmove needs the debug build (memcached-debug)'
    unless send_recv($sock, "debugmove release\r\n") eq "OK\r\n";

sub class_of_value {
    my $sl = $srv->stats('slabs');
    for my $k (keys %$sl) {
        next unless $k =~ /^(\d+):used_chunks$/;
        return $1 if $sl->{$k} > 0;
    }
    return undef;
}

# Fill one class until it begins to evict: its items are never read, so
# its oldest, on its first page (chunks are handed out in address order),
# are the next victims.
my $n = 0;
while ($srv->stats->{evictions} == 0 && $n < $NFILL) {
    send_sync($sock, join('', map { "set k$_ 0 0 $VLEN noreply\r\n$value\r\n" }
                                   $n + 1 .. $n + 500), timeout => 60);
    $n += 500;
}
my $cls = class_of_value();
my $sl = $srv->stats('slabs');
cmp_ok($sl->{"$cls:total_pages"}, '>=', 2,
       "class $cls holds " . $sl->{"$cls:total_pages"} . ' pages');
cmp_ok($srv->stats->{evictions}, '>', 0, 'and evicts');

is(send_recv($sock, "debugmove hold\r\n"), "OK\r\n", 'page moves held');
is(send_recv($sock, "slabs reassign $cls 0\r\n"), "OK\r\n",
   "a page of class $cls goes to the global pool");
ok(wait_until(30, sub { send_recv($sock, "debugmove held\r\n") eq "YES\r\n" },
              0.05), 'the move has chosen its page and waits');

my $stores = 50;
my $replies = send_sync($sock, join('', map {
    "set new$_ 0 0 $VLEN\r\n$value\r\n" } 1 .. $stores), timeout => 30);
is($replies, "STORED\r\n" x $stores,
   "$stores stores into the class during the move are stored");
is(send_recv($sock, "get new$stores\r\n"),
   "VALUE new$stores 0 $VLEN\r\n$value\r\nEND\r\n",
   'the last one is there while the move waits');

is(send_recv($sock, "debugmove release\r\n"), "OK\r\n", 'moves released');
ok(wait_until(30, sub {
    my $s = $srv->stats;
    return !$s->{slab_reassign_running} && $s->{slabs_moved} == 1;
}, 0.05), 'the move ends with its page moved');
is($srv->stats->{slab_global_page_pool}, 1, 'the page is in the global pool');

my ($hits, $bad) = (0, 0);
for my $k ((map { "new$_" } 1 .. $stores), (map { "k$_" } 1 .. $n)) {
    my $g = send_recv($sock, "get $k\r\n");
    if ($g eq "VALUE $k 0 $VLEN\r\n$value\r\nEND\r\n") {
        $hits++;
    } elsif ($g ne "END\r\n") {
        $bad++;
    }
}
is($bad, 0, "no wrong value among the keys ($hits still there)");
ok($srv->alive, 'the server is alive');

done_testing();
