#!/usr/bin/perl
# tier_nvm_file.t: an nvm_path= regular file is fully allocated at start-up,
# or refused (doc/nvm.md, "nvm_path= (libpmem2)").  A hole left in the
# mapped range is a SIGBUS waiting for the file system to fill: a 64 MB
# sparse file on a 4 MB tmpfs used to start and then die after about a
# thousand 4 KB stores.  Now:
#   - a pre-sized sparse file on an ordinary directory has every block of
#     the mapped range allocated once the server is up (st_blocks), and its
#     length is unchanged;
#   - the same file on a 4 MB tmpfs is refused at start-up with one line
#     naming the path and the size, a non-zero exit and the file's length
#     unchanged; if a server did start there, it must survive the stores.
# The tmpfs part needs `mount -t tmpfs` (root); it is skipped, with the
# reason printed, where mounting is not permitted.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use File::Spec;
use File::Temp ();
use IO::Socket::INET;
use POSIX qw(WNOHANG WIFSIGNALED WTERMSIG);
use Test::More;
use MemcachedTest;

my $bin = server_bin();
my $MB = 1024 * 1024;
my $ZONE = 64 * $MB;

# A sparse file $dir/$name of $len bytes that the server (nobody, when we
# are root) can open for writing.
sub sparse_file {
    my ($dir, $name, $len) = @_;
    my $f = "$dir/$name";
    open my $fh, '>', $f or die "create $f: $!";
    close $fh;
    truncate $f, $len or die "truncate $f: $!";
    chmod 0666, $f;
    return $f;
}

sub allocated_bytes {
    my ($f) = @_;
    my @st = stat $f or return -1;
    return $st[12] * 512;
}

# ------------------------------------------- a sparse file is allocated

{
    my $dir = File::Temp::tempdir('tiernvm-XXXXXX',
        DIR => File::Spec->tmpdir, CLEANUP => 1);
    chmod 0777, $dir;
    my $f = sparse_file($dir, 'zone', $ZONE);
    diag(sprintf 'before start-up: %d bytes allocated of %d',
        allocated_bytes($f), $ZONE) if $ENV{TEST_VERBOSE};
    my $srv = eval { new_memcached("-m 2 -o nvm_path=$f,nvm_size=64m") };
    ok($srv, 'server starts on a 64 MB sparse file') or diag($@);
    if ($srv) {
        my $got = allocated_bytes($f);
        ok($got >= $ZONE, 'every block of the 64 MB mapping is allocated')
            or diag("st_blocks * 512 = $got, want at least $ZONE");
        is(-s $f, $ZONE, 'the file keeps its length');
        my $s = $srv->sock;
        reply_is(send_recv($s, "set k 0 0 2\r\nhi\r\n"), "STORED\r\n",
            'stores');
        mem_get_is($s, 'k', 'hi', 'reads back');
        $srv->stop;
    }

    # longer than nvm_size: the mapped part is allocated, the length kept
    unlink $f;
    my $g = sparse_file($dir, 'longer', 2 * $ZONE);
    $srv = eval { new_memcached("-m 2 -o nvm_path=$g,nvm_size=16m") };
    ok($srv, 'server starts on a 128 MB sparse file with nvm_size=16m')
        or diag($@);
    if ($srv) {
        my $got = allocated_bytes($g);
        ok($got >= 16 * $MB, 'the 16 MB mapped range is allocated')
            or diag("st_blocks * 512 = $got");
        is(-s $g, 2 * $ZONE, 'the longer file keeps its length');
        $srv->stop;
    }
    unlink $g;
}

# ------------------------------------ a file system too small for it

my $mnt;
my $mounted = 0;
my $pid = 0;

END {
    my $status = $?;
    if ($pid) {
        kill 'KILL', $pid;
        waitpid($pid, 0);
    }
    if ($mounted) {
        # a lazy unmount if something still holds it: never leave a mount
        system('umount', $mnt) == 0 or system('umount', '-l', $mnt);
    }
    $? = $status;
}

# Run the server on $f with nvm_size=$size; returns ('exited', $code,
# $output) when it stops by itself before accepting connections (code is
# the exit status or 'signal N'), else ('running', $port).
sub start_on {
    my ($f, $size) = @_;
    my $port = free_port();
    my $log = "$mnt.log";
    $pid = fork();
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', $log or POSIX::_exit(127);
        open STDERR, '>&', \*STDOUT or POSIX::_exit(127);
        my @user = $> == 0 ? ('-u', 'nobody') : ();
        { no warnings q(exec);
          exec { $bin } $bin, '-p', $port, '-U', 0, '-l', '127.0.0.1',
              @user, '-m', 2, '-o', "nvm_path=$f,nvm_size=$size"; }
        POSIX::_exit(127);
    }
    my $code;
    my $up = wait_until(15, sub {
        if (waitpid($pid, WNOHANG) == $pid) {
            $code = WIFSIGNALED($?) ? 'signal ' . WTERMSIG($?) : $? >> 8;
            $pid = 0;
            return 1;
        }
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
            PeerPort => $port, Proto => 'tcp', Timeout => 1);
        return $s ? 1 : 0;
    }, 0.05);
    my $out = '';
    if (open my $fh, '<', $log) {
        local $/;
        $out = <$fh> // '';
    }
    unlink $log;
    return ('exited', $code, $out) if defined $code;
    return ('running', $port) if $up;
    return ('exited', 'timeout', $out);
}

SKIP: {
    skip 'mounting a tmpfs needs root', 8 unless $> == 0;
    $mnt = File::Temp::tempdir('tiernvm-mnt-XXXXXX',
        DIR => File::Spec->tmpdir, CLEANUP => 1);
    my $err = `mount -t tmpfs -o size=4m,mode=0777 tmpfs '$mnt' 2>&1`;
    if ($? != 0) {
        # util-linux adds a second line (see dmesg): a skip reason is one
        my ($why) = split /\n/, $err;
        skip "mount -t tmpfs is not permitted here: " . ($why // '?'), 8;
    }
    $mounted = 1;
    my $f = sparse_file($mnt, 'zone', $ZONE);
    my ($how, @r) = start_on($f, '64m');
    if ($how eq 'exited') {
        my ($code, $out) = @r;
        ok($code =~ /^\d+$/ && $code != 0,
            "64 MB sparse file on a 4 MB tmpfs: exits non-zero ($code)")
            or diag('output: ' . escape_bytes($out));
        like($out, qr/\Q$f\E/, 'the message names the path');
        like($out, qr/nvm_size/, 'the message names nvm_size');
        like($out, qr/67108864 bytes|64(?:\.0)? MiB/,
            'the message gives the size');
        diag("message: $out") if $ENV{TEST_VERBOSE};
        my @lines = grep { /\S/ } split /\n/, $out;
        is(scalar @lines, 1, 'one line') or diag(escape_bytes($out));
        is(-s $f, $ZONE, 'the file keeps its length');
        ok(-e $f, 'the file is still there');
        is(allocated_bytes($f), 0, 'and nothing left allocated in it');
    }
    else {
        my ($port) = @r;
        fail('64 MB sparse file on a 4 MB tmpfs: refused at start-up');
        # what the refusal prevents: the server dies once tmpfs is full
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
            PeerPort => $port, Proto => 'tcp', Timeout => 5);
        my $v = 'x' x 4096;
        my $stored = 0;
        for my $i (1 .. 2000) {
            last unless $s;
            syswrite $s, "set k$i 0 0 4096\r\n$v\r\n";
            my $r = read_line($s, 10);
            last unless defined $r && $r eq "STORED\r\n";
            $stored++;
        }
        my $st;
        my $gone = watch_for(5, sub {
            return 0 unless waitpid($pid, WNOHANG) == $pid;
            $st = $?;
            $pid = 0;
            return 1;
        });
        my $dead = !$gone ? '' : WIFSIGNALED($st)
            ? 'signal ' . WTERMSIG($st) : 'exit ' . ($st >> 8);
        ok(!$dead, "server survives 2000 stores of 4 KB (stored $stored"
            . ($dead ? ", then died: $dead)" : ')'));
        skip 'the server started, so there is no message to check', 6;
    }
}

done_testing();
