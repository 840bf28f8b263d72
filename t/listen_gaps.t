#!/usr/bin/perl
# listen_gaps.t: the listener options as memcached 1.6.18 treats them
# (doc/protocol.md "Connections"): -p -1 is a port the kernel picks and
# MEMCACHED_PORT_FILENAME tells it, -p 0 is no TCP listener, -U given
# alone sets the TCP port too (-U -1: both free ports, chosen apart), and
# `stats conns` lists every worker's UDP descriptor (one per worker, or
# one per address when -l names several) beside the listeners.  Each
# check runs against this server and, when it is installed, Debian's
# memcached.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use IO::Select;
use IO::Socket::INET;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(sleep);
use MemcachedTest;

my $VERSION = "VERSION 1.6.18\r\n";

my @subjects = (['tiercached', server_bin()]);
if (-x stock_bin() && !server_is_stock()) {
    push @subjects, ['memcached', stock_bin()];
} else {
    diag('no stock memcached: checking this server only');
}

my @pids;
END { for my $pid (@pids) { kill 'KILL', $pid; waitpid($pid, 0) } }

# Start $bin with MEMCACHED_PORT_FILENAME set; returns the pid and the
# ports the file names ({ TCP => [...], UDP => [...] }) once it exists.
sub start_with_portfile {
    my ($bin, @args) = @_;
    my $dir = tempdir('mcports-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    chmod 0777, $dir;    # written as the -u user
    my $file = "$dir/ports";
    push @args, '-u', 'nobody' if $> == 0;
    my $pid = fork();
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        $ENV{MEMCACHED_PORT_FILENAME} = $file;
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', "$dir/log";
        open STDERR, '>&', \*STDOUT;
        { no warnings q(exec); exec { $bin } $bin, @args; }
        POSIX::_exit(127);
    }
    push @pids, $pid;
    wait_until(5, sub { -e $file });
    my %ports = (TCP => [], UDP => []);
    open my $fh, '<', $file or return ($pid, \%ports);
    while (<$fh>) {
        push @{ $ports{$1} }, $2 if /^(TCP|UDP) INET6?: (\d+)/;
    }
    return ($pid, \%ports);
}

sub stop_pid {
    my ($pid) = @_;
    kill 'KILL', $pid;
    waitpid($pid, 0);
    @pids = grep { $_ != $pid } @pids;
}

sub tcp_sock {
    my ($port) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
        Proto => 'tcp', Timeout => 3) or return;
    $s->autoflush(1);
    binmode $s;
    return $s;
}

sub udp_version {
    my ($port) = @_;
    my $u = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
        Proto => 'udp') or return '';
    $u->send(pack('nnnn', 7, 0, 1, 0) . "version\r\n");
    return '' unless IO::Select->new($u)->can_read(3);
    $u->recv(my $dg, 65536);
    return length $dg > 8 ? substr($dg, 8) : '';
}

sub settings_of {
    my ($port) = @_;
    my $s = tcp_sock($port) or return {};
    return mem_stats($s, 'settings');
}

for my $subject (@subjects) {
    my ($who, $bin) = @$subject;
    my @base = ('-l', '127.0.0.1', '-t', '2');

    # -p -1: a free port, told through the port file
    my ($pid, $ports) = start_with_portfile($bin, @base, '-p', '-1',
        '-U', '0');
    my ($tcp) = @{ $ports->{TCP} };
    ok($tcp && $tcp > 0, "$who: -p -1 binds a free port ("
        . ($tcp // 'none') . ')');
    my $s = $tcp ? tcp_sock($tcp) : undef;
    reply_is($s ? send_recv($s, "version\r\n") : '', $VERSION,
        "$who: -p -1: served there");
    is(settings_of($tcp)->{tcpport}, -1,
        "$who: -p -1: stats settings tcpport -1");
    stop_pid($pid);

    # -U -1 alone: TCP and UDP both on free ports
    ($pid, $ports) = start_with_portfile($bin, @base, '-U', '-1');
    ($tcp) = @{ $ports->{TCP} };
    my ($udp) = @{ $ports->{UDP} };
    ok($tcp && $udp, "$who: -U -1 alone: a TCP and a UDP port");
    reply_is($udp ? udp_version($udp) : '', $VERSION,
        "$who: -U -1: UDP served");
    my $set = $tcp ? settings_of($tcp) : {};
    is("$set->{tcpport} $set->{udpport}", '-1 -1',
        "$who: -U -1: tcpport and udpport -1");
    stop_pid($pid);

    # -U P without -p: TCP on P too
    my $port = free_port(udp => 1);
    ($pid, $ports) = start_with_portfile($bin, @base, '-U', $port);
    is("@{ $ports->{TCP} } @{ $ports->{UDP} }", "$port $port",
        "$who: -U $port alone: TCP on the same port");
    $s = tcp_sock($port);
    reply_is($s ? send_recv($s, "version\r\n") : '', $VERSION,
        "$who: -U alone: TCP served");
    reply_is(udp_version($port), $VERSION, "$who: -U alone: UDP served");
    $set = settings_of($port);
    is("$set->{tcpport} $set->{udpport}", "$port $port",
        "$who: -U alone: stats settings");
    stop_pid($pid);

    # -p 0: no TCP listener (UDP alone here)
    $port = free_port(udp => 1);
    ($pid, $ports) = start_with_portfile($bin, @base, '-p', '0',
        '-U', $port);
    is("@{ $ports->{TCP} }|@{ $ports->{UDP} }", "|$port",
        "$who: -p 0 -U $port: UDP only");
    ok(!tcp_sock($port), "$who: -p 0: no TCP connection");
    reply_is(udp_version($port), $VERSION, "$who: -p 0: UDP served");
    stop_pid($pid);
}

# stats conns: the UDP descriptors of the workers beside the listeners,
# compared with memcached's list (descriptor numbers and ports masked)
sub conns_shape {
    my ($srv, $udp_port) = @_;
    my $st = $srv->stats('conns');
    my %by_fd;
    for my $k (keys %$st) {
        $by_fd{$1}{$2} = $st->{$k} if $k =~ /^(\d+):(\w+)$/;
    }
    my @shape;
    for my $fd (sort { $a <=> $b } keys %by_fd) {
        my $c = $by_fd{$fd};
        next if exists $c->{listen_addr};    # our own client connection
        (my $addr = $c->{addr} // '') =~ s/:\d+$/:PORT/;
        push @shape, join ' ', $addr, $c->{state} // '',
            exists $c->{secs_since_last_cmd} ? 'secs' : 'no-secs';
    }
    return join "\n", @shape;
}

# Each worker takes its UDP descriptor from its notify pipe after the
# server answers, so on a slow run the list fills in for a moment.
sub settled_shape {
    my ($srv, $lines) = @_;
    my $shape;
    wait_until(5, sub {
        $shape = conns_shape($srv);
        return (() = $shape =~ /^/mg) >= $lines;
    });
    return $shape;
}

my %shape;
for my $subject (@subjects) {
    my ($who) = @$subject;
    my $stock = $who eq 'memcached';
    my $srv = new_memcached('-t 3', udp => 1, stock => $stock);
    $shape{$who}{one} = settled_shape($srv, 4);
    $srv->stop;
    my $two = "-t 3 -l 127.0.0.1,127.0.0.2";
    $srv = new_memcached($two, udp => 1, stock => $stock);
    $shape{$who}{two} = settled_shape($srv, 4);
    $shape{$who}{per_udp} = $srv->stats('settings')->{num_threads_per_udp};
    $srv->stop;
}
is($shape{tiercached}{one}, join("\n",
    'tcp:127.0.0.1:PORT conn_listening secs',
    ('udp:127.0.0.1:PORT conn_read secs') x 3),
    'stats conns: the TCP listener and one UDP descriptor per worker');
is($shape{tiercached}{two}, join("\n",
    'tcp:127.0.0.1:PORT conn_listening secs',
    'tcp:127.0.0.2:PORT conn_listening secs',
    'udp:127.0.0.1:PORT conn_read secs', 'udp:127.0.0.2:PORT conn_read secs'),
    'stats conns: with two addresses one UDP descriptor each');
is($shape{tiercached}{per_udp}, 1, '... num_threads_per_udp 1');
SKIP: {
    skip 'no stock memcached', 2 unless $shape{memcached};
    is($shape{tiercached}{one}, $shape{memcached}{one},
        'stats conns as memcached lists them');
    is($shape{tiercached}{two}, $shape{memcached}{two},
        '... with two addresses too');
}

done_testing();
