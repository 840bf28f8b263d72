#!/usr/bin/perl
# t/bench_ycsb.t - the YCSB binding (bench/ycsb, spymemcached) loads and
# runs the core workloads A to F against the server with small counts, then
# reruns C on the records already there (LOAD=0).  Needs Java,
# Maven and the module's dependencies already in the Maven cache (it builds
# offline): otherwise it skips, saying why.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use IO::Socket::INET;
use MemcachedTest ();    # its watchdog, scaled for the build and the load

my $root = "$FindBin::Bin/..";
for my $tool (qw(java mvn)) {
    plan skip_all => "$tool not installed"
        unless grep { -x "$_/$tool" } split /:/, $ENV{PATH};
}
my @bins = grep { defined && -x } ($ENV{MEMCACHED_BIN}, "$root/build/memcached",
                                   '/usr/bin/memcached');
plan skip_all => 'no memcached binary (MEMCACHED_BIN, build/memcached)' unless @bins;
my $mc = $bins[0];

# Why an offline Maven build failed, in one line: the first artifact the
# local cache lacks, else Maven's first error without its colours and
# help references.
sub maven_failure {
    my ($log) = @_;
    $log =~ s/\e\[[0-9;]*m//g;
    return "Maven's local cache lacks $1"
        if $log =~ /artifact (\S+) has not been downloaded/;
    my ($err) = $log =~ /^\[ERROR\]\s*(\S.*)$/m;
    $err //= 'mvn failed without an [ERROR] line';
    $err =~ s/\s*-> \[Help \d+\]//;
    return length $err > 160 ? substr($err, 0, 157) . '...' : $err;
}

my $jar = "$root/bench/ycsb/target/ycsb-tiercached.jar";
my $build = `cd $root/bench/ycsb && mvn -q -B -o -Dstyle.color=never package 2>&1`;
plan skip_all => 'bench/ycsb does not build offline ('
    . maven_failure($build) . '; run mvn package in bench/ycsb once online)'
    if $? != 0 || !-f $jar;

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
my $up = 0;
for (1 .. 100) {
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Proto => 'tcp');
    if ($s) { close $s; $up = 1; last }
    select(undef, undef, undef, 0.05);
}
ok($up, "$mc up on port $port") or die "server did not start\n";

my $out = `RECORDS=2000 OPS=4000 MVN_OFFLINE=1 $root/scripts/ycsb 127.0.0.1:$port a b c d e f 2>&1`;
is($? >> 8, 0, 'scripts/ycsb exits 0') or diag($out);
like($out, qr/^workload a -load: \[INSERT\], Return=OK, 2000$/m, 'load inserted 2000 records');

# scripts/ycsb's count of OP's operations that returned RET in workload WL
sub returned {
    my ($wl, $op, $ret) = @_;
    my ($n) = $out =~ /^workload $wl -t: \[\Q$op\E\], Return=$ret, (\d+)$/m;
    return $n // 0;
}
for my $wl (qw(a b c d e f)) {
    like($out, qr/^workload $wl -t: \[OVERALL\], Throughput\(ops\/sec\), [0-9.]+$/m,
         "workload $wl reports throughput");
}
for my $wl (qw(a b c)) {
    is(returned($wl, 'READ', 'OK') + returned($wl, 'UPDATE', 'OK'), 4000,
       "workload $wl: every read and update OK");
}
ok(returned('d', 'INSERT', 'OK') > 0, 'workload d inserts');
is(returned('d', 'READ', 'OK') + returned('d', 'INSERT', 'OK'), 4000,
   'workload d: every read and insert OK');
ok(returned('e', 'INSERT', 'OK') > 0, 'workload e inserts');
is(returned('e', 'SCAN', 'NOT_IMPLEMENTED') + returned('e', 'INSERT', 'OK'), 4000,
   'workload e: inserts OK, scans NOT_IMPLEMENTED (memcached has no scan)');
like($out, qr/^workload e -t: \[SCAN-FAILED\], Operations, \d+$/m,
     'workload e: the no-op scans are listed as SCAN-FAILED');
is(returned('f', 'READ', 'OK'), 4000, 'workload f: every operation reads');
my ($rmw) = $out =~ /^workload f -t: \[READ-MODIFY-WRITE\], Operations, (\d+)$/m;
ok($rmw, 'workload f reports READ-MODIFY-WRITE');
is(returned('f', 'UPDATE', 'OK'), $rmw // -1,
   'workload f: each read-modify-write updated');
unlike($out, qr/Return=(ERROR|NOT_FOUND|UNEXPECTED_STATE)/, 'no failed operations');

# D's inserts and E's both start at key 2000 (overwriting each other)
my $inserted = returned('d', 'INSERT', 'OK');
$inserted = returned('e', 'INSERT', 'OK') if returned('e', 'INSERT', 'OK') > $inserted;

my $again = `LOAD=0 RECORDS=2000 OPS=4000 MVN_OFFLINE=1 $root/scripts/ycsb 127.0.0.1:$port c 2>&1`;
is($? >> 8, 0, 'LOAD=0 scripts/ycsb c exits 0') or diag($again);
unlike($again, qr/ -load: /, 'LOAD=0: no load phase');
like($again, qr/^workload c -t: \[READ\], Return=OK, 4000$/m,
     'LOAD=0: workload c reads the records loaded before');

my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Proto => 'tcp');
print $s "stats\r\n";
my $items;
while (my $l = <$s>) {
    $items = $1 if $l =~ /^STAT curr_items (\d+)/;
    last if $l =~ /^END/;
}
is($items, 2000 + $inserted, 'the server holds the 2000 records and the inserted ones');
done_testing();
