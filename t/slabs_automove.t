#!/usr/bin/perl
# slabs_automove.t: slab pages as Debian's memcached 1.6.18 moves and
# counts them (checked against it too where it is installed, each server
# with its own class ids):
#   - `stats slabs` total_malloced: every page taken, those in the global
#     pool included; with -L each class's first page, preallocated; with
#     -e the whole memory file;
#   - `slabs reassign` to the global pool (0) and between classes, NOSPARE;
#     a growing class takes the pool's pages before new memory;
#   - slab_automove=1 returns the free pages of a class that has had more
#     than two pages' worth of free chunks for the window; 0 moves nothing;
#     2 moves pages to a class that evicts.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use File::Temp ();
use Test::More;
use MemcachedTest;

my $have_stock = -x stock_bin() && !server_is_stock();
diag('no stock memcached: checking this server only') unless $have_stock;

sub subjects { return servers_with_stock(@_) }

# The same with NAME in $args replaced by a name of each server's own.
sub subjects_named {
    my ($args) = @_;
    my @s;
    for my $who ([ 'tiercached', \&new_memcached ],
                 [ 'memcached', \&stock_memcached ]) {
        next if $who->[0] eq 'memcached' && !$have_stock;
        (my $a = $args) =~ s/NAME/mf-$who->[0]/;
        my $srv = $who->[1]->($a);
        push @s, { name => $who->[0], srv => $srv, sock => $srv->sock };
    }
    return @s;
}

# ---- stats slabs total_malloced: memcached's count of the pages it took:
# with -L every class's first page, preallocated; with -e the whole
# memory file; pages in the global pool still count
{
    my $dir = File::Temp::tempdir('gapsmf-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    chmod 0777, $dir;
    for my $case ([ '', 'default' ], [ '-L', '-L' ],
                  [ "-e $dir/NAME", '-e' ]) {
        my ($args, $name) = @$case;
        for my $s (subjects_named($args)) {
            my $sl = mem_stats($s->{sock}, 'slabs');
            my $page = 1024 * 1024;
            if ($name eq 'default') {
                is($sl->{total_malloced}, 0,
                    "$s->{name} $name: nothing malloced before a store");
            } elsif ($name eq '-L') {
                cmp_ok($sl->{active_slabs}, '>=', 30,
                    "$s->{name} -L: every class has its first page");
                is($sl->{total_malloced}, $sl->{active_slabs} * $page,
                    "$s->{name} -L: total_malloced counts them");
            } else {
                is($sl->{total_malloced}, 64 * $page,
                    "$s->{name} -e: total_malloced is the memory file");
            }
            $s->{srv}->stop;
        }
    }
}

# Fill one class with 1000-byte values: its id (differs between servers).
sub fill_class {
    my ($sock, $prefix, $size, $n) = @_;
    my $v = 'x' x $size;
    send_sync($sock, join '',
        map { "set $prefix$_ 0 0 $size noreply\r\n$v\r\n" } 1 .. $n);
    my $sl = mem_stats($sock, 'slabs');
    my ($id) = map { /^(\d+):total_pages$/ ? $1 : () }
        sort { $sl->{$b} <=> $sl->{$a} } grep { /total_pages/ } keys %$sl;
    return ($id, $sl);
}

sub pages_of {
    my ($sock, $id) = @_;
    return mem_stats($sock, 'slabs')->{"$id:total_pages"} // 0;
}

# A reassign command, sent again while an earlier move keeps it BUSY.
sub reassign {
    my ($sock, $cmd) = @_;
    my $reply;
    wait_until(5, sub {
        $reply = send_recv($sock, "$cmd\r\n");
        return $reply !~ /^BUSY/;
    }, 0.1);
    return $reply;
}

# ---- slabs reassign: to the global pool (0) and between classes; the
# pool's pages stay in total_malloced and the next class to grow takes
# them
for my $s (subjects('-m 64 -o slab_automove=0')) {
    my $n = $s->{name};
    my $sock = $s->{sock};
    my ($c, $sl0) = fill_class($sock, 'a', 1000, 3000);
    is(pages_of($sock, $c), 4, "$n: 3000 values of 1000 bytes: 4 pages");
    my @replies;
    for my $cmd ("slabs reassign $c 0", "slabs reassign $c 0",
                 "slabs reassign 1 $c", "slabs reassign $c 1") {
        push @replies, reassign($sock, $cmd);
    }
    wait_until(5, sub { mem_stats($sock)->{slabs_moved} >= 3 }, 0.1);
    reply_is(join('', @replies),
        "OK\r\nOK\r\nNOSPARE source class has no spare pages\r\nOK\r\n",
        "$n: reassign to the pool twice, NOSPARE, to class 1");
    my $st = mem_stats($sock);
    my $sl = mem_stats($sock, 'slabs');
    is($st->{slab_global_page_pool}, 2, "$n: two pages in the global pool");
    is($st->{slabs_moved}, 3, "$n: three pages moved");
    is($sl->{"$c:total_pages"}, 1, "$n: the source kept one page");
    is($sl->{'1:total_pages'}, 1, "$n: class 1 got one");
    is($sl->{total_malloced}, $sl0->{total_malloced},
        "$n: total_malloced still counts the pool's pages");
    fill_class($sock, 'b', 5000, 300);
    is(mem_stats($sock)->{slab_global_page_pool}, 0,
        "$n: a growing class took the pool's pages");
    is(mem_stats($sock, 'slabs')->{total_malloced}, $sl0->{total_malloced},
        "$n: ... without new memory");
    $s->{srv}->stop;
}

# ---- slab_automove=1: a class with more than two pages' worth of free
# chunks for the whole window gives pages back to the global pool; with 0
# nothing moves; with 2 every eviction asks for a page
{
    my @subj = map {
        my $mode = $_;
        map { $_->{mode} = $mode; $_ }
            subjects("-m 8 -o slab_automove=$mode,slab_automove_window=3");
    } (0, 1);
    for my $s (@subj) {
        my ($c) = fill_class($s->{sock}, 'a', 1000, 7000);
        $s->{class} = $c;
        send_sync($s->{sock},
            join '', map { "delete a$_ noreply\r\n" } 1 .. 7000);
    }
    # mode 1 first: by the time it has moved, mode 0 had as long to
    for my $s (sort { $b->{mode} <=> $a->{mode} } @subj) {
        my $n = "$s->{name} automove=$s->{mode}";
        my $pool = wait_until($s->{mode} ? 10 : 0, sub {
            my $p = mem_stats($s->{sock})->{slab_global_page_pool};
            return $p >= 6 ? $p : undef;
        }) // mem_stats($s->{sock})->{slab_global_page_pool};
        is($pool, $s->{mode} ? 6 : 0, "$n: pages in the global pool");
        is(pages_of($s->{sock}, $s->{class}), $s->{mode} ? 2 : 8,
            "$n: pages the emptied class keeps");
        $s->{srv}->stop;
    }
}
for my $s (subjects('-m 8 -o slab_automove=2')) {
    my $n = "$s->{name} automove=2";
    my ($c) = fill_class($s->{sock}, 'a', 1000, 7000);
    send_sync($s->{sock}, join '', map { "delete a$_ noreply\r\n" } 1 .. 7000);
    my ($d) = fill_class($s->{sock}, 'b', 3000, 3000);
    my $st = mem_stats($s->{sock});
    if ($s->{name} eq 'memcached') {
        # memcached's automover samples evictions on its own timer: whether
        # it has moved a page by now depends on the machine's speed
        diag("$n: memcached moved $st->{slabs_moved} page(s)");
    } else {
        cmp_ok($st->{slabs_moved}, '>=', 1, "$n: evictions moved pages");
        cmp_ok(pages_of($s->{sock}, $d), '>', 1,
            "$n: ... to the evicting class");
    }
    $s->{srv}->stop;
}

done_testing();
