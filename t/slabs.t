#!/usr/bin/perl
# slabs.t: slab admin commands: slabs reassign (replies for bad classes,
# no spare pages, and a real move), slabs automove 0/1/2 and bad values,
# cache_memlimit.  Chunk sizes are not compared with stock memcached: our
# slab layout differs on purpose.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use MemcachedTest;

my $server = new_memcached('-m 64 -o slab_automove=0');
my $sock = $server->sock;

reply_is(send_recv($sock, "slabs reassign 99 1\r\n"), "BADCLASS invalid src or dst class id\r\n",
    'reassign: bad source class');
reply_is(send_recv($sock, "slabs reassign 1 99\r\n"), "BADCLASS invalid src or dst class id\r\n",
    'reassign: bad destination class');
reply_is(send_recv($sock, "slabs reassign 1 1\r\n"), "SAME src and dst class are identical\r\n",
    'reassign: same class');
reply_is(send_recv($sock, "slabs reassign 1 2\r\n"), "NOSPARE source class has no spare pages\r\n",
    'reassign: nothing to move');
reply_is(send_recv($sock, "slabs reassign\r\n"), "ERROR\r\n", 'reassign without args');
reply_is(send_recv($sock, "slabs bogus\r\n"), "ERROR\r\n", 'unknown slabs subcommand');

# fill small class with several pages, delete everything, move a page out
my $n = 30_000;
send_sync($sock, join('', map { "set s$_ 0 0 10\r\n0123456789\r\n" } 1 .. $n), timeout => 20);
my $sl = $server->stats('slabs');
my ($cls) = sort { $sl->{"$b:total_pages"} <=> $sl->{"$a:total_pages"} }
    grep { defined $sl->{"$_:total_pages"} } map { /^(\d+):total_pages$/ ? $1 : () } keys %$sl;
cmp_ok($sl->{"$cls:total_pages"}, '>=', 2, "class $cls holds several pages");
my $pages_before = $sl->{"$cls:total_pages"};
my $dst = $cls + 5;
send_recv($sock, "set other 0 0 2000\r\n" . ('o' x 2000) . "\r\n");
my $r = send_recv($sock, "slabs reassign $cls $dst\r\n");
like($r, qr/\A(?:OK|BUSY [^\r]*)\r\n\z/, 'reassign with spare pages accepted: ' . escape_bytes($r));
my $moved = 0;
for (1 .. 50) {
    my $s = $server->stats;
    if (($s->{slabs_moved} || 0) >= 1) { $moved = 1; last }
    sleep 0.1;
}
ok($moved, 'slabs_moved counts the page move');
$sl = $server->stats('slabs');
is($sl->{"$cls:total_pages"}, $pages_before - 1, "class $cls lost one page");
my $lost = 0;
my $present = 0;
for my $i (1 .. 200) {
    my $g = send_recv($sock, "get s$i\r\n");
    $present++ if $g eq "VALUE s$i 0 10\r\n0123456789\r\nEND\r\n";
    $lost++ unless $g eq "END\r\n" || $g eq "VALUE s$i 0 10\r\n0123456789\r\nEND\r\n";
}
is($lost, 0, 'items of the moved page are gone or intact, never corrupt');

# automove
reply_is(send_recv($sock, "slabs automove 1\r\n"), "OK\r\n", 'automove 1');
is($server->stats('settings')->{slab_automove}, 1, 'settings slab_automove 1');
reply_is(send_recv($sock, "slabs automove 2\r\n"), "OK\r\n", 'automove 2');
reply_is(send_recv($sock, "slabs automove 0\r\n"), "OK\r\n", 'automove 0');
is($server->stats('settings')->{slab_automove}, 0, 'settings slab_automove 0');
reply_is(send_recv($sock, "slabs automove 3\r\n"), "ERROR\r\n", 'automove 3 refused');

# cache_memlimit
reply_is(send_recv($sock, "cache_memlimit 100\r\n"), "OK\r\n", 'cache_memlimit 100');
is($server->stats->{limit_maxbytes}, 100 * 1024 * 1024, 'limit_maxbytes follows');
reply_is(send_recv($sock, "cache_memlimit 0\r\n"),
    "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n", 'cache_memlimit too small');
reply_is(send_recv($sock, "cache_memlimit abc\r\n"), "ERROR\r\n", 'cache_memlimit bad value');
reply_is(send_recv($sock, "cache_memlimit 64 noreply\r\nversion\r\n"), "VERSION 1.6.18\r\n",
    'cache_memlimit noreply');
ok($server->alive, 'server alive');

# The class ladder and each item's class, side by side with Debian's
# memcached (doc/protocol.md "Storage"): with -L every class has a page,
# so `stats slabs` lists them all; memcached's are ours, and ours has one
# more, of exactly -I (items memcached splits into chunks).  Values with
# and without client flags land in the class memcached puts them in.
SKIP: {
    skip 'no stock memcached to compare with', 4
        unless -x stock_bin() && !server_is_stock();
    my %ladder;
    my %class_of;
    my @sizes = map { ($_, $_ + 1, $_ + 4) } 36, 60, 64, 88, 120, 500, 1000,
        4000, 60000, 400000;
    for my $args ('-m 128 -L', '-m 128 -L -f 1.5 -n 100') {
        for my $who ('memcached', 'ours') {
            my $srv = $who eq 'ours' ? new_memcached($args)
                                     : stock_memcached($args);
            my $sl = $srv->stats('slabs');
            $ladder{$args}{$who} = [ map { $sl->{"$_:chunk_size"} }
                sort { $a <=> $b } map { /^(\d+):chunk_size$/ ? $1 : () }
                keys %$sl ];
            my $sk = $srv->sock;
            for my $len (@sizes) {
                for my $flags (0, 7) {
                    send_recv($sk, "set k$len $flags 0 $len\r\n"
                        . ('x' x $len) . "\r\n");
                    my $it = mem_stats($sk, 'items');
                    my @c = map { /^items:(\d+):number$/ ? $1 : () }
                        grep { $it->{$_} } keys %$it;
                    $class_of{$args}{$who}{"$len/$flags"} =
                        join ',', sort { $a <=> $b } @c;
                    send_recv($sk, "delete k$len\r\n");
                }
            }
            $srv->stop;
        }
        my ($m, $o) = @{ $ladder{$args} }{qw(memcached ours)};
        is_deeply([ @$o[0 .. $#$m] ], $m,
            "$args: memcached's classes are ours (" . scalar(@$m) . ')');
        is_deeply($class_of{$args}{ours}, $class_of{$args}{memcached},
            "$args: each value is in memcached's class, flags or not");
    }
}

# `slabs reassign`'s argument checks, reply by reply with memcached's
SKIP: {
    skip 'no stock memcached to compare with', 1
        unless -x stock_bin() && !server_is_stock();
    my @cmds = map { "slabs reassign $_\r\n" } '99 99', '0 1', '1 0',
        '-1 -1', '-2 1', '-1 0', '0 0', '64 1', '1 2', '-1 2', '1 -1';
    my %replies;
    for my $who ('memcached', 'ours') {
        my $srv = $who eq 'ours' ? new_memcached('-m 64 -o slab_reassign')
                                 : stock_memcached('-m 64 -o slab_reassign');
        my $sk = $srv->sock;
        $replies{$who} = [ map { send_recv($sk, $_) } @cmds ];
        $srv->stop;
    }
    is_deeply($replies{ours}, $replies{memcached},
        'slabs reassign: the same replies as memcached for bad, same, '
        . 'any-source and pool-class arguments');
}

done_testing();
