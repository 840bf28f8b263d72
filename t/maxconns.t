#!/usr/bin/perl
# maxconns.t: -c limits client connections.  Like memcached 1.6.18 (with
# maxconns_fast, the default), a connection over the limit is answered
# "ERROR Too many open connections" and closed; established connections
# keep working, rejected_connections counts the refusals, and closing
# connections makes room again.  (How many fds the server reserves for
# itself differs between implementations, so only bounds are checked.)
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use MemcachedTest;

my $max = 30;
my $server = new_memcached("-c $max -t 1");
my (@open, $refused_reply, $refused_closed);
for my $i (1 .. 2 * $max) {
    my $c = $server->try_sock(2);
    last unless $c;
    my $r = send_recv($c, "version\r\n", timeout => 3);
    if ($r eq "VERSION 1.6.18\r\n") {
        push @open, $c;
        next;
    }
    $refused_reply = $r;
    $refused_closed = $r =~ /<EOF>\z/ || wait_closed($c, 3);
    last;
}
my $n = scalar @open;
ok($n >= 1 && $n <= $max, "between 1 and $max connections accepted ($n)");
ok(defined $refused_reply, 'a connection beyond the limit was refused');
like($refused_reply // '', qr/\AERROR Too many open connections\r\n(?:<EOF>)?\z/,
    'refusal message: ' . escape_bytes($refused_reply));
ok($refused_closed, 'refused connection is closed by the server');

# established connections still work
my $bad = 0;
for my $c (@open) {
    $bad++ unless send_recv($c, "set k 0 0 1\r\nv\r\n") eq "STORED\r\n";
}
is($bad, 0, 'all accepted connections still work');

# make room: close three, new connections succeed
close $_ for splice(@open, 0, 3);
sleep 0.5;
my $new = $server->try_sock(2);
reply_is($new ? send_recv($new, "get k\r\n") : '<no connection>',
    "VALUE k 0 1\r\nv\r\nEND\r\n", 'a new connection works after others closed');
my $st = mem_stats($new);
cmp_ok($st->{rejected_connections}, '>=', 1, 'rejected_connections counted');
is($st->{max_connections}, $max, 'max_connections');
ok($server->alive, 'server alive');

# A burst: 2 * -c connections made at once, before the server has accepted
# any, must not get past the limit either (accepted connections were once
# counted only when a worker took them over, so a burst let them all in).
{
    my $burst = new_memcached("-c $max -t 1");
    my @socks = grep { defined } map { $burst->try_sock(2) } 1 .. 2 * $max;
    my $accepted = 0;
    for my $c (@socks) {
        $accepted++ if send_recv($c, "version\r\n", timeout => 3)
            eq "VERSION 1.6.18\r\n";
    }
    cmp_ok($accepted, '<=', $n,
           "a burst of " . scalar(@socks) . " connects: $accepted accepted, "
           . "no more than one at a time found room for ($n)");
    cmp_ok($accepted, '>=', 1, '... and some were');
    close $_ for @socks;
}

done_testing();
