#!/usr/bin/perl
# tier_startup.t: start-up of the tier options (doc/nvm.md, doc/tiering.md).  Every fault (missing, unwritable or
# directory nvm_path, nvm_size beyond the file system, a NUMA node that does
# not exist, nvm_node=auto without a CPU-less node, nvm_path with nvm_node,
# nvm_path without nvm_size, tier_policy=nvm without an N-zone, a file in
# use by another server, malformed values) must print a message naming the
# option, exit non-zero within seconds and leave nothing behind: no process
# listening, the backing file not grown.  The good configurations
# (anonymous, libpmem2 file, NUMA node 0, dram_node=0, emulation) must start,
# serve a set/get and report their backend in `stats settings` and
# `stats tier`.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use File::Temp ();
use IO::Socket::INET;
use Test::More;
use MemcachedTest;

my $bin = server_bin();

# memcached's own argv for a one-shot run: private port, no UDP, loopback,
# and nobody when we are root (as new_memcached does).
sub base_argv {
    my ($port) = @_;
    my @a = ('-p', $port, '-U', 0, '-l', '127.0.0.1');
    push @a, '-u', 'nobody' if $> == 0;
    return @a;
}

# Is any process still running with "-p $port" on its command line?
sub procs_with_port {
    my ($port) = @_;
    my @found;
    opendir my $dh, '/proc' or return ();
    for my $pid (grep { /^\d+$/ } readdir $dh) {
        open my $fh, '<', "/proc/$pid/cmdline" or next;
        local $/;
        my $cmd = <$fh>;
        close $fh;
        next unless defined $cmd;
        my @argv = split /\0/, $cmd;
        for my $i (0 .. $#argv - 1) {
            if ($argv[$i] eq '-p' && $argv[$i + 1] eq $port) {
                push @found, $pid;
                last;
            }
        }
    }
    closedir $dh;
    return @found;
}

sub port_open {
    my ($port) = @_;
    my $s = IO::Socket::INET->new(
        PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp',
        Timeout => 1);
    return $s ? 1 : 0;
}

# Start with "-o $opts"; it must fail cleanly with a message matching
# every regex in $res.
sub fails_ok {
    my ($name, $opts, $res, %o) = @_;
    my $port = free_port();
    my @argv = (base_argv($port), @{ $o{extra} || [] }, '-o', $opts);
    my ($code, $out) = run_binary($bin, \@argv, 10);
    my $ok = $code =~ /^\d+$/ && $code != 0;
    ok($ok, "$name: exits non-zero (got $code)")
        or diag("output: $out");
    my $all = 1;
    for my $re (@$res) {
        $all = 0 unless $out =~ $re;
    }
    ok($all, "$name: clear message") or diag(
        "output: " . escape_bytes($out) . "\nwanted: "
        . join(' and ', map { "$_" } @$res));
    ok(length($out) < 2000, "$name: a short message, no dump")
        or diag('output is ' . length($out) . ' bytes');
    ok(!port_open($port), "$name: nothing listening on port $port");
    is_deeply([procs_with_port($port)], [], "$name: no process left running");
    return $out;
}

# ---------------------------------------------------------------- faults

fails_ok('missing nvm_path', 'nvm_path=/nonexistent/dir/file,nvm_size=4m',
    [qr{/nonexistent/dir/file}, qr/nvm_path/,
     qr/no such|not exist|not found/i]);
ok(!-e '/nonexistent/dir/file', 'missing nvm_path: nothing created');

{
    my $f = shm_file();
    chmod 0444, $f;
    # as root the server drops to nobody, who cannot write a 0444 file
    # owned by root; as a plain user the 0444 mode refuses O_RDWR itself
    fails_ok('unwritable nvm_path', "nvm_path=$f,nvm_size=4m",
        [qr/\Q$f\E/, qr/permission|cannot open|writ|denied/i]);
    is(-s $f, 0, 'unwritable nvm_path: file not grown');
}

{
    my $d = File::Temp::tempdir('tierdir-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    chmod 0777, $d;
    fails_ok('directory as nvm_path', "nvm_path=$d,nvm_size=4m",
        [qr/\Q$d\E/, qr/director/i]);
}

SKIP: {
    my $dir = '/dev/shm';
    skip 'no writable /dev/shm', 7 unless -d $dir && -w $dir;
    my @df = split ' ', (grep { /\d/ } `df -Pk $dir 2>/dev/null`)[0] || '';
    skip 'df did not report /dev/shm sizes', 7 unless @df >= 4
        && $df[1] =~ /^\d+$/;
    # beyond the file system's total size: refused at once, nothing
    # allocated first (a size just above the free space would make tmpfs
    # fill memory before it says ENOSPC)
    my $kib = $df[1] + 1024 * 1024;
    my $f = shm_file($dir);
    my $out = fails_ok('nvm_size beyond the file system',
        "nvm_path=$f,nvm_size=${kib}k",
        [qr/nvm_size/, qr/\Q$f\E/, qr/larger|space|ENOSPC/i]);
    is(-s $f, 0, 'nvm_size beyond the file system: file shrunk back');
    ok(-e $f, 'nvm_size beyond the file system: file still there');
}

fails_ok('nvm_node=7', 'nvm_node=7,nvm_size=4m',
    [qr/nvm_node/, qr/7/, qr/no such|not exist|unknown|invalid/i]);
fails_ok('nvm_node=auto without a CPU-less node', 'nvm_node=auto,nvm_size=4m',
    [qr/nvm_node/, qr/auto/, qr/cpu-?less|no .*node|not found/i]);
{
    my $f = shm_file();
    fails_ok('nvm_path with nvm_node', "nvm_path=$f,nvm_node=0,nvm_size=4m",
        [qr/nvm_path/, qr/nvm_node/]);
    fails_ok('nvm_path without nvm_size', "nvm_path=$f", [qr/nvm_size/]);
    is(-s $f, 0, 'nvm_path without nvm_size: file untouched');
}
fails_ok('nvm_node without nvm_size', 'nvm_node=0', [qr/nvm_size/]);
fails_ok('tier_policy=nvm without an N-zone', 'tier_policy=nvm',
    [qr/tier_policy|nvm_size|N-zone/]);
fails_ok('dram_node=7', 'dram_node=7', [qr/dram_node/, qr/7/]);

my @bad = (
    ['nvm_size=abc', [qr/nvm_size/, qr/abc/]],
    ['nvm_size=0', [qr/nvm_size/]],
    ['nvm_size=-4m', [qr/nvm_size/]],
    ['nvm_size=5mb', [qr/nvm_size/]],
    ['nvm_size=99999999999999999999g', [qr/nvm_size/]],
    ['nvm_emulate=1', [qr/nvm_emulate/]],
    ['nvm_emulate=a:b', [qr/nvm_emulate/]],
    ['nvm_emulate=1:2:3', [qr/nvm_emulate/]],
    ['tier_policy=bogus', [qr/tier_policy/, qr/bogus/]],
    ['tier_placement=bogus', [qr/tier_placement/]],
    ['tier_promote=bogus', [qr/tier_promote/]],
    ['tier_mq_queues=0', [qr/tier_mq_queues/]],
    ['tier_mq_queues=17', [qr/tier_mq_queues/]],
    ['tier_threshold=0', [qr/tier_threshold/]],
    ['tier_threshold=300', [qr/tier_threshold/]],
    ['tier_adjust_period=0', [qr/tier_adjust_period/]],
    ['tier_decay_period=x', [qr/tier_decay_period/]],
);
for my $b (@bad) {
    my ($opt, $res) = @$b;
    # with an N-zone, so that only the value under test is wrong
    my $opts = $opt =~ /^nvm_size=/ ? $opt : "nvm_size=4m,$opt";
    fails_ok("bad value $opt", $opts, $res);
}

# a second server on a backing file in use is refused
{
    my $f = shm_file();
    my $srv = eval { new_memcached("-m 2 -o nvm_path=$f,nvm_size=4m") };
    ok($srv, 'first server on the file starts') or diag($@);
    if ($srv) {
        fails_ok('second server on the same nvm_path',
            "nvm_path=$f,nvm_size=4m", [qr/\Q$f\E/, qr/in use|lock/i]);
        ok($srv->alive, 'first server unharmed by the refused second one');
        my $s = $srv->sock;
        reply_is(send_recv($s, "set k 0 0 2\r\nhi\r\n"), "STORED\r\n",
            'first server still stores');
        mem_get_is($s, 'k', 'hi', 'first server still reads');
        $srv->stop;
    }
}

# ---------------------------------------------------------------- good ones

# start, check settings and `stats tier`, store and read back a few keys
sub starts_ok {
    my ($name, $args, $settings, $tier) = @_;
    my $srv = eval { new_memcached($args) };
    ok($srv, "$name: starts") or do { diag($@); return };
    my $st = $srv->stats('settings');
    for my $k (sort keys %$settings) {
        is($st->{$k}, $settings->{$k}, "$name: stats settings $k");
    }
    my $t = $srv->tier_stats;
    ok(defined $t->{tier_policy}, "$name: stats tier answers")
        or diag('stats tier: ' . escape_bytes($t->{_raw}));
    for my $k (sort keys %$tier) {
        my $want = $tier->{$k};
        if (ref $want eq 'Regexp') {
            like($t->{$k} // '<absent>', $want, "$name: stats tier $k");
        }
        else {
            is($t->{$k}, $want, "$name: stats tier $k");
        }
    }
    my $s = $srv->sock;
    my $ok = 1;
    my %v;
    for my $i (1 .. 50) {
        $v{"k$i"} = random_bytes(1 + int rand 3000);
        my $r = send_recv($s, "set k$i $i 0 " . length($v{"k$i"})
            . "\r\n$v{\"k$i\"}\r\n");
        $ok = 0 unless $r eq "STORED\r\n";
    }
    ok($ok, "$name: 50 sets stored");
    my $bad = 0;
    for my $i (1 .. 50) {
        my $r = send_recv($s, "get k$i\r\n");
        $bad++ unless $r eq "VALUE k$i $i " . length($v{"k$i"})
            . "\r\n$v{\"k$i\"}\r\nEND\r\n";
    }
    is($bad, 0, "$name: 50 keys read back");
    ok($srv->alive, "$name: alive");
    my $status = $srv->stop(term => 1);
    ok(defined $status, "$name: stopped by SIGTERM");
    return 1;
}

starts_ok('anonymous nvm_size=8m', '-m 2 -o nvm_size=8m',
    { nvm_size => 8 * 1024 * 1024, nvm_path => 'NULL' },
    { nvm_backend => 'anonymous', n_zone_limit => 7 * 1024 * 1024,
      d_zone_limit => 2 * 1024 * 1024, nvm_granularity => qr/^\S+$/ });

{
    my $f = shm_file();
    starts_ok('libpmem2 file in /dev/shm', "-m 2 -o nvm_path=$f,nvm_size=8m",
        { nvm_size => 8 * 1024 * 1024, nvm_path => $f },
        { nvm_backend => 'file', nvm_granularity => 'page',
          n_zone_limit => 7 * 1024 * 1024 });
    ok((-s $f) >= 8 * 1024 * 1024,
        'libpmem2 file: grown to nvm_size (space really allocated)')
        or diag('size is ' . (-s $f));
}
{
    # a file longer than nvm_size is left as it is
    my $f = shm_file();
    truncate $f, 6 * 1024 * 1024 or die "truncate: $!";
    starts_ok('libpmem2 file longer than nvm_size',
        "-m 2 -o nvm_path=$f,nvm_size=4m",
        { nvm_size => 4 * 1024 * 1024 },
        { nvm_backend => 'file', n_zone_limit => 3 * 1024 * 1024 });
    is(-s $f, 6 * 1024 * 1024, 'longer file: size unchanged');
}

starts_ok('nvm_node=0', '-m 2 -o nvm_node=0,nvm_size=8m',
    { nvm_node => 0, nvm_size => 8 * 1024 * 1024 },
    { nvm_backend => 'numa_node', n_zone_limit => 7 * 1024 * 1024 });
starts_ok('dram_node=0', '-m 2 -o dram_node=0,nvm_size=4m',
    { dram_node => 0 }, { nvm_backend => 'anonymous' });
starts_ok('dram_node=0 without an N-zone', '-m 2 -o dram_node=0',
    { dram_node => 0, nvm_size => 0 }, { n_zone_limit => 0 });
starts_ok('nvm_emulate=224:924', '-m 2 -o nvm_size=4m,nvm_emulate=224:924',
    { nvm_emulate => '224:924' },
    { nvm_emulate_read_ns => 224, nvm_emulate_write_ns => 924,
      nvm_tsc_ticks_per_ns => qr/^\d+(?:\.\d+)?$/ });
starts_ok('all tier knobs',
    '-m 2 -o nvm_size=4m,tier_policy=tlc,tier_placement=nvm,tier_promote=sync,'
    . 'tier_threshold=16,tier_adjust_period=1000,tier_decay_period=5000,'
    . 'tier_mq_queues=4',
    { tier_policy => 'tlc', tier_placement => 'nvm', tier_promote => 'sync',
      tier_threshold => 16, tier_adjust_period => 1000,
      tier_decay_period => 5000, tier_mq_queues => 4 },
    { tier_policy => 'tlc', tier_placement => 'nvm', tier_promote => 'sync',
      decay_period_requests => 5000 });
starts_ok('tier_decay_period=auto under hmcached',
    '-m 2 -o nvm_size=4m,tier_policy=hmcached,tier_decay_period=auto',
    { tier_decay_period => 'auto' }, { decay_period_requests => 1000000 });
starts_ok('tier_decay_period given under hotter',
    '-m 2 -o nvm_size=4m,tier_policy=hotter,tier_decay_period=5000',
    { tier_decay_period => 5000 }, { decay_period_requests => 5000 });

done_testing();
