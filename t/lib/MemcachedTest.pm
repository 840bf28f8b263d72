# MemcachedTest: helpers shared by the tiercached protocol tests.
#
# Starts server binaries (ours, or Debian's stock memcached for differential
# tests) on free ephemeral ports and/or unix sockets in private temp dirs,
# talks to them with bounded-time reads (every read has a timeout, so a test
# never hangs), parses stats, and kills every server it started when the
# test file ends.  Safe under `prove -j2`: nothing is shared between files.
package MemcachedTest;

use strict;
use warnings;

use Carp qw(croak);
use Cwd qw(abs_path);
use Errno qw(EINTR EAGAIN);
use Exporter qw(import);
use File::Basename qw(dirname);
use Fcntl qw(F_SETFD);
use File::Spec;
use File::Temp qw(tempdir);
use IO::Select;
use IO::Socket::INET;
use IO::Socket::UNIX;
use POSIX qw(:sys_wait_h);
use Socket qw(SOCK_STREAM);
use Test::More ();
use DiagLog;
use Time::HiRes qw(time sleep);

our @EXPORT = qw(
    new_memcached stock_memcached server_bin stock_bin server_is_stock
    repo_root free_port run_binary slowdown load_factor
    mc_send read_line read_bytes read_reply send_recv print_and_read
    send_sync drain wait_closed
    mem_get_is mem_gets mem_stats stats_detail reply_is escape_bytes
    wait_until watch_for shm_file random_bytes write_file servers_with_stock
    read_file proc_status_kb server_sanitizer tcload_hit_ratios
    set_batch get_batch set_range get_range
    activated_memcached
);

our $DEFAULT_TIMEOUT = 5;

my $ROOT = abs_path(dirname(__FILE__) . '/../..');
my @SERVERS;    # every server started by this process, for END cleanup

sub repo_root { return $ROOT }

# The binary under test: $MEMCACHED_BIN, else ./memcached-debug.
sub server_bin {
    my $bin = $ENV{MEMCACHED_BIN} || "$ROOT/memcached-debug";
    $bin = "$ROOT/$bin" if $bin !~ m{^/} && -x "$ROOT/$bin";
    return $bin;
}

sub stock_bin { return $ENV{STOCK_MEMCACHED} || '/usr/bin/memcached' }

# True when the binary under test is the stock memcached itself.
sub server_is_stock {
    my $a = abs_path(server_bin());
    my $b = abs_path(stock_bin());
    return defined $a && defined $b && $a eq $b;
}

# The sanitizer runtime the binary under test links ('asan', 'tsan'), or
# '' for a normal build: found in the binary itself, so that a test that
# measures what a sanitizer's slowdown distorts can say so and skip.
sub server_sanitizer {
    my $bin = server_bin();
    open my $ldd, '-|', 'ldd', $bin or return '';
    my $libs = do { local $/; <$ldd> } // '';
    close $ldd;
    return $libs =~ /\blib(asan|tsan)\.so/ ? $1 : '';
}

# How much slower than a normal build the binary under test runs: the
# test command sets MC_TEST_SLOWDOWN per build (a sanitizer build runs
# several times slower).  Deadlines for things that must happen (a server
# that must start, a program that must exit, the watchdog) are multiplied
# by it; a deadline a test expects to pass is not.
sub slowdown {
    my $f = $ENV{MC_TEST_SLOWDOWN};
    return defined $f && $f =~ /^\d+(?:\.\d+)?$/ && $f >= 1 ? $f : 1;
}

# How much the machine's load stretches wall time: the run queue (the
# 1-minute load average) over the CPUs, between 1 and 4.
sub load_factor {
    open my $fh, '<', '/proc/loadavg' or return 1;
    my ($load) = split ' ', scalar <$fh> // '';
    close $fh;
    my $cpus = 0;
    if (open my $ci, '<', '/proc/cpuinfo') {
        $cpus += /^processor\s*:/ ? 1 : 0 while <$ci>;
        close $ci;
    }
    return 1 unless defined $load && $load =~ /^[\d.]+$/ && $cpus > 0;
    my $f = $load / $cpus;
    return $f < 1 ? 1 : $f > 4 ? 4 : $f;
}

# Watchdog: no test file may run away.  Its budget is MC_TEST_WATCHDOG
# seconds (default 120) times slowdown(), times the load factor, which is
# looked at again when the budget runs out: a file that ran long because
# the machine got busy meanwhile gets the longer budget.  When it fires it
# kills our servers and fails the file with a test line that names it, so
# the other files still run and the harness reports this one as failed
# (a "Bail out!" would stop the run, and prove -j2 then reports PASS).
my $WATCHDOG_BASE = ($ENV{MC_TEST_WATCHDOG} || 120) * slowdown();
my $WATCHDOG_START = time;
my $watchdog_factor = load_factor();

sub _watchdog_fire {
    my $load = load_factor();
    $watchdog_factor = $load if $load > $watchdog_factor;
    my $budget = $WATCHDOG_BASE * $watchdog_factor;
    my $ran = time - $WATCHDOG_START;
    if ($ran < $budget) {
        alarm(int($budget - $ran) + 1);
        return;
    }
    _kill_all();
    my $file = $0;
    $file =~ s{^\Q$ROOT\E/}{};
    Test::More::ok(0, sprintf('watchdog: %s ran longer than %ds', $file,
        $budget));
    Test::More::diag(sprintf('watchdog budget: MC_TEST_WATCHDOG %ds x '
        . 'MC_TEST_SLOWDOWN %s x load factor %.1f; the file was stopped',
        $ENV{MC_TEST_WATCHDOG} || 120, slowdown(), $watchdog_factor));
    exit 255;
}
$SIG{ALRM} = \&_watchdog_fire;
alarm(int($WATCHDOG_BASE * $watchdog_factor) + 1);

for my $sig (qw(INT TERM HUP PIPE)) {
    $SIG{$sig} = sub { _kill_all(); POSIX::_exit(130) };
}

# A TCP port that is free right now on 127.0.0.1 (and for UDP too if asked).
sub free_port {
    my (%o) = @_;
    for (1 .. 50) {
        my $s = IO::Socket::INET->new(
            LocalAddr => '127.0.0.1', LocalPort => 0, Proto => 'tcp',
            Listen => 1, ReuseAddr => 0) or next;
        my $port = $s->sockport;
        close $s;
        next if $port < 1024;
        if ($o{udp}) {
            my $u = IO::Socket::INET->new(
                LocalAddr => '127.0.0.1', LocalPort => $port, Proto => 'udp')
                or next;
            close $u;
        }
        return $port;
    }
    croak 'could not find a free port';
}

sub _has_flag {
    my ($args, @flags) = @_;
    for my $f (@flags) {
        return 1 if $args =~ /(?:^|\s)\Q$f\E(?:\s|=|$|\d)/;
    }
    return 0;
}

# Start a server.  $args is the memcached command line (a string).
# Options:
#   bin      => path           (default server_bin())
#   stock    => 1              use stock_bin()
#   unix     => 1              listen on a unix socket in a private dir (-s)
#   udp      => 1              also listen on UDP (same port as TCP)
#   no_user  => 1              do not add "-u nobody" when root
#   no_listen=> 1              do not add "-l 127.0.0.1"
#   tries    => N              start attempts (port races)
#   env      => {NAME => value} more environment for the server
sub new_memcached {
    my ($args, %o) = @_;
    $args = '' unless defined $args;
    my $bin = $o{bin} || ($o{stock} ? stock_bin() : server_bin());
    croak "server binary '$bin' not found or not executable "
        . '(build it with make, or set MEMCACHED_BIN)' unless -x $bin;
    my $tries = $o{tries} || 5;
    my $last_err = '';
    for my $try (1 .. $tries) {
        my $srv = eval { _start($bin, $args, %o) };
        return $srv if $srv;
        $last_err = $@;
        last unless $last_err =~ /listen|in use|bind/i;
    }
    croak "failed to start '$bin $args': $last_err";
}

sub stock_memcached {
    my ($args, %o) = @_;
    return new_memcached($args, %o, stock => 1);
}

# Fork and exec $bin with @$argv, its output in $log and %$env added to
# its environment; $in_child (optional) runs in the child first.  The
# child's pid.
sub _spawn {
    my ($bin, $argv, $log, $env, $in_child) = @_;
    my $pid = fork();
    croak "fork: $!" unless defined $pid;
    return $pid if $pid != 0;
    open STDIN, '<', '/dev/null';
    open STDOUT, '>', $log or POSIX::_exit(127);
    open STDERR, '>&', \*STDOUT or POSIX::_exit(127);
    $in_child->() if $in_child;
    @ENV{ keys %$env } = values %$env if $env;
    { no warnings q(exec); exec { $bin } $bin, @$argv; }
    POSIX::_exit(127);
}

sub _start {
    my ($bin, $args, %o) = @_;
    my $dir = tempdir('mctest-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    chmod 0777, $dir;    # the server may run as nobody
    my @argv = split ' ', $args;
    my ($port, $udpport, $path) = (0, 0, undef);
    if ($o{unix}) {
        $path = "$dir/mc.sock";
        push @argv, '-s', $path;
    }
    elsif (!_has_flag($args, '-p', '--port', '-s', '--unix-socket')) {
        $port = free_port(udp => $o{udp});
        push @argv, '-p', $port;
    }
    elsif ($args =~ /(?:^|\s)(?:-p|--port=?)\s*(\d+)/) {
        $port = $1;
    }
    if (!_has_flag($args, '-U', '--udp-port')) {
        $udpport = $o{udp} ? $port : 0;
        push @argv, '-U', $udpport;
    }
    elsif ($args =~ /(?:^|\s)(?:-U|--udp-port=?)\s*(\d+)/) {
        $udpport = $1;
    }
    if (!$o{unix} && !$o{no_listen}
        && !_has_flag($args, '-l', '--listen', '-s')) {
        push @argv, '-l', '127.0.0.1';
    }
    if ($> == 0 && !$o{no_user} && !_has_flag($args, '-u', '--user')) {
        push @argv, '-u', 'nobody';
    }
    # where to connect: the first address of the first -l, if any
    my $host = '127.0.0.1';
    if ($args =~ /(?:^|\s)(?:-l|--listen=?)\s*([^\s,]+)/) {
        $host = $1 unless $1 eq '0.0.0.0' || $1 =~ /:/;
    }
    my $log = "$dir/server.log";
    my $pid = _spawn($bin, \@argv, $log, $o{env});
    my $self = bless {
        pid => $pid, bin => $bin, args => $args, argv => \@argv,
        port => $port, udpport => $udpport, path => $path, dir => $dir,
        host => $host,
        log => $log,
    }, __PACKAGE__;
    push @SERVERS, $self;
    my $deadline = time + ($o{start_timeout} || 10) * slowdown();
    while (time < $deadline) {
        my $r = waitpid($pid, WNOHANG);
        if ($r == $pid) {
            $self->{pid} = 0;
            my $msg = $self->log_text;
            croak "server exited during start-up (status "
                . ($? >> 8) . "): $msg";
        }
        my $s = $self->_connect(0.5);
        if ($s) {
            close $s;
            return $self;
        }
        sleep 0.05;
    }
    my $msg = $self->log_text;
    $self->stop;
    croak "server did not accept connections within the start timeout: $msg";
}

# A server started the way systemd's socket activation starts one: the
# listening socket $listen (which the caller keeps: it outlives the
# server, as systemd's does) becomes its descriptor 3, with LISTEN_FDS=1
# and LISTEN_PID its pid (exec keeps the pid), or $o{listen_pid}.
# $args as for new_memcached, without -p/-l; options: env, no_user,
# start_timeout.  It is ready when it answers `version`: connecting alone
# proves nothing, the kernel completes connections on a held socket.
sub activated_memcached {
    my ($listen, $args, %o) = @_;
    my $bin = $o{bin} || server_bin();
    my $dir = tempdir('mctest-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    chmod 0777, $dir;
    my @argv = (split(' ', $args // ''), '-U', 0);
    push @argv, '-u', 'nobody' if $> == 0 && !$o{no_user};
    my $log = "$dir/server.log";
    my $pid = _spawn($bin, \@argv, $log, $o{env}, sub {
        my $fd = fileno $listen;
        POSIX::dup2($fd, 3) or POSIX::_exit(127) if $fd != 3;
        # Perl marks what it opens above fd 2 close-on-exec
        open my $three, '+<&=', 3 or POSIX::_exit(127);
        fcntl($three, F_SETFD, 0) or POSIX::_exit(127);
        $ENV{LISTEN_FDS} = 1;
        $ENV{LISTEN_PID} = $o{listen_pid} // $$;
    });
    my $self = bless {
        pid => $pid, bin => $bin, args => $args // '', argv => \@argv,
        port => $listen->sockport, udpport => 0, path => undef,
        dir => $dir, host => '127.0.0.1', log => $log,
    }, __PACKAGE__;
    push @SERVERS, $self;
    my $deadline = time + ($o{start_timeout} || 10) * slowdown();
    while (time < $deadline) {
        if (!$self->alive) {
            croak 'server exited during start-up (status '
                . (($self->exit_status // 0) >> 8) . '): ' . $self->log_text;
        }
        my $s = $self->_connect(0.5);
        if ($s && mc_send($s, "version\r\n", 1)
            && (read_line($s, 0.5) // '') =~ /^VERSION /) {
            close $s;
            return $self;
        }
        close $s if $s;
        sleep 0.05;
    }
    my $msg = $self->log_text;
    $self->stop;
    croak "server did not answer within the start timeout: $msg";
}

sub _connect {
    my ($self, $timeout) = @_;
    if ($self->{path}) {
        return IO::Socket::UNIX->new(
            Peer => $self->{path}, Type => SOCK_STREAM, Timeout => $timeout);
    }
    return IO::Socket::INET->new(
        PeerAddr => $self->{host}, PeerPort => $self->{port}, Proto => 'tcp',
        Timeout => $timeout);
}

# A new connection to the server (croaks if it cannot connect).
sub sock {
    my ($self) = @_;
    my $s = $self->_connect(5) or croak "connect to server failed: $!";
    $s->autoflush(1);
    binmode $s;
    return $s;
}
sub new_sock { return $_[0]->sock }

# A connection attempt that may fail (returns undef).
sub try_sock {
    my ($self, $timeout) = @_;
    my $s = $self->_connect($timeout || 2) or return;
    $s->autoflush(1);
    binmode $s;
    return $s;
}

sub port { return $_[0]{port} }
sub host { return $_[0]{host} }
sub udpport { return $_[0]{udpport} }
sub socket_path { return $_[0]{path} }
sub pid { return $_[0]{pid} }
sub dir { return $_[0]{dir} }
sub bin { return $_[0]{bin} }
sub argv { return @{ $_[0]{argv} } }

sub log_text {
    my ($self) = @_;
    open my $fh, '<', $self->{log} or return '';
    local $/;
    my $t = <$fh>;
    close $fh;
    return defined $t ? $t : '';
}

# True while the server process is running.
sub alive {
    my ($self) = @_;
    return 0 unless $self->{pid};
    my $r = waitpid($self->{pid}, WNOHANG);
    if ($r == $self->{pid}) {
        $self->{exit_status} = $?;
        $self->{pid} = 0;
        return 0;
    }
    return 1;
}

# Wait up to $timeout seconds for the server to exit by itself.
sub wait_exit {
    my ($self, $timeout) = @_;
    my $deadline = time + ($timeout || 5);
    while (time < $deadline) {
        return 1 unless $self->alive;
        sleep 0.05;
    }
    return 0;
}

sub exit_status { return $_[0]{exit_status} }

# SIGUSR1 (memcached's graceful stop) and wait up to $timeout s (20 by
# default); true when the server exited with status 0.
sub stop_graceful {
    my ($self, $timeout) = @_;
    kill 'USR1', $self->pid;
    return 0 unless $self->wait_exit($timeout // 20);
    my $st = $self->exit_status;
    return WIFEXITED($st) && WEXITSTATUS($st) == 0;
}

# Kill and reap.  Returns the wait status.  SIGKILL by default (fast);
# stop(term => 1) sends SIGTERM and waits up to 5 s before SIGKILL.
sub stop {
    my ($self, %o) = @_;
    my $pid = $self->{pid} or return $self->{exit_status};
    kill($o{term} ? 'TERM' : 'KILL', $pid);
    my $deadline = time + 5;
    while (time < $deadline) {
        my $r = waitpid($pid, WNOHANG);
        if ($r == $pid || $r == -1) {
            $self->{exit_status} = $?;
            $self->{pid} = 0;
            return $self->{exit_status};
        }
        sleep 0.02;
    }
    kill 'KILL', $pid;
    waitpid($pid, 0);
    $self->{exit_status} = $?;
    $self->{pid} = 0;
    return $self->{exit_status};
}

sub _kill_all {
    for my $s (@SERVERS) {
        next unless $s->{pid};
        kill 'KILL', $s->{pid};
        waitpid($s->{pid}, 0);
        $s->{pid} = 0;
    }
}

END {
    my $status = $?;
    _kill_all();
    $? = $status;
}

# stats [$sub] on a private connection, parsed into a hashref.
sub stats {
    my ($self, $sub) = @_;
    my $s = $self->sock;
    my $h = mem_stats($s, $sub);
    close $s;
    return $h;
}

# Does the server know the debug-build `debugtime` command?
sub has_debugtime {
    my ($self) = @_;
    return $self->{has_debugtime} if defined $self->{has_debugtime};
    my $s = $self->sock;
    my $r = send_recv($s, "debugtime 0\r\n");
    close $s;
    return $self->{has_debugtime} = ($r eq "OK\r\n") ? 1 : 0;
}

# Move the server clock forward by $secs (debug build only).
sub debugtime {
    my ($self, $secs) = @_;
    my $s = $self->sock;
    my $r = send_recv($s, "debugtime $secs\r\n");
    close $s;
    croak "debugtime $secs failed: " . escape_bytes($r) unless $r eq "OK\r\n";
    # the server clock ticks on its own timer; give it a moment
    sleep 1.2;
    return 1;
}

# ---------------------------------------------------------------- wire I/O

# Write all of $data (with a timeout).  Returns 1 on success.
sub mc_send {
    my ($sock, $data, $timeout) = @_;
    $timeout ||= $DEFAULT_TIMEOUT;
    my $deadline = time + $timeout;
    my $off = 0;
    my $sel = IO::Select->new($sock);
    local $SIG{PIPE} = 'IGNORE';
    while ($off < length $data) {
        my $left = $deadline - time;
        return 0 if $left <= 0;
        next unless $sel->can_write($left);
        my $n = syswrite($sock, $data, length($data) - $off, $off);
        if (!defined $n) {
            next if $! == EINTR || $! == EAGAIN;
            return 0;
        }
        $off += $n;
    }
    return 1;
}

# Read more bytes into the socket's buffer.  0 on timeout or EOF.
sub _fill {
    my ($sock, $deadline) = @_;
    ${ *$sock }{mct_rbuf} = '' unless defined ${ *$sock }{mct_rbuf};
    return 0 if ${ *$sock }{mct_eof};
    my $sel = IO::Select->new($sock);
    while (1) {
        my $left = $deadline - time;
        return 0 if $left <= 0;
        next unless $sel->can_read($left);
        my $n = sysread($sock, my $chunk, 262144);
        if (!defined $n) {
            next if $! == EINTR || $! == EAGAIN;
            ${ *$sock }{mct_eof} = 1;
            return 0;
        }
        if ($n == 0) {
            ${ *$sock }{mct_eof} = 1;
            return 0;
        }
        ${ *$sock }{mct_rbuf} .= $chunk;
        return 1;
    }
}

# One line including its "\n", or undef on timeout/EOF.
sub read_line {
    my ($sock, $timeout) = @_;
    my $deadline = time + ($timeout || $DEFAULT_TIMEOUT);
    while (1) {
        my $buf = \${ *$sock }{mct_rbuf};
        $$buf = '' unless defined $$buf;
        my $i = index($$buf, "\n");
        if ($i >= 0) {
            return substr($$buf, 0, $i + 1, '');
        }
        return undef unless _fill($sock, $deadline);
    }
}

# Exactly $n bytes, or undef on timeout/EOF.
sub read_bytes {
    my ($sock, $n, $timeout) = @_;
    my $deadline = time + ($timeout || $DEFAULT_TIMEOUT);
    while (1) {
        my $buf = \${ *$sock }{mct_rbuf};
        $$buf = '' unless defined $$buf;
        return substr($$buf, 0, $n, '') if length $$buf >= $n;
        return undef unless _fill($sock, $deadline);
    }
}

# Whatever arrives within $timeout seconds (plus what is buffered).
sub drain {
    my ($sock, $timeout) = @_;
    my $deadline = time + (defined $timeout ? $timeout : 0.3);
    1 while _fill($sock, $deadline);
    my $buf = \${ *$sock }{mct_rbuf};
    my $out = defined $$buf ? $$buf : '';
    $$buf = '';
    return $out;
}

# True if the peer closed the connection within $timeout (data that
# arrives meanwhile is kept in the buffer for later reads).
sub wait_closed {
    my ($sock, $timeout) = @_;
    my $deadline = time + ($timeout || $DEFAULT_TIMEOUT);
    1 while _fill($sock, $deadline);
    return ${ *$sock }{mct_eof} ? 1 : 0;
}

sub is_eof { return ${ *{ $_[0] } }{mct_eof} ? 1 : 0 }

# Lines that start a multi-line reply terminated by END (or an error).
my $MULTI_RE = qr/^(?:VALUE |STAT |ITEM |PREFIX |key=)/;

# Read one complete reply: a single line, a VA line plus its data block, or
# a multi-line VALUE/STAT/ITEM/... list up to END.  On timeout or EOF the
# partial reply is returned with "<TIMEOUT>" or "<EOF>" appended.
sub read_reply {
    my ($sock, $timeout) = @_;
    $timeout ||= $DEFAULT_TIMEOUT;
    my $out = '';
    my $fail = sub { return $out . (is_eof($sock) ? '<EOF>' : '<TIMEOUT>') };
    my $line = read_line($sock, $timeout);
    return $fail->($sock) unless defined $line;
    $out .= $line;
    if ($line =~ /^VA (\d+)/) {
        my $data = read_bytes($sock, $1 + 2, $timeout);
        return $fail->($sock) unless defined $data;
        return $out . $data;
    }
    return $out unless $line =~ $MULTI_RE;
    while (1) {
        if ($line =~ /^VALUE \S+ \d+ (\d+)/) {
            my $data = read_bytes($sock, $1 + 2, $timeout);
            return $fail->($sock) unless defined $data;
            $out .= $data;
        }
        $line = read_line($sock, $timeout);
        return $fail->($sock) unless defined $line;
        $out .= $line;
        return $out unless $line =~ $MULTI_RE;
    }
}

# Send $data and read $o{n} (default 1) complete replies.  Returns them
# concatenated (with <TIMEOUT>/<EOF> markers when they did not arrive).
sub send_recv {
    my ($sock, $data, %o) = @_;
    my $n = defined $o{n} ? $o{n} : 1;
    my $timeout = $o{timeout} || $DEFAULT_TIMEOUT;
    return '<SENDFAIL>' unless mc_send($sock, $data, $timeout);
    my $out = '';
    for (1 .. $n) {
        my $r = read_reply($sock, $timeout);
        $out .= $r;
        last if $r =~ /<(?:TIMEOUT|EOF)>$/;
    }
    return $out;
}
sub print_and_read { return send_recv(@_) }

# Send $data followed by a meta no-op and read every reply up to the "MN"
# line: returns the replies to $data (the MN excluded).  Works for any mix
# of commands, noreply and quiet mode.
sub send_sync {
    my ($sock, $data, %o) = @_;
    my $timeout = $o{timeout} || $DEFAULT_TIMEOUT;
    return '<SENDFAIL>' unless mc_send($sock, $data . "mn\r\n", $timeout);
    my $out = '';
    while (1) {
        my $r = read_reply($sock, $timeout);
        return $out . $r if $r =~ /<(?:TIMEOUT|EOF)>$/;
        return $out if $r eq "MN\r\n";
        $out .= $r;
    }
}

# Make bytes printable for diagnostics: \r \n and non-printables escaped,
# long strings truncated in the middle.
sub escape_bytes {
    my ($s, $max) = @_;
    return '<undef>' unless defined $s;
    $max ||= 600;
    my $len = length $s;
    if ($len > $max) {
        $s = substr($s, 0, $max / 2) . "...[$len bytes]..."
            . substr($s, -$max / 2);
    }
    $s =~ s/([^\x20-\x7e])/$1 eq "\n" ? "\\n\n" : $1 eq "\r" ? '\\r'
        : sprintf('\\x%02x', ord $1)/ge;
    return $s;
}

# Compare two byte strings; on failure show both (escaped) and the offset
# of the first difference.
sub reply_is {
    my ($got, $exp, $msg) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $ok = defined $got && $got eq $exp;
    Test::More::ok($ok, $msg);
    unless ($ok) {
        my $i = 0;
        if (defined $got) {
            $i++ while $i < length($got) && $i < length($exp)
                && substr($got, $i, 1) eq substr($exp, $i, 1);
        }
        Test::More::diag("first difference at byte $i\n"
            . "     got: " . escape_bytes($got) . "\n"
            . "expected: " . escape_bytes($exp));
    }
    return $ok;
}

# mem_get_is($sock, $key, $value, $msg): `get` returns exactly $value (or a
# miss when $value is undef).  $sock may be { sock => , flags => }.
sub mem_get_is {
    my ($s, $key, $val, $msg) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $flags = 0;
    if (ref $s eq 'HASH') {
        $flags = $s->{flags} if defined $s->{flags};
        $s = $s->{sock};
    }
    $msg = "get $key" unless defined $msg;
    my $r = send_recv($s, "get $key\r\n", timeout => 10);
    my $exp = defined $val
        ? "VALUE $key $flags " . length($val) . "\r\n$val\r\nEND\r\n"
        : "END\r\n";
    return reply_is($r, $exp, $msg);
}

# (cas, value, flags) of $key via gets, or () on a miss.
sub mem_gets {
    my ($sock, $key) = @_;
    my $r = send_recv($sock, "gets $key\r\n");
    return () unless $r =~ /^VALUE \S+ (\d+) (\d+) (\d+)\r\n/;
    my ($flags, $len, $cas) = ($1, $2, $3);
    my $val = substr($r, length($&), $len);
    return ($cas, $val, $flags);
}

# Parse "stats [$sub]" replies (STAT name value) into a hashref.
sub mem_stats {
    my ($sock, $sub) = @_;
    my $cmd = defined $sub && length $sub ? "stats $sub\r\n" : "stats\r\n";
    my $r = send_recv($sock, $cmd);
    my %h;
    for my $l (split /\r\n/, $r) {
        $h{$1} = $2 if $l =~ /^STAT (\S+) ?(.*)$/;
    }
    $h{_raw} = $r;
    return \%h;
}

# Parse "stats detail dump" into { prefix => { get=>, hit=>, set=>, del=> } }.
sub stats_detail {
    my ($sock) = @_;
    my $r = send_recv($sock, "stats detail dump\r\n");
    my %h;
    for my $l (split /\r\n/, $r) {
        next unless $l =~ /^PREFIX (\S+) (.*)$/;
        my ($p, %kv) = ($1, split / /, $2);
        $h{$p} = \%kv;
    }
    return \%h;
}

# Run a binary with arguments (no server handling): returns
# (exit_code, output) where exit_code is 'timeout' when it was still
# running after $timeout seconds (times slowdown(); it is then killed), or
# 'signal N'.
sub run_binary {
    my ($bin, $argv, $timeout) = @_;
    $timeout = ($timeout || 5) * slowdown();
    my $dir = tempdir('mcrun-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $log = "$dir/out";
    my $pid = fork();
    croak "fork: $!" unless defined $pid;
    if ($pid == 0) {
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', $log or POSIX::_exit(127);
        open STDERR, '>&', \*STDOUT or POSIX::_exit(127);
        { no warnings q(exec); exec { $bin } $bin, @$argv; }
        POSIX::_exit(127);
    }
    my $deadline = time + $timeout;
    my $code;
    while (1) {
        my $r = waitpid($pid, WNOHANG);
        if ($r == $pid) {
            $code = WIFSIGNALED($?) ? 'signal ' . WTERMSIG($?) : $? >> 8;
            last;
        }
        if (time > $deadline) {
            kill 'KILL', $pid;
            waitpid($pid, 0);
            $code = 'timeout';
            last;
        }
        sleep 0.05;
    }
    open my $fh, '<', $log or return ($code, '');
    local $/;
    my $out = <$fh>;
    close $fh;
    return ($code, defined $out ? $out : '');
}

# ------------------------------------------------------------ tier helpers
#
# For the tiered engine's tests (t/tier_*.t): `stats tier` parsing, the
# zone a key is served from (seen through the d_hits/n_hits counters),
# polling with a deadline, and N-zone backing files under /dev/shm that
# the server (running as nobody when we are root) can open.

# `stats tier` as a hashref (name => value, plus _raw).
sub tier_stats {
    my ($self) = @_;
    return $self->stats('tier');
}

# `stats tier classes` as { class id => { name => value } }, plus _raw.
sub tier_classes {
    my ($self) = @_;
    my $flat = $self->stats('tier classes');
    my %c;
    for my $k (keys %$flat) {
        next unless $k =~ /^(\d+):(\S+)$/;
        $c{$1}{$2} = $flat->{$k};
    }
    $c{_raw} = $flat->{_raw};
    return \%c;
}

# Which zone serves $key: 'D' or 'N' (one `get` on $sock, so it counts as
# an access), 'miss', or '?' when the counters did not tell (stats moved
# by something else, or no tier stats).  $sock defaults to a new one.
sub zone_of {
    my ($self, $key, $sock) = @_;
    $sock ||= $self->sock;
    my $a = $self->tier_stats;
    my $r = send_recv($sock, "get $key\r\n", timeout => 10);
    my $b = $self->tier_stats;
    return 'miss' if $r eq "END\r\n";
    return '?' unless defined $a->{d_hits} && defined $b->{d_hits}
        && defined $a->{n_hits} && defined $b->{n_hits};
    my $dd = $b->{d_hits} - $a->{d_hits};
    my $dn = $b->{n_hits} - $a->{n_hits};
    return 'D' if $dd == 1 && $dn == 0;
    return 'N' if $dn == 1 && $dd == 0;
    return '?';
}

# Poll $code (returns true when done) every $step s (0.05) for something
# that must happen: up to $timeout s stretched by slowdown() and the load
# factor, as a slow build on a busy machine needs.  Returns the last value
# $code gave.
sub wait_until {
    my ($timeout, $code, $step) = @_;
    return watch_for($timeout * slowdown() * load_factor(), $code, $step);
}

# The same for something that may rightly not happen (a server that should
# stay up): the deadline is $timeout s as given.
sub watch_for {
    my ($timeout, $code, $step) = @_;
    my $deadline = time + $timeout;
    while (1) {
        my $v = $code->();
        return $v if $v || time >= $deadline;
        sleep($step || 0.05);
    }
}

my @SHM_FILES;

# A fresh empty file for nvm_path=, mode 0666 so that a server that drops
# to nobody can open it; removed when the test file ends.  $dir defaults
# to /dev/shm (tmpfs), else the temp dir.
sub shm_file {
    my ($dir) = @_;
    $dir ||= -d '/dev/shm' && -w '/dev/shm' ? '/dev/shm' : File::Spec->tmpdir;
    for (1 .. 100) {
        my $p = sprintf '%s/tiertest-%d-%d', $dir, $$, int rand 1e9;
        next if -e $p;
        open my $fh, '>', $p or croak "create $p: $!";
        close $fh;
        chmod 0666, $p;
        push @SHM_FILES, $p;
        return $p;
    }
    croak "could not create a file in $dir";
}

END { unlink @SHM_FILES if @SHM_FILES }

# Write $text to $dir/$name, readable by a server that dropped to nobody;
# returns the path.
sub write_file {
    my ($dir, $name, $text) = @_;
    open my $fh, '>', "$dir/$name" or croak "$dir/$name: $!";
    print $fh $text;
    close $fh;
    chmod 0644, "$dir/$name";
    return "$dir/$name";
}

# Store $prefix$from .. $prefix$to, values of $size bytes, pipelined on
# $s; how many were STORED.
sub set_batch {
    my ($s, $prefix, $from, $to, $size) = @_;
    my $v = 'v' x $size;
    my $req = join '', map { "set $prefix$_ 0 0 $size\r\n$v\r\n" } $from .. $to;
    my $r = send_recv($s, $req, n => $to - $from + 1);
    return scalar(() = $r =~ /^STORED\r\n/mg);
}

# GET $prefix$from .. $prefix$to, pipelined on $s; how many were there.
sub get_batch {
    my ($s, $prefix, $from, $to) = @_;
    my $req = join '', map { "get $prefix$_\r\n" } $from .. $to;
    my $r = send_recv($s, $req, n => $to - $from + 1);
    return scalar(() = $r =~ /^VALUE /mg);
}

# Store $count keys from $prefix$from, values of $size bytes, in
# pipelined batches of $batch (100); how many were STORED.
sub set_range {
    my ($s, $prefix, $from, $count, $size, $batch) = @_;
    $batch ||= 100;
    my $stored = 0;
    for (my $i = $from; $i < $from + $count; $i += $batch) {
        my $to = $i + $batch - 1;
        $to = $from + $count - 1 if $to > $from + $count - 1;
        $stored += set_batch($s, $prefix, $i, $to, $size);
    }
    return $stored;
}

# GET $count keys from $prefix$from in pipelined batches of $batch (100);
# how many were there.
sub get_range {
    my ($s, $prefix, $from, $count, $batch) = @_;
    $batch ||= 100;
    my $hits = 0;
    for (my $i = $from; $i < $from + $count; $i += $batch) {
        my $to = $i + $batch - 1;
        $to = $from + $count - 1 if $to > $from + $count - 1;
        $hits += get_batch($s, $prefix, $i, $to);
    }
    return $hits;
}

# A lookaside client (bench/tcload, one connection, $opt->{depth}
# requests in flight, seeded with $opt->{seed}) running @phases against
# $srv: each phase's hit ratio of its own keys.  Dies when tcload fails.
my $tcload_built;

sub tcload_hit_ratios {
    my ($srv, $opt, @phases) = @_;
    require JSON::PP;
    unless ($tcload_built) {
        system("make -s -C $ROOT/bench >/dev/null") == 0
            or croak 'make -C bench failed';
        $tcload_built = 1;
    }
    my $json = File::Spec->catfile(File::Spec->tmpdir,
                                   "tcload-$$-" . int(rand(1e9)) . '.json');
    my @cmd = ("$ROOT/bench/tcload", '-s', '127.0.0.1:' . $srv->port,
        '-c', 1, '-d', $opt->{depth}, '-q', '--seed', $opt->{seed},
        '--json', $json, map { ('--phase', $_) } @phases);
    my $rc = system(@cmd);
    my $text = -e $json ? read_file($json) : undef;
    unlink $json;
    croak "tcload failed: @cmd" if $rc != 0 || !defined $text;
    return map {
        my $r = $_->{run};
        $r->{hits} / ($r->{hits} + $r->{misses})
    } @{ JSON::PP::decode_json($text)->{phases} };
}

# The whole of file $path, as bytes.
sub read_file {
    my ($path) = @_;
    open my $fh, '<:raw', $path or croak "$path: $!";
    local $/;
    my $data = <$fh>;
    close $fh;
    return $data // '';
}

# Field $field (VmRSS, RssAnon, ...) of /proc/$pid/status in kB, or undef
# when the process or the field is not there.
sub proc_status_kb {
    my ($pid, $field) = @_;
    open my $fh, '<', "/proc/$pid/status" or return undef;
    while (<$fh>) {
        return $1 if /^\Q$field\E:\s+(\d+)\s+kB/;
    }
    return undef;
}

# The server under test started with $args, and Debian's memcached started
# the same way when it is there (and is not the server under test): a
# list of { name => 'tiercached'|'memcached', srv, sock }.
sub servers_with_stock {
    my ($args) = @_;
    my @s = ({ name => 'tiercached', srv => new_memcached($args) });
    push @s, { name => 'memcached', srv => stock_memcached($args) }
        if -x stock_bin() && !server_is_stock();
    $_->{sock} = $_->{srv}->sock for @s;
    return @s;
}

# $n pseudo-random bytes drawn from $alphabet (default: all 256 bytes;
# values may hold \r and \n, which the length prefix allows).
sub random_bytes {
    my ($n, $alphabet) = @_;
    return join '', map { chr int rand 256 } 1 .. $n unless defined $alphabet;
    my $len = length $alphabet;
    return join '', map { substr $alphabet, int(rand $len), 1 } 1 .. $n;
}

1;
