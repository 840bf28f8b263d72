#!/usr/bin/perl
# shutdown.t: stopping the server under load (doc/restart.md "Signals and
# commands").  A server with a small D-zone and a small N-zone, both
# holding items, serves a mixed load from several connections (sets,
# gets and multigets of keys in both zones, deletes, large values, one
# client that never reads its replies) when the stop arrives: SIGTERM 20
# times and SIGINT 20 times (some runs with a second signal in the middle
# of the stop), SIGUSR1, and with -A `shutdown` and `shutdown graceful`.
# Every time the server must exit by itself with status 0 within a
# deadline, with no sanitizer report in its log.  SIGTERM also stops a
# server with UDP connections, idle_timeout timers and accept paused at
# -c, and a daemon (-d -P), which removes its pid file.  Without -A
# `shutdown` is refused and the server keeps running.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use IO::Select;
use IO::Socket::INET;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(time sleep);
use MemcachedTest;

srand($ENV{SHUTDOWN_SEED} // time);
note('seed: set SHUTDOWN_SEED to repeat a run');

my $RUNS = 20;
my $ARGS = '-m 8 -t 4 -o nvm_size=32m';
my $KEYS = 1500;               # 8000-byte values: about 12 MB, D holds 8
my $LOADERS = 4;
my $EXIT_DEADLINE = 30;        # seconds; sanitizer builds stop slower
my $SANITIZER_RE = qr/ERROR: AddressSanitizer|ERROR: LeakSanitizer|
                      runtime\ error|ThreadSanitizer/x;

my $slowest_stop = 0;

my $value_8k = 'v' x 8000;
my $value_big = join '', map { chr(97 + $_ % 26) } 1 .. 200_000;

# Fill the server: early keys land in D, the rest in N once D is full.
sub preload {
    my ($srv) = @_;
    my $s = $srv->sock;
    my $batch = '';
    for my $i (0 .. $KEYS - 1) {
        $batch .= "set k:$i $i 0 8000 noreply\r\n$value_8k\r\n";
        if ($i % 100 == 99) {
            send_sync($s, $batch, timeout => 20);
            $batch = '';
        }
    }
    send_sync($s, $batch . "set big:0 0 0 200000\r\n$value_big\r\n",
        timeout => 20);
    close $s;
}

sub random_key { return 'k:' . int rand $KEYS }

sub random_command {
    my $p = rand;
    if ($p < 0.30) {
        return 'get ' . random_key() . "\r\n";
    }
    if ($p < 0.45) {
        return 'get ' . join(' ', map { random_key() } 1 .. 12) . "\r\n";
    }
    if ($p < 0.55) {
        return 'gets ' . random_key() . " big:0\r\n";
    }
    if ($p < 0.70) {
        my $len = (100, 3000, 8000)[int rand 3];
        return 'set ' . random_key() . " 1 0 $len\r\n"
            . substr($value_8k, 0, $len) . "\r\n";
    }
    if ($p < 0.75) {
        return "set big:0 2 0 200000\r\n$value_big\r\n";
    }
    if ($p < 0.85) {
        return 'delete ' . random_key() . "\r\n";
    }
    return 'touch ' . random_key() . " 0\r\n";
}

# A load client: batches of commands until the server goes away.  It
# runs in a child, which must leave through _exit: MemcachedTest's END
# would kill the server.
sub start_loader {
    my ($srv) = @_;
    my $pid = fork();
    die "fork: $!" unless defined $pid;
    return $pid if $pid;
    srand($$ ^ int(time * 1000));
    my $s = $srv->try_sock(5) or POSIX::_exit(0);
    while (1) {
        my $batch = join '', map { random_command() } 1 .. 20;
        my $r = send_sync($s, $batch, timeout => 20);
        last if $r =~ /<(?:EOF|TIMEOUT|SENDFAIL)>\z/;
    }
    POSIX::_exit(0);
}

# A client that asks for megabytes of replies and never reads them: its
# connection is blocked writing, holding item references, when the stop
# comes.
sub start_stalled_client {
    my ($srv) = @_;
    my $s = $srv->sock;
    my $keys = join ' ', map { "k:$_" } 0 .. 99;
    mc_send($s, "get $keys big:0\r\n" x 10, 10);
    return $s;
}

sub reap_loaders {
    my (@pids) = @_;
    my $deadline = time + 10;
    for my $pid (@pids) {
        while (waitpid($pid, WNOHANG) == 0) {
            if (time > $deadline) {
                kill 'KILL', $pid;
                waitpid($pid, 0);
                last;
            }
            sleep 0.02;
        }
    }
}

# Start a loaded server, put it under load, stop it with $stop->($srv)
# and check how it went.  Returns '' when all is well, else why not.
sub stop_under_load {
    my ($extra, $stop) = @_;
    my $srv;
    my $why = eval { stop_loaded_server($extra, $stop, \$srv) };
    return $why if defined $why;
    $srv->stop if $srv;
    my $log = $srv ? $srv->log_text : '';
    diag("died: $@; log:\n" . substr($log, 0, 4000));
    return "died: $@";
}

sub stop_loaded_server {
    my ($extra, $stop, $srvref) = @_;
    my $srv = $$srvref = new_memcached("$ARGS $extra");
    preload($srv);
    my $tier = $srv->tier_stats;
    my $why = '';
    if (!($tier->{d_items} && $tier->{n_items})) {
        $why = 'both zones should hold items: d_items '
            . ($tier->{d_items} // '?') . ', n_items '
            . ($tier->{n_items} // '?');
    }
    my $stalled = start_stalled_client($srv);
    my $gets0 = $srv->stats->{cmd_get};
    my @pids = map { start_loader($srv) } 1 .. $LOADERS;
    my $busy = wait_until(10, sub {
        my $s = $srv->try_sock or return 'gone';
        my $gets = mem_stats($s)->{cmd_get} // 0;
        return $gets > $gets0 + 100 * $LOADERS;
    });
    $why ||= 'the load did not start' unless $busy;
    $why ||= 'the server died under load' unless $srv->alive;
    my $t0 = time;
    # a pid of 0 (server reaped) would signal our own process group
    $stop->($srv) if $srv->alive;
    my $exited = $srv->wait_exit($EXIT_DEADLINE);
    my $secs = time - $t0;
    $slowest_stop = $secs if $secs > $slowest_stop;
    reap_loaders(@pids);
    close $stalled;
    if (!$exited) {
        $srv->stop;
        $why ||= "still running ${EXIT_DEADLINE}s after the stop";
    }
    my $status = $srv->exit_status // -1;
    if ($exited && $status != 0) {
        $why ||= ($status & 127) ? 'killed by signal ' . ($status & 127)
                                 : 'exit status ' . ($status >> 8);
    }
    my $log = $srv->log_text;
    $why ||= 'sanitizer report' if $log =~ $SANITIZER_RE;
    if ($why) {
        diag("$why (stop took " . sprintf('%.2f', $secs) . " s); log:\n"
            . substr($log, 0, 4000));
    }
    return $why;
}

sub signal_stop {
    my ($sig, $second) = @_;
    return sub {
        my ($srv) = @_;
        kill $sig, $srv->pid;
        if ($second) {
            sleep rand 0.02;
            kill $second, $srv->pid;
        }
    };
}

# The command's connection is closed by the server, which then exits.
sub command_stop {
    my ($cmd) = @_;
    return sub {
        my ($srv) = @_;
        my $s = $srv->sock;
        my $r = send_recv($s, "$cmd\r\n");
        diag("$cmd answered " . escape_bytes($r)) unless $r eq '<EOF>';
    };
}

for my $sig (qw(TERM INT)) {
    my $failed = 0;
    for my $run (1 .. $RUNS) {
        # every fifth run, a second signal arrives during the stop
        my $second = $run % 5 == 0 ? ($sig eq 'TERM' ? 'INT' : 'TERM')
                                   : undef;
        my $why = stop_under_load('', signal_stop($sig, $second));
        if ($why) {
            $failed++;
            diag("SIG$sig run $run: $why");
        }
    }
    is($failed, 0, "SIG$sig under load, $RUNS runs: exit 0 every time");
}

is(stop_under_load('', signal_stop('USR1')), '',
   'SIGUSR1 under load: graceful stop, exit 0');

# with -v the stop says which signal it handled: `shutdown` is SIGINT,
# `shutdown graceful` SIGUSR1, as in memcached 1.6
for my $case (['shutdown', 'Interrupt'],
              ['shutdown graceful', 'User defined signal 1']) {
    my ($cmd, $signame) = @$case;
    my $log;
    my $why = stop_under_load('-A -v', sub {
        my ($srv) = @_;
        command_stop($cmd)->($srv);
        $srv->wait_exit($EXIT_DEADLINE);
        $log = $srv->log_text;
    });
    is($why, '', "$cmd (-A) under load: exit 0");
    like($log, qr/Signal handled: \Q$signame\E\./,
         "$cmd raises SIG" . ($signame eq 'Interrupt' ? 'INT' : 'USR1'));
}

# What only some servers have: the UDP connections of every worker, the
# workers' idle_timeout timers, and the accept pause with its timer armed
# (no_maxconns_fast holds connections past -c in the listen queue).
{
    my $max = 30;
    my $srv = new_memcached("-c $max -t 2 -o idle_timeout=60,"
        . 'no_maxconns_fast', udp => 1);
    my $ctl = $srv->sock;
    # one at a time, each served before the next: a burst could all be
    # accepted before the workers count them
    my @held;
    for (1 .. 2 * $max) {
        my $c = $srv->try_sock(2) or last;
        push @held, $c;
        last if send_recv($c, "version\r\n", timeout => 2) ne
            "VERSION 1.6.18\r\n";
    }
    is(mem_stats($ctl)->{accepting_conns}, 0, 'accept paused at -c');
    my $u = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
        PeerPort => $srv->udpport, Proto => 'udp') or die "udp: $!";
    $u->send(pack('nnnn', 7, 0, 1, 0) . "version\r\n");
    my $dgram = '';
    IO::Select->new($u)->can_read(5) and $u->recv($dgram, 65536);
    is(substr($dgram, 8), "VERSION 1.6.18\r\n", 'UDP served');
    kill 'TERM', $srv->pid;
    ok($srv->wait_exit($EXIT_DEADLINE), 'UDP, idle_timeout, paused accept: '
        . 'SIGTERM stops the server');
    is($srv->exit_status, 0, 'UDP, idle_timeout, paused accept: exit 0');
    unlike($srv->log_text, $SANITIZER_RE, 'no sanitizer report');
}

{
    my $srv = new_memcached($ARGS);
    my $s = $srv->sock;
    for my $cmd ('shutdown', 'shutdown graceful') {
        reply_is(send_recv($s, "$cmd\r\n"),
                 "ERROR: shutdown not enabled\r\n", "$cmd needs -A");
    }
    reply_is(send_recv($s, "version\r\n"), "VERSION 1.6.18\r\n",
             'without -A the server keeps serving');
    kill 'TERM', $srv->pid;
    ok($srv->wait_exit($EXIT_DEADLINE), 'idle server: SIGTERM stops it');
    is($srv->exit_status, 0, 'idle server: exit 0');
}

# -d -P: the daemon removes its pid file as its last step.  It is not
# our child (it may stay a zombie after exit): the pid file tells.
{
    my $dir = tempdir('shutdown-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    chmod 0777, $dir;    # the server may run as nobody
    my $pidfile = "$dir/mc.pid";
    my @argv = ('-d', '-P', $pidfile, '-p', free_port(), '-U', 0,
                '-l', '127.0.0.1', split(' ', $ARGS),
                $> == 0 ? ('-u', 'nobody') : ());
    my ($code, $out) = run_binary(server_bin(), \@argv, 10);
    is($code, 0, '-d: the parent exits 0') or diag($out);
    my $pid = wait_until(10, sub {
        open my $fh, '<', $pidfile or return;
        my $line = <$fh> // '';
        return $line =~ /^(\d+)\n\z/ ? $1 : undef;
    });
    ok($pid, '-d -P: the pid file names the daemon');
    SKIP: {
        skip 'no daemon to stop', 1 unless $pid;
        kill 'TERM', $pid;
        ok(wait_until(10, sub { !-e $pidfile }),
           '-d -P: SIGTERM stops the daemon, which removes its pid file');
        kill 'KILL', $pid if -e $pidfile;
    }
}

note(sprintf 'slowest stop under load: %.2f s', $slowest_stop);
done_testing();
