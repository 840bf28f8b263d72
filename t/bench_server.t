#!/usr/bin/perl
# t/bench_server.t - runs tcload against Debian's stock memcached and
# checks its counts against the server's own stats; then against a fake
# server that answers an error and hangs up, to check errors are counted
# and the run ends by itself; then against our server in the binary
# protocol (-B binary) and over TLS (-Z, a certificate made with the
# openssl tool), every value read back checked, and with a corrupted
# value in each protocol, which tcload must report.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use MemcachedTest ();    # its watchdog, scaled for the build and the load
use File::Temp qw(tempdir);
use IO::Socket::INET;
use JSON::PP;
use POSIX ':sys_wait_h';

my $root = "$FindBin::Bin/..";
my $tc = "$root/bench/tcload";
my $mc = '/usr/bin/memcached';
system("make -s -C $root/bench >/dev/null") == 0 or die "make -C bench failed\n";

my @kids;
END { kill 'TERM', @kids if @kids; waitpid($_, 0) for @kids; }

sub free_port {
    my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                                  Proto => 'tcp', Listen => 1, ReuseAddr => 1)
        or die "socket: $!";
    my $p = $s->sockport;
    close $s;
    return $p;
}

sub wait_port {
    my ($port) = @_;
    for (1 .. 100) {
        my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Proto => 'tcp');
        if ($s) { close $s; return 1 }
        select(undef, undef, undef, 0.05);
    }
    return 0;
}

sub read_json {
    my ($f) = @_;
    open(my $fh, '<', $f) or return undef;
    local $/;
    my $j = eval { decode_json(<$fh>) };
    close $fh;
    return $j;
}

my $json = "/tmp/tcload-srv-$$.json";

# --- stock memcached ---
SKIP: {
    skip "$mc not installed", 16 unless -x $mc;
    my $port = free_port();
    my @cmd = ($mc, '-p', $port, '-U', 0, '-l', '127.0.0.1', '-m', 64, '-t', 2);
    push @cmd, '-u', 'nobody' if $> == 0;
    my $pid = fork();
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        open(STDOUT, '>', '/dev/null');
        exec(@cmd) or exit 127;
    }
    push @kids, $pid;
    ok(wait_port($port), "memcached up on port $port");

    my $out = `$tc -s 127.0.0.1:$port --preload -n 20000 -g 0.9 --dataset Uni-10000-200 -c 2 -d 4 --seed 5 --max-duration 40 --json $json 2>&1`;
    is($? >> 8, 0, 'tcload run exits 0') or diag($out);
    my $j = read_json($json);
    ok($j, 'JSON report parses') or diag($out);
    my $t = $j->{totals};
    my $ph = $j->{phases}[0];
    is($t->{errors}{total}, 0, 'no errors');
    is($ph->{preload}{set}, 10000, 'preload set every key once');
    is($ph->{run}{ops}, 20000, 'run did 20000 requests');
    is($ph->{run}{misses}, 0, 'no misses after preload (64 MB is enough)');
    ok(abs($ph->{run}{get} / 20000 - 0.9) < 0.02, "about 90% GETs ($ph->{run}{get})");
    ok($ph->{run}{latency_us}{all}{p99} >= $ph->{run}{latency_us}{all}{p50}, 'p99 >= p50');

    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Proto => 'tcp')
        or die "connect: $!";
    print $s "stats\r\n";
    my %st;
    while (my $l = <$s>) {
        last if $l =~ /^END/;
        $st{$1} = $2 if $l =~ /^STAT (\S+) (\S+)/;
    }
    close $s;
    is($st{cmd_get}, $t->{get}, "server cmd_get $st{cmd_get} = tcload gets");
    is($st{cmd_set}, $t->{set}, "server cmd_set $st{cmd_set} = tcload sets");
    is($st{get_hits}, $t->{hits}, 'server get_hits = tcload hits');

    # a second, different seed: different stream, same totals shape
    $out = `$tc -s 127.0.0.1:$port -n 2000 --dataset Uni-10000-200 --seed 6 --json $json 2>&1`;
    $j = read_json($json);
    ok($j && $j->{totals}{ops} == 2000 && $j->{totals}{errors}{total} == 0,
       'plain run without preload');

    kill 'TERM', $pid;
    waitpid($pid, 0);
    @kids = grep { $_ != $pid } @kids;
}

# --- a server that answers an error, then hangs up ---
{
    my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                                  Proto => 'tcp', Listen => 4, ReuseAddr => 1)
        or die "listen: $!";
    my $port = $l->sockport;
    my $pid = fork();
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        my $c = $l->accept or exit 1;
        my $line = <$c>;
        print $c "SERVER_ERROR out of memory testing\r\n";
        $line = <$c>;
        print $c "ERROR\r\n";
        $line = <$c>;
        close $c;
        sleep 5;
        exit 0;
    }
    push @kids, $pid;
    close $l;
    my $out = `$tc -s 127.0.0.1:$port -n 100 -g 1 --dataset Uni-100-10 --timeout 5 --max-duration 20 --json $json 2>&1`;
    is($? >> 8, 1, 'run against a hanging-up server ends with exit 1');
    my $j = read_json($json);
    ok($j, 'JSON written anyway');
    my $e = $j->{totals}{errors};
    is($e->{server_error}, 1, 'SERVER_ERROR counted');
    is($e->{error}, 1, 'ERROR counted');
    is($e->{conn_closed}, 1, 'closed connection counted');
    is($e->{lost}, 1, 'request in flight counted as lost');
    like($j->{totals}{first_error}, qr/SERVER_ERROR/, 'first error kept');
    kill 'TERM', $pid;
    waitpid($pid, 0);
    @kids = grep { $_ != $pid } @kids;

    # nobody listening
    $out = `$tc -s 127.0.0.1:$port -n 10 --json $json 2>&1`;
    is($? >> 8, 1, 'connection refused: exit 1');
    like($out, qr/Connection refused/, '... with the reason');
}
# --- our server: the binary protocol, TLS, corrupted values ---
sub tcload_json {
    my ($args) = @_;
    unlink $json;
    my $out = `$tc --max-duration 40 --timeout 10 $args --json $json 2>&1`;
    return ($? >> 8, read_json($json), $out);
}

# a full run: preload, then reads that must all hit with intact values
sub run_checks_values {
    my ($name, $port, $args) = @_;
    my ($rc, $j, $out) = tcload_json("-s 127.0.0.1:$port $args --preload "
        . "-n 4000 -g 0.9 --dataset Uni-2000-3000 -c 2 -d 4 --seed 3");
    is($rc, 0, "$name: tcload exits 0") or diag($out);
    my $ph = $j ? $j->{phases}[0] : {};
    is($j && $j->{totals}{errors}{total}, 0, "$name: no errors")
        or diag($out);
    is($ph->{preload}{set}, 2000, "$name: preload stored every key");
    is($ph->{run}{ops}, 4000, "$name: 4000 requests answered");
    ok($ph->{run}{get} > 3000 && $ph->{run}{hits} == $ph->{run}{get},
       "$name: every GET hit ($ph->{run}{hits} of $ph->{run}{get})");
}

{
    my $srv = MemcachedTest::new_memcached('-B binary -m 64');
    run_checks_values('binary', $srv->port, '-B binary');
    # sets: longer than a binary header, so the server closes at once
    my ($rc) = tcload_json('-s 127.0.0.1:' . $srv->port
        . ' -n 10 -g 0 --timeout 3');
    is($rc, 1, 'the same server refuses tcload in ASCII: binary was used');
    $srv->stop;
}

# a value that is not tcload's pattern is reported, whichever protocol
{
    my $srv = MemcachedTest::new_memcached('-m 64');
    my $s = $srv->sock;
    print $s "set k000000001 0 0 4\r\nzzzz\r\n";
    like(scalar <$s>, qr/^STORED/,
         'a foreign value stored under a tcload key');
    for my $proto (qw(ascii binary)) {
        my ($rc, $j, $out) = tcload_json('-s 127.0.0.1:' . $srv->port
            . " -B $proto -n 50 -g 1 --dist uniform --dataset fixed-2-4");
        is($rc, 1, "$proto: a bad value makes the exit status 1");
        ok($j && $j->{totals}{errors}{bad_value} > 0,
           "$proto: counted as bad_value") or diag($out);
        is($j && $j->{totals}{misses} + $j->{totals}{hits}, 50,
           "$proto: the run went on");
    }
    $srv->stop;
}

SKIP: {
    skip 'the openssl tool is missing', 8
        unless system('openssl version >/dev/null 2>&1') == 0;
    my $dir = tempdir('tcload-tls-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    chmod 0755, $dir;
    system("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1"
        . " -nodes -days 2 -subj /CN=127.0.0.1 -keyout $dir/key.pem"
        . " -out $dir/cert.pem >/dev/null 2>&1") == 0 or die "openssl failed";
    chmod 0644, "$dir/key.pem";
    my $srv = MemcachedTest::new_memcached(
        "-m 64 -Z -o ssl_chain_cert=$dir/cert.pem,ssl_key=$dir/key.pem");
    run_checks_values('TLS binary', $srv->port,
                      "--tls --tls-ca $dir/cert.pem -B binary");
    my ($rc, $j, $out) = tcload_json('-s 127.0.0.1:' . $srv->port
        . ' --tls -n 2000 -g 0.9 --dataset Uni-2000-3000 -c 2 -d 4');
    ok($rc == 0 && $j->{totals}{ops} == 2000 && !$j->{totals}{errors}{total},
       'TLS ASCII: 2000 requests, no errors') or diag($out);
    ($rc, $j, $out) = tcload_json('-s 127.0.0.1:' . $srv->port . ' -n 10');
    is($rc, 1, 'without --tls the TLS port fails the run');
    ($rc, $j, $out) = tcload_json('-s 127.0.0.1:' . $srv->port
        . " --tls --tls-ca $dir/key.pem -n 10");
    isnt($rc, 0, '--tls-ca that is no certificate: refused');
    $srv->stop;
}
unlink $json;
done_testing();
