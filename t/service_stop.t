#!/usr/bin/perl
# service_stop.t: stopping the daemon as tiercached.service does
# (doc/restart.md "Restarts under systemd").
#   - the unit's stop signal, read from dist/tiercached.service.in's
#     KillSignal=, sent to a server under load with a D-zone and an
#     nvm_path= N-zone (sized so that every D item finds a free N chunk),
#     then a restart: every key present before the stop, D and N, is
#     back with its value (the share is noted); the same with -e beside
#     the N-zone;
#   - a full N-zone: the stop saves every D item into the chunks of the
#     N items the CLOCK evicts, quickly; as many keys come back as the
#     N-zone held, the newest (D's) among them;
#   - sd_notify: with NOTIFY_SOCKET on a datagram socket of the test,
#     READY=1 arrives once the server answers, and the stop signal brings
#     STOPPING=1 with EXTEND_TIMEOUT_USEC= (the daemon's --stop-plan
#     figure); SIGTERM brings STOPPING=1 alone.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use IO::Socket::UNIX;
use IO::Select;
use POSIX qw(:sys_wait_h);
use Socket qw(SOCK_DGRAM);
use Time::HiRes qw(time sleep);
use MemcachedTest;

my ($signal) = read_file(repo_root() . '/dist/tiercached.service.in')
    =~ /^KillSignal=SIG(\w+)$/m;
ok($signal, "the unit's stop signal: SIG" . ($signal // '?'));
$signal //= 'TERM';

my $KEYS = 6000;           # 1000-byte values: D (-m 4) full, N not
my $value_of = sub { my ($i) = @_; return "$i:" . ('d' x (900 + $i % 90)) };

# Load, stop with the unit's signal while clients write, restart, count
sub stop_and_restart {
    my ($what, $extra) = @_;
    my $zone = shm_file();
    my $args = "-m 4 -t 2 -I 64k $extra -o nvm_path=$zone,nvm_size=32m";
    my $srv = new_memcached($args);
    my $s = $srv->sock;
    my $batch = '';
    for my $i (1 .. $KEYS) {
        my $v = $value_of->($i);
        $batch .= "set k:$i 0 0 " . length($v) . " noreply\r\n$v\r\n";
    }
    is(send_sync($s, $batch, timeout => 60), '', "$what: $KEYS keys stored");
    my $tier = $srv->stats('tier');
    ok($tier->{d_items} > 0 && $tier->{n_items} > 0,
        "$what: D holds $tier->{d_items} keys, N $tier->{n_items}");
    # a load of other keys while the signal arrives
    my @loaders;
    for my $l (1 .. 2) {
        my $pid = fork();
        die "fork: $!" unless defined $pid;
        if ($pid == 0) {
            my $c = $srv->try_sock(5) or POSIX::_exit(0);
            for (my $i = 0; ; $i++) {
                my $r = send_recv($c, "set load:$l:$i 0 0 5\r\nhello\r\n"
                    . "get k:" . (1 + $i % $KEYS) . "\r\n", n => 2);
                last if $r =~ /<(?:EOF|TIMEOUT|SENDFAIL)>/;
            }
            POSIX::_exit(0);
        }
        push @loaders, $pid;
    }
    my $sets = $srv->stats->{cmd_set};
    wait_until(30, sub { $srv->stats->{cmd_set} > $sets + 200 });
    kill $signal, $srv->pid;
    ok($srv->wait_exit(60 * slowdown()), "$what: SIG$signal stops it");
    is(WEXITSTATUS($srv->exit_status // 256), 0, "$what: exit status 0")
        or diag($srv->log_text);
    for my $pid (@loaders) {
        wait_until(10, sub { waitpid($pid, WNOHANG) == $pid })
            or (kill('KILL', $pid), waitpid($pid, 0));
    }
    my $again = new_memcached($args);
    $s = $again->sock;
    my ($back, $wrong) = (0, 0);
    for (my $i = 1; $i <= $KEYS; $i += 100) {
        my @keys = map { "k:$_" } $i .. ($i + 99 > $KEYS ? $KEYS : $i + 99);
        my $r = send_recv($s, "get @keys\r\n", timeout => 10);
        while ($r =~ /\GVALUE k:(\d+) \d+ (\d+)\r\n/gc) {
            my $v = substr $r, pos($r), $2;
            pos($r) += $2 + 2;
            $v eq $value_of->($1) ? $back++ : $wrong++;
        }
    }
    note(sprintf('%s: %d of %d keys back after SIG%s (%.1f%%)', $what,
        $back, $KEYS, $signal, 100 * $back / $KEYS));
    is($wrong, 0, "$what: no key back with a wrong value");
    is($back, $KEYS, "$what: every key present before the stop is back");
    $again->stop;
}

stop_and_restart('N-zone', '');
my $memdir = tempdir('svcstop-XXXXXX', TMPDIR => 1, CLEANUP => 1);
chmod 0777, $memdir;
stop_and_restart('-e beside the N-zone', "-e $memdir/memfile");

# ---- a full N-zone: the D items take the coldest N items' chunks ----
{
    my $zone = shm_file();
    my $args = "-m 4 -t 2 -I 64k -o nvm_path=$zone,nvm_size=16m";
    my $srv = new_memcached($args);
    my $s = $srv->sock;
    my $keys = 40_000;     # 1000-byte values: both zones over-full
    for (my $i = 1; $i <= $keys; $i += 1000) {
        my $batch = join '', map {
            my $v = $value_of->($_);
            "set f:$_ 0 0 " . length($v) . " noreply\r\n$v\r\n";
        } $i .. $i + 999;
        send_sync($s, $batch, timeout => 60);
    }
    close $s;
    my $tier = $srv->stats('tier');
    ok($tier->{n_evictions} > 0, "full N-zone: $tier->{n_evictions} N "
       . 'evictions while storing');
    kill $signal, $srv->pid;
    ok($srv->wait_exit(60 * slowdown()), "full N-zone: SIG$signal stops it "
       . 'within the deadline');
    like($srv->log_text, qr/graceful\ stop:\ $tier->{d_items}\ D-zone\ items
                            \ written\ to\ the\ N-zone,\ 0\ did\ not\ fit/x,
         "full N-zone: all $tier->{d_items} D items saved");
    my $again = new_memcached($args);
    my $back = $again->stats->{curr_items};
    # each D item took a free N chunk or an evicted item's
    ok($back >= $tier->{n_items} && $back <= $tier->{n_items}
       + $tier->{d_items}, "full N-zone: $back keys back, at least as many "
       . "as the N-zone held ($tier->{n_items})");
    # the newest keys were in D: the hot set is back whole
    $s = $again->sock;
    my $newest = 0;
    for my $i ($keys - 199 .. $keys) {
        my $v = $value_of->($i);
        $newest++ if send_recv($s, "get f:$i\r\n") eq "VALUE f:$i 0 "
            . length($v) . "\r\n$v\r\nEND\r\n";
    }
    close $s;
    is($newest, 200, 'full N-zone: the 200 newest keys are all back');
    $again->stop;
}

# ---- sd_notify
my $ndir = tempdir('notify-XXXXXX', TMPDIR => 1, CLEANUP => 1);
chmod 0777, $ndir;
my $npath = "$ndir/notify";
my $notify = IO::Socket::UNIX->new(Type => SOCK_DGRAM, Local => $npath)
    or die "notify socket: $!";
chmod 0666, $npath;        # the server may run as nobody

# the next datagram within the deadline, or ''
sub next_notice {
    my ($timeout) = @_;
    my $sel = IO::Select->new($notify);
    return '' unless $sel->can_read($timeout * slowdown());
    my $msg = '';
    $notify->recv($msg, 4096);
    return $msg;
}

my $zone = shm_file();
my $args = "-m 4 -o nvm_path=$zone,nvm_size=32m";
my (undef, $plan) = run_binary(server_bin(), ['--stop-plan', split ' ',
    $args], 10);
my ($plan_s) = $plan =~ /timeout: (\d+) s/;
ok($plan_s, "--stop-plan: a graceful stop asks for ${\($plan_s // '?')} s");
my $srv = new_memcached($args, env => { NOTIFY_SOCKET => $npath });
is(next_notice(10), 'READY=1', 'READY=1 once the server answers');
kill $signal, $srv->pid;
my $stopping = next_notice(30);
like($stopping, qr/^STOPPING=1$/m, "SIG$signal: STOPPING=1");
my ($usec) = $stopping =~ /^EXTEND_TIMEOUT_USEC=(\d+)$/m;
is($usec, ($plan_s // 0) * 1_000_000,
    "SIG$signal: EXTEND_TIMEOUT_USEC= as --stop-plan says");
ok($srv->wait_exit(60 * slowdown()), "SIG$signal: the server exits");

$srv = new_memcached($args, env => { NOTIFY_SOCKET => $npath });
is(next_notice(10), 'READY=1', 'READY=1 again');
kill 'TERM', $srv->pid;
is(next_notice(30), 'STOPPING=1', 'SIGTERM: STOPPING=1 and no extension');
ok($srv->wait_exit(30 * slowdown()), 'SIGTERM: the server exits');

done_testing();
