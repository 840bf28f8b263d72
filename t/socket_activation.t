#!/usr/bin/perl
# socket_activation.t: the daemon under systemd's socket activation
# (doc/restart.md "Restarts under systemd").  The test holds a listening
# TCP socket as systemd does and starts the server with it as descriptor
# 3 (LISTEN_FDS=1, LISTEN_PID its pid): the server serves it, non-blocking
# and close-on-exec, and opens no -p port of its own.  Then a client
# keeps connecting and doing set/get while the server stops gracefully
# (SIGUSR1, with an nvm_path= N-zone, so the next start has a restart
# scan to do) and a second server starts on the same socket: no
# connection refused, no error, every key back; the longest wait for an
# answer is noted.  Without LISTEN_FDS, -p works as before, and
# LISTEN_FDS with the LISTEN_PID of another process is ignored.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use IO::Socket::INET;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(time sleep);
use MemcachedTest;

my $ARGS_BASE = '-m 8 -t 2 -I 64k';
my $PRELOAD = 10000;                  # 1000-byte values: D full, N too
my $REQUEST_TIMEOUT = 60 * slowdown();

sub listening_socket {
    return IO::Socket::INET->new(
        LocalAddr => '127.0.0.1', LocalPort => 0, Proto => 'tcp',
        Listen => 1024, ReuseAddr => 1) || die "listen: $!";
}

# O_NONBLOCK and O_CLOEXEC of the server's descriptor 3, from /proc
sub fd_flags {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/fdinfo/3" or return;
    my ($flags) = map { /^flags:\s*([0-7]+)/ ? oct $1 : () } <$fh>;
    return $flags;
}

# ---- the server serves the socket it is given
my $listen = listening_socket();
my $zone = shm_file();
# -p names a port the inherited socket must replace
my $unused_port = free_port();
my $args = "$ARGS_BASE -p $unused_port -l 127.0.0.1"
    . " -o nvm_path=$zone,nvm_size=32m,no_lru_crawler";
my $srv = activated_memcached($listen, $args);
my $flags = fd_flags($srv->pid);
SKIP: {
    skip 'no /proc/PID/fdinfo', 2 unless defined $flags;
    ok($flags & 04000, 'the inherited socket is non-blocking in the server');
    ok($flags & 02000000, 'the inherited socket is close-on-exec');
}
ok(!IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $unused_port,
    Timeout => 2), 'the inherited socket replaces -p/-l: nothing on -p');
my $s = $srv->sock;
my $value = 'v' x 1000;
my $batch = '';
for my $i (1 .. $PRELOAD) {
    $batch .= "set pre:$i $i 0 1000 noreply\r\n$value\r\n";
}
is(send_sync($s, $batch, timeout => 30), '', "$PRELOAD keys preloaded");
my $tier = $srv->stats('tier');
ok($tier->{d_items} > 0 && $tier->{n_items} > 0,
    "both zones hold keys (D $tier->{d_items}, N $tier->{n_items})");
close $s;

# ---- a client that keeps connecting, through a graceful restart
my $work = tempdir('activation-XXXXXX', TMPDIR => 1, CLEANUP => 1);

# One set and one get on a new connection: 'ok', 'refused', 'retry' (the
# connection closed before any answer: the stopping server never read the
# request, so a client sends it again) or what went wrong.
sub one_request {
    my ($port, $key, $val, $longest) = @_;
    my $t0 = time;
    my $c = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
        Proto => 'tcp', Timeout => $REQUEST_TIMEOUT);
    return $!{ECONNREFUSED} ? 'refused' : "connect: $!" unless $c;
    binmode $c;
    my $len = length $val;
    return 'retry' unless mc_send($c,
        "set $key 0 0 $len\r\n$val\r\nget $key\r\n", $REQUEST_TIMEOUT);
    my $want = "STORED\r\nVALUE $key 0 $len\r\n$val\r\nEND\r\n";
    my $got = read_bytes($c, length $want, $REQUEST_TIMEOUT);
    my $waited = time - $t0;
    $$longest = $waited if $waited > $$longest;
    if (!defined $got) {
        my $rest = drain($c, 0);
        return 'retry' if $rest eq '' && MemcachedTest::is_eof($c);
        return 'short answer: ' . escape_bytes($rest);
    }
    return $got eq $want ? 'ok' : 'wrong answer: ' . escape_bytes($got);
}

sub client_loop {
    my ($port, $out) = @_;
    my %n = (ok => 0, refused => 0, retry => 0, error => 0);
    my $longest = 0;
    open my $keys, '>', "$out.keys" or POSIX::_exit(2);
    $keys->autoflush(1);
    my $i = 0;
    until (-e "$work/stop") {
        $i++;
        my $val = "$i-" . ('x' x (50 + $i % 200));
        my $r;
        do {
            $r = one_request($port, "loop:$i", $val, \$longest);
            $n{retry}++ if $r eq 'retry';
        } while ($r eq 'retry');
        if ($r eq 'ok') {
            $n{ok}++;
            print $keys "loop:$i $val\n";
        } elsif ($r eq 'refused') {
            $n{refused}++;
        } else {
            $n{error}++;
            $n{first_error} //= $r;
        }
    }
    open my $fh, '>', "$out.tmp" or POSIX::_exit(2);
    print $fh "$_ $n{$_}\n" for grep { defined $n{$_} } keys %n;
    printf $fh "longest %.3f\n", $longest;
    close $fh;
    rename "$out.tmp", $out;
    POSIX::_exit(0);
}

my $port = $listen->sockport;
my $client = fork();
die "fork: $!" unless defined $client;
client_loop($port, "$work/result") if $client == 0;

my $sets_before = $srv->stats->{cmd_set};
ok(wait_until(30, sub { $srv->stats->{cmd_set} >= $sets_before + 100 }),
    'the client loop runs against the first server');
ok($srv->stop_graceful(60 * slowdown()),
    'SIGUSR1: the first server stops gracefully, exit status 0')
    or diag($srv->log_text);
my $t_stop = time;
my $srv2 = activated_memcached($listen, $args, start_timeout => 60);
note(sprintf('second server answering %.2f s after the first exited',
    time - $t_stop));
ok(wait_until(30, sub { ($srv2->stats->{cmd_set} // 0) >= 100 }),
    'the client loop goes on against the second server');
like($srv2->stats('tier')->{restart_kind} // '', qr/warm/,
    'the second server restarted warm from the N-zone');
open my $stop, '>', "$work/stop" or die;
close $stop;
ok(wait_until(60, sub { waitpid($client, WNOHANG) == $client }),
    'the client loop ends');
my %res = map { split ' ' , $_, 2 } split /\n/, read_file("$work/result");
is($res{refused}, 0, 'no connection refused across the restart');
is($res{error}, 0, 'no error across the restart')
    or diag($res{first_error});
ok($res{ok} > 200, "requests answered: $res{ok}");
note("requests sent again after their connection closed unanswered: "
    . "$res{retry}");
note("longest wait for an answer: $res{longest} s");

# every key, the preloaded ones and the loop's, with its value
my %want = map { ("pre:$_" => $value) } 1 .. $PRELOAD;
for (split /\n/, read_file("$work/result.keys")) {
    my ($k, $v) = split ' ', $_, 2;
    $want{$k} = $v;
}
my ($back, $wrong) = (0, 0);
$s = $srv2->sock;
my @keys = sort keys %want;
while (my @chunk = splice @keys, 0, 100) {
    my $r = send_recv($s, "get @chunk\r\n", timeout => 10);
    my %got;
    while ($r =~ /\GVALUE (\S+) \d+ (\d+)\r\n/gc) {
        $got{$1} = substr $r, pos($r), $2;
        pos($r) += $2 + 2;
    }
    for my $k (@chunk) {
        next unless defined $got{$k};
        $got{$k} eq $want{$k} ? $back++ : $wrong++;
    }
}
is($wrong, 0, 'no key back with a wrong value');
is($back, scalar keys %want,
    'every key stored before and during the restart is back ('
    . (scalar keys %want) . ')');
$srv2->stop;

# ---- without socket activation
my $plain = new_memcached('-m 8');
is(send_recv($plain->sock, "set a 0 0 1\r\nb\r\n"), "STORED\r\n",
    'without LISTEN_FDS the server listens on -p');
$plain->stop;
my $other = new_memcached('-m 8',
    env => { LISTEN_FDS => 1, LISTEN_PID => getppid() });
is(send_recv($other->sock, "set a 0 0 1\r\nb\r\n"), "STORED\r\n",
    'LISTEN_FDS for another pid is ignored: the server listens on -p');
$other->stop;

done_testing();
