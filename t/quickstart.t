#!/usr/bin/perl
# quickstart.t: scripts/quickstart with options of its own (README.md):
# run from a copy of the scripts whose install-deps and build do nothing
# and whose build/memcached is the binary under test, `-p PORT -m 8 -o
# nvm_size=16m` serves on PORT, and the banner names that address, those
# sizes and the N-zone's file; scripts/demo-load HOST:PORT loads it. The
# N-zone lives in state/, outside the directories scripts/test removes:
# after a stop and that removal, the next start still has the N items
# (the first start had none).
use strict;
use warnings;
use feature 'state';
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;
use File::Temp qw(tempdir);
use IO::Socket::INET;
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);

my $root = repo_root();
my $bin = server_bin();
my $tree = tempdir('quickstart-XXXXXX', TMPDIR => 1, CLEANUP => 1);
# the server runs as nobody when we are root: it opens the N-zone there
chmod 0755, $tree;
mkdir "$tree/$_" or die "$tree/$_: $!" for qw(scripts build);
symlink "$root/scripts/$_", "$tree/scripts/$_" or die "symlink: $!"
    for qw(quickstart quickstart-banner);
for my $stub (qw(install-deps build)) {
    open my $fh, '>', "$tree/scripts/$stub" or die "$stub: $!";
    print $fh "#!/bin/sh\n# stands in for scripts/$stub\nexit 0\n";
    close $fh;
    chmod 0755, "$tree/scripts/$stub";
}
symlink $bin, "$tree/build/memcached" or die "symlink: $!";

my $deadline_s = 30 * slowdown();
my @running;
END { kill 'KILL', @running if @running }

# Starts the quickstart with @args; returns its pid (the server's, after
# exec) and the log it writes.
sub start_quickstart {
    my (@args) = @_;
    state $starts = 0;
    my $log = "$tree/quickstart." . ++$starts . '.log';
    my $pid = fork();
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', $log or POSIX::_exit(127);
        open STDERR, '>&', \*STDOUT or POSIX::_exit(127);
        { no warnings 'exec'; exec "$tree/scripts/quickstart", @args; }
        POSIX::_exit(127);
    }
    push @running, $pid;
    return ($pid, $log);
}

# Waits for the banner's last line (the hint with nc) in $log.
sub wait_banner {
    my ($pid, $log) = @_;
    my $end = time + $deadline_s;
    while (time < $end) {
        my $text = -e $log ? read_file($log) : '';
        return $text if $text =~ /nc -q1 [^\n]*\n/;
        return "exited: $text" if waitpid($pid, WNOHANG) == $pid;
        sleep 0.05;
    }
    return 'timeout: ' . (-e $log ? read_file($log) : '');
}

sub stop_quickstart {
    my ($pid) = @_;
    kill 'INT', $pid;
    my $end = time + $deadline_s;
    while (time < $end) {
        if (waitpid($pid, WNOHANG) == $pid) {
            @running = grep { $_ != $pid } @running;
            return $? >> 8;
        }
        sleep 0.05;
    }
    return 'timeout';
}

sub stats {
    my ($port, $group) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
        Proto => 'tcp', Timeout => 5) or return {};
    my $text = send_recv($s, $group ? "stats $group\r\n" : "stats\r\n");
    close $s;
    my %h;
    $h{$1} = $2 while $text =~ /^STAT (\S+) (.*?)\r$/mg;
    return \%h;
}

my $port = free_port();
isnt($port, 11211, 'a port other than the default');
my ($pid, $log) = start_quickstart('-p', $port, '-m', '8',
    '-o', 'nvm_size=16m');
my $banner = wait_banner($pid, $log);
like($banner, qr/^tiercached listening on 127\.0\.0\.1:$port \(Ctrl-C/m,
    'banner: the port given with -p');
unlike($banner, qr/11211/, 'banner: the default port nowhere');
like($banner, qr/^  D-zone: 8 MB of DRAM; N-zone: 16 MB in state\/nvm-zone,/m,
    'banner: the sizes given with -m and -o nvm_size, the N-zone file');
like($banner, qr/^  in another terminal: scripts\/demo-load 127\.0\.0\.1:$port /m,
    'banner: demo-load with the address');
like($banner, qr/nc -q1 127\.0\.0\.1 $port$/m, 'banner: nc with the address');
my $set = stats($port, 'settings');
is($set->{tcpport}, $port, 'the server serves on that port');
is($set->{maxbytes}, 8 * 1024 * 1024, 'the server has -m 8');
is($set->{nvm_size}, 16 * 1024 * 1024, 'the server has nvm_size=16m');
ok(-f "$tree/state/nvm-zone" && !-e "$tree/build/nvm-zone",
    'the N-zone file is state/nvm-zone, not in build/');
is(stats($port, 'tier')->{n_items}, 0, 'the first start holds no N item');

# demo-load on that address, reading for 1 s
my ($rc, $out) = run_binary("$root/scripts/demo-load",
    ["127.0.0.1:$port", 1], 60);
is($rc, 0, 'demo-load HOST:PORT succeeds') or diag($out);
like($out, qr/^stored .* n_items=[1-9]/m, 'demo-load filled the N-zone');
is(stop_quickstart($pid), 0, 'SIGINT stops the quickstart\'s server');

# what scripts/test removes before it builds, removed here the same way
my ($rm) = read_file("$root/scripts/test") =~ /^(rm -rf [^\n]*\bbuild\b[^\n]*)$/m;
ok($rm, 'scripts/test removes build directories with one rm -rf')
    or diag('no such line in scripts/test');
is(system('sh', '-c', "cd '$tree' && $rm"), 0, "ran: $rm");
ok(!-e "$tree/build", 'build/ is gone');
mkdir "$tree/build" or die "$tree/build: $!";
symlink $bin, "$tree/build/memcached" or die "symlink: $!";

($pid, $log) = start_quickstart('-p', $port, '-m', '8', '-o', 'nvm_size=16m');
$banner = wait_banner($pid, $log);
like($banner, qr/listening on 127\.0\.0\.1:$port /, 'started again');
my $tier = stats($port, 'tier');
cmp_ok($tier->{n_items}, '>', 0, 'the N-zone\'s items are back');
my $hits = 0;
my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
    Proto => 'tcp', Timeout => 5) or die "connect: $!";
# demo-load's keys are demo:000000 on; the stores went in order
for my $from (map { $_ * 100 } 0 .. 39) {
    my $reply = send_recv($s, 'get '
        . join(' ', map { sprintf 'demo:%06d', $_ } $from .. $from + 99)
        . "\r\n");
    $hits += () = $reply =~ /^VALUE demo:/mg;
}
close $s;
cmp_ok($hits, '>', 0, "demo-load's values are served again ($hits)");
is(stop_quickstart($pid), 0, 'the second start stops too');

done_testing();
