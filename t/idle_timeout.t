#!/usr/bin/perl
# idle_timeout.t: -o idle_timeout=N closes a client connection that has
# waited more than N seconds for its next command (checked about once a
# second) and counts it in `stats` idle_kicks; a connection that keeps
# sending commands, or is in the middle of one (its value still arriving),
# stays open.  memcached 1.6.18 takes any integer (0 or less: off) and
# lists idle_kicks only while idle_timeout is set.  When Debian's memcached
# is installed the same checks run against it side by side.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use MemcachedTest;

my $VERSION = "VERSION 1.6.18\r\n";
my $TIMEOUT = 2;

my @subjects = ({ name => 'tiercached', start => \&new_memcached });
if (-x stock_bin() && !server_is_stock()) {
    push @subjects, { name => 'memcached', start => \&stock_memcached };
} else {
    diag('no stock memcached: checking this server only');
}

for my $s (@subjects) {
    $s->{server} = $s->{start}->("-o idle_timeout=$TIMEOUT -t 2");
    $s->{idle} = $s->{server}->sock;
    $s->{busy} = $s->{server}->sock;
    $s->{mid} = $s->{server}->sock;
    reply_is(send_recv($s->{idle}, "version\r\n"), $VERSION,
        "$s->{name}: idle connection served once");
    $s->{idle_since} = time;
    mc_send($s->{mid}, "set k 0 0 10\r\nabc");
    $s->{busy_bad} = 0;
}

# `version` every 0.5 s on the busy connections while watching the idle
# ones; after 4 s the value of the connection inside a `set` arrives (it
# is closed by us then, which is no kick), and the loop ends once every
# idle connection is closed, or after 12 s.
my $start = time;
while (1) {
    my $elapsed = time - $start;
    for my $s (@subjects) {
        $s->{busy_bad}++
            unless send_recv($s->{busy}, "version\r\n") eq $VERSION;
        $s->{idle_closed} //= time - $s->{idle_since}
            if wait_closed($s->{idle}, 0.01);
        if ($elapsed >= 4 && !defined $s->{mid_reply}) {
            $s->{mid_reply} =
                send_recv($s->{mid}, "defghij\r\nversion\r\n", n => 2);
            close $s->{mid};
        }
    }
    last if $elapsed >= 12
        || ($elapsed >= 4 && !grep { !defined $_->{idle_closed} } @subjects);
    sleep 0.5;
}

for my $s (@subjects) {
    my $n = $s->{name};
    is($s->{busy_bad}, 0, "$n: a connection sending commands stays open");
    reply_is($s->{mid_reply}, "STORED\r\n$VERSION",
        "$n: a connection inside a command stays open");
    ok(defined $s->{idle_closed},
        sprintf('%s: an idle connection is closed (after %.1f s)',
            $n, $s->{idle_closed} // -1));
    cmp_ok($s->{idle_closed} // 0, '>=', $TIMEOUT - 0.5,
        "$n: ... but not before idle_timeout");
    my $st = mem_stats($s->{busy});
    is($st->{idle_kicks}, 1, "$n: idle_kicks counts the one kick");
    ok($s->{server}->alive, "$n: server alive");
}

# the option's values and the stats line
for my $s (@subjects) {
    my $n = $s->{name};
    my $off = eval { $s->{start}->('-o idle_timeout=-1') };
    ok($off, "$n: starts with idle_timeout=-1") or diag($@);
    SKIP: {
        skip "$n: did not start", 2 unless $off;
        my $sock = $off->sock;
        is(mem_stats($sock, 'settings')->{idle_timeout}, -1,
            "$n: idle_timeout=-1 reported as given");
        is(mem_stats($sock)->{idle_kicks}, 0,
            "$n: idle_kicks listed when set");
    }
    my $plain = $s->{start}->('');
    ok(!exists $plain->stats->{idle_kicks},
        "$n: no idle_kicks line without idle_timeout");
}

done_testing();
