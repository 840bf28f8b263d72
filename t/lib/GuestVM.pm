# GuestVM: a QEMU guest with a chosen NUMA topology (scripts/guest), for
# the tests that run the server on CXL-like memory (t/guest_cxl.t,
# t/guest_adm.t).
#
# Owns every guest this process boots: its initramfs (built from the
# server under test, in a private temp dir), its QEMU process group
# (started under `timeout -s KILL`, so that even a test killed by SIGKILL
# leaves no guest behind for long), its console file, and the two
# loopback ports QEMU forwards: one to the guest's port 11211 (the
# server, spoken to with MemcachedTest's clients), one to the guest's
# command agent (one shell command line per connection, its output and
# "AGENT-RC <status>").  Every guest is killed and reaped when the test
# file ends, at a signal, or when the watchdog fires.  Every wait has a
# deadline scaled by slowdown() and the load factor.
package GuestVM;

use strict;
use warnings;
no warnings qw(portable);

use Carp qw(croak);
use File::Temp qw(tempdir);
use IO::Socket::INET;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(time sleep);
use MemcachedTest qw(free_port slowdown load_factor repo_root server_bin
    send_recv read_line);

my @GUESTS;

# (1, '') when a guest can be booted here, else (0, one-line reason).
sub available {
    my $root = repo_root();
    my $out = `"$root/scripts/guest" check 2>&1`;
    chomp $out;
    return ($? == 0 ? 1 : 0, $out);
}

# Boot $topology ('cxl', 'adm').  Options: bin (the server, default
# server_bin()), limit (seconds after which QEMU is killed whatever
# happens; default 300 x slowdown x load).
sub boot {
    my ($class, $topology, %o) = @_;
    my $root = repo_root();
    my $dir = tempdir('guestvm-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $initrd = "$dir/initrd.gz";
    my $bin = $o{bin} || server_bin();
    my $out = `"$root/scripts/guest" initramfs "$bin" "$initrd" 2>&1`;
    croak "scripts/guest initramfs failed: $out" if $? != 0;
    my $limit = int(($o{limit} || 300) * slowdown() * load_factor());
    my $last = '';
    for my $try (1 .. 3) {
        my $self = bless {
            topology => $topology, dir => $dir,
            console => "$dir/console-$try.txt",
            port => free_port(), agent_port => free_port(),
        }, $class;
        $self->_start($root, $initrd, $limit);
        push @GUESTS, $self;
        my $ready = $self->_wait_ready;
        return $self if $ready;
        $last = $self->console_text;
        $self->destroy;
        # a forwarded port taken meanwhile: try others
        last unless $last =~ /hostfwd|could not set up host forwarding/i;
    }
    croak "the $topology guest did not come up: $last";
}

sub _start {
    my ($self, $root, $initrd, $limit) = @_;
    my $pid = fork();
    croak "fork: $!" unless defined $pid;
    if ($pid == 0) {
        POSIX::setpgid(0, 0);
        open STDIN, '<', '/dev/null';
        open STDOUT, '>>', "$self->{console}.qemu" or POSIX::_exit(127);
        open STDERR, '>&', \*STDOUT or POSIX::_exit(127);
        { no warnings 'exec';
          exec 'nice', '-n', '5', "$root/scripts/guest", 'boot',
              $self->{topology}, $initrd, $self->{console},
              $self->{port}, $self->{agent_port}, $limit; }
        POSIX::_exit(127);
    }
    $self->{pid} = $pid;
}

sub _wait_ready {
    my ($self) = @_;
    my $deadline = time + 90 * slowdown() * load_factor();
    while (time < $deadline) {
        return 1 if $self->console_text =~ /GUEST-READY/;
        return 0 unless $self->alive;
        sleep 0.1;
    }
    return 0;
}

sub port { return $_[0]{port} }
sub topology { return $_[0]{topology} }

# The guest's console so far, and QEMU's own messages.
sub console_text {
    my ($self) = @_;
    my $t = '';
    for my $f ($self->{console}, "$self->{console}.qemu") {
        open my $fh, '<', $f or next;
        local $/;
        $t .= <$fh> // '';
        close $fh;
    }
    return $t;
}

sub alive {
    my ($self) = @_;
    return 0 unless $self->{pid};
    my $r = waitpid($self->{pid}, WNOHANG);
    if ($r == $self->{pid} || $r == -1) {
        $self->{pid} = 0;
        return 0;
    }
    return 1;
}

# Kill QEMU (its whole process group) and reap it.
sub destroy {
    my ($self) = @_;
    my $pid = $self->{pid} or return;
    kill 'KILL', -$pid;
    kill 'KILL', $pid;
    waitpid($pid, 0);
    $self->{pid} = 0;
}

# Run one shell command line in the guest: its output (stdout and stderr
# together) and exit status; in scalar context the output.  Croaks when
# the agent does not answer within $timeout s (30, scaled).
sub run {
    my ($self, $cmd, $timeout) = @_;
    croak 'a guest command is one line' if $cmd =~ /\n/;
    my $deadline = time + ($timeout || 30) * slowdown() * load_factor();
    my $s;
    while (!$s) {
        $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
            PeerPort => $self->{agent_port}, Proto => 'tcp', Timeout => 5);
        last if $s;
        croak "guest agent unreachable: $!" if time > $deadline;
        sleep 0.1;
    }
    $s->autoflush(1);
    print $s "$cmd\n";
    my $out = '';
    my $rc;
    while (1) {
        my $left = $deadline - time;
        croak "guest command timed out: $cmd\n$out" if $left <= 0;
        my $line = read_line($s, $left);
        if (!defined $line) {
            croak "guest command timed out: $cmd\n$out" if time >= $deadline;
            croak "guest agent closed the connection: $cmd\n$out";
        }
        if ($line =~ /^AGENT-RC (\d+)/) {
            $rc = $1;
            last;
        }
        $out .= $line;
    }
    close $s;
    $out =~ s/\r//g;
    return wantarray ? ($out, $rc) : $out;
}

# The first line of each of the guest's /sys/devices/system/node files
# named (relative, e.g. node1/cpulist or node0/access0/initiators/
# read_latency), in order: a node's CPUs, its HMAT figures.
sub node_facts {
    my ($self, @files) = @_;
    my @lines;
    for my $f (@files) {
        my $out = $self->run("head -n1 /sys/devices/system/node/$f");
        chomp $out;
        push @lines, $out;
    }
    return @lines;
}

# The sanitizers' options of the test run (scripts/run-suite sets them),
# for the server in the guest; ASan's quarantine capped at 16 MiB, as
# the guest's node 0 has 320 MiB.
sub _env {
    my @e;
    for my $v (qw(ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS)) {
        my $val = $ENV{$v} // '';
        $val = join ':', grep { length } $val, 'quarantine_size_mb=16'
            if $v eq 'ASAN_OPTIONS';
        next unless length $val;
        croak "$v has characters the guest's shell would take: $val"
            if $val =~ /[^\w:=.,\/+-]/;
        push @e, "$v=$val";
    }
    return join(' ', 'env', @e) . ' ';
}

# Start the server in the guest with $args (port, user and UDP are
# added): a GuestVM::Server once it answers `version`; croaks with its
# log when it exits first or does not answer in time.
sub start_server {
    my ($self, $args, %o) = @_;
    my $n = ++$self->{servers};
    my $log = "/tmp/mc$n.log";
    my $out = $self->run(_env() . "/srv/memcached -u root -p 11211 -U 0 $args "
        . ">$log 2>&1 </dev/null & echo PID \$!");
    croak "could not start the server in the guest: $out"
        unless $out =~ /^PID (\d+)/m;
    my $srv = GuestVM::Server->_new($self, $1, $log, $args);
    my $deadline = time + ($o{start_timeout} || 30) * slowdown()
        * load_factor();
    while (time < $deadline) {
        return $srv if $srv->answers;
        croak 'the server exited during start-up in the guest: '
            . $srv->log_text unless $srv->guest_alive;
        sleep 0.1;
    }
    croak 'the server did not answer in the guest: ' . $srv->log_text;
}

# Run the server in the foreground for a start that must fail: (exit
# status, output).
sub failed_start {
    my ($self, $args) = @_;
    my ($out, $rc) = $self->run(_env() . "timeout 30 /srv/memcached -u root -p 11211 "
        . "-U 0 $args", 60);
    return ($rc, $out);
}

# /proc/PID/numa_maps in the guest as a list of
# { addr, size (bytes, from /proc/PID/maps), policy, file, anon, kind,
#   pages => { node => count } }.
sub numa_maps {
    my ($self, $pid) = @_;
    my ($out, $rc) = $self->run("cat /proc/$pid/numa_maps && echo MAPS "
        . "&& cat /proc/$pid/maps");
    croak "numa_maps of $pid: $out" if $rc;
    my ($numa, $maps) = split /^MAPS\n/m, $out, 2;
    my %size;
    for my $l (split /\n/, $maps // '') {
        $size{ $1 =~ s/^0+(?=.)//r } = hex($2) - hex($1)
            if $l =~ /^([0-9a-f]+)-([0-9a-f]+) /;
    }
    my @v;
    for my $l (split /\n/, $numa) {
        my ($addr, $policy, @f) = split ' ', $l;
        next unless defined $policy && $addr =~ /^[0-9a-f]+$/;
        my %e = (addr => $addr, policy => $policy, pages => {}, anon => 0,
            file => '', kind => '', size => $size{ $addr =~ s/^0+(?=.)//r } // 0);
        for (@f) {
            $e{pages}{$1} = $2 if /^N(\d+)=(\d+)$/;
            $e{anon} = $1 if /^anon=(\d+)$/;
            $e{file} = $1 if /^file=(.*)$/;
            $e{kind} = $_ if /^(?:heap|stack)$/;
        }
        push @v, \%e;
    }
    return @v;
}

# Pages per node over the VMAs for which $pick returns true:
# ({ node => pages }, total).
sub pages_by_node {
    my ($pick, @maps) = @_;
    my %n;
    my $total = 0;
    for my $e (grep { $pick->($_) } @maps) {
        for my $node (keys %{ $e->{pages} }) {
            $n{$node} += $e->{pages}{$node};
            $total += $e->{pages}{$node};
        }
    }
    return (\%n, $total);
}

sub _kill_all {
    $_->destroy for @GUESTS;
}

END {
    my $status = $?;
    _kill_all();
    $? = $status;
}

# MemcachedTest's signal handlers exit without running END blocks: kill
# the guests first.
for my $sig (qw(INT TERM HUP PIPE)) {
    my $prev = $SIG{$sig};
    $SIG{$sig} = sub {
        _kill_all();
        $prev->(@_) if ref $prev eq 'CODE';
        POSIX::_exit(130);
    };
}

# A server inside a guest: MemcachedTest's client methods (sock, stats,
# tier_stats) over the forwarded port; its process lives in the guest.
package GuestVM::Server;

use strict;
use warnings;
no warnings qw(portable);
use Carp qw(croak);
use Time::HiRes qw(time sleep);
use MemcachedTest qw(slowdown load_factor send_recv read_line mc_send);
our @ISA = ('MemcachedTest');

sub _new {
    my ($class, $guest, $gpid, $log, $args) = @_;
    return bless {
        pid => 0, guest => $guest, gpid => $gpid, glog => $log,
        args => $args, port => $guest->port, udpport => 0, path => undef,
        host => '127.0.0.1',
    }, $class;
}

sub gpid { return $_[0]{gpid} }

sub answers {
    my ($self) = @_;
    my $s = $self->try_sock(1) or return 0;
    my $ok = mc_send($s, "version\r\n", 1)
        && (read_line($s, 1) // '') =~ /^VERSION /;
    close $s;
    return $ok ? 1 : 0;
}

sub log_text {
    my ($self) = @_;
    return scalar $self->{guest}->run("cat $self->{glog}");
}

# Running (a zombie waiting for the guest's init to reap it counts as
# gone).
sub guest_alive {
    my ($self) = @_;
    my $p = $self->{gpid};
    my ($out, $rc) = $self->{guest}->run(
        "grep -q '^State:.*[ZX]' /proc/$p/status 2>/dev/null && exit 1; "
        . "test -d /proc/$p");
    return $rc == 0 ? 1 : 0;
}

sub _signal_and_wait {
    my ($self, $sig, $timeout) = @_;
    my $p = $self->{gpid};
    my $tenths = int(($timeout || 30) * slowdown() * load_factor() * 10);
    my ($out, $rc) = $self->{guest}->run(
        "kill -$sig $p; i=0; while [ \$i -lt $tenths ]; do "
        . "test -d /proc/$p || exit 0; "
        . "grep -q '^State:.*[ZX]' /proc/$p/status 2>/dev/null && exit 0; "
        . "sleep 0.1; i=\$((i+1)); done; exit 1", $tenths / 10 + 30);
    return $rc == 0 ? 1 : 0;
}

# SIGUSR1, the graceful stop: true when the process is gone in time.
sub stop_graceful { return $_[0]->_signal_and_wait('USR1', $_[1]) }

# kill -9: true when the process is gone.
sub kill9 { return $_[0]->_signal_and_wait('KILL', 10) }

# The server's log holds no sanitizer report.
sub log_clean {
    my ($self) = @_;
    return $self->log_text !~ /ERROR: \w+Sanitizer|runtime error:|WARNING: ThreadSanitizer/;
}

sub alive { return $_[0]->guest_alive }
sub stop { $_[0]->kill9; return 0 }

1;
