#!/usr/bin/perl
# guest_cxl.t: the server on CXL memory, in a QEMU guest (scripts/guest
# topology "cxl": node 0 CPU + DRAM, node 1 CPU-less with HMAT latency
# 250 ns, node 2 an NVDIMM that becomes /dev/dax0.0 and then kmem), one
# boot, driven over the forwarded port (t/lib/GuestVM.pm).  In order:
#   1. CXL as a node: the kernel's view (no CPUs, HMAT latency);
#      nvm_node=auto and nvm_node=1 put every N-zone page on node 1 and
#      the D-zone's on node 0 (numa_maps), after a fill that evicts and a
#      read phase that promotes and demotes; a node with CPUs is accepted
#      with a warning that names it.
#   3. a tmpfs bound to node 1 (mount -o mpol=bind:1): the file-backed
#      N-zone's pages on node 1; every item back after a graceful
#      restart, every acknowledged N item after kill -9.
#   2. CXL as device DAX (/dev/dax0.0 on node 2): devdax backend, every
#      item back after a graceful restart, every acknowledged N item after
#      kill -9, a changed nvm_size starts cold and says why.
#   5. kmem: the device onlined as system RAM lands in a lower memory
#      tier; nvm_node=auto then picks it (the largest CPU-less node).
#   Bad input: a node that does not exist, nvm_size larger than the node,
#   a device DAX smaller than nvm_size, a device DAX in system-ram mode:
#   each refused at start-up with a message naming it, no server left
#   (also a zone that fits node 1 but not its free memory, the node
#   filled by a tmpfs file first).
# Skips (one line) only when QEMU cannot start here at all.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use MemcachedTest;
use GuestVM;

my ($ok, $why) = GuestVM::available();
plan skip_all => "no guest: $why" unless $ok;

# The sizes: a sanitizer build (several times slower, in a guest already
# slowed by TCG) runs the smaller set: one read pass, one crash cycle per
# backend, smaller fills where no eviction is wanted; under TSan also
# smaller zones (its shadow memory is several times what the server
# touches, and the guest's DRAM is 320 MiB).  GUEST_TESTS=full runs the
# full set whatever the build.
my $san = ($ENV{GUEST_TESTS} // '') eq 'full' ? '' : server_sanitizer();
my %P = $san eq '' ? (
    set => 'full', m => 16, nsize => 64, evict => 120_000, node1 => 90_000,
    tmpfs => 50_000, dax => 60_000, dax_mb => 128, crash => 2, batches => 6,
    reads => 3, kmem => 60_000,
) : $san eq 'asan' ? (
    set => 'smaller', m => 16, nsize => 64, evict => 120_000, node1 => 30_000,
    tmpfs => 30_000, dax => 30_000, dax_mb => 128, crash => 1, batches => 6,
    reads => 1, kmem => 20_000,
) : (
    set => 'smallest', m => 8, nsize => 16, evict => 30_000, node1 => 5_000,
    tmpfs => 5_000, dax => 5_000, dax_mb => 32, crash => 1, batches => 3,
    reads => 1, kmem => 5_000,
);
note "the $P{set} set" . ($san ? " (a $san build)" : '');

my $t0 = time;
my $vm = GuestVM->boot('cxl');
note sprintf 'guest booted in %.1f s', time - $t0;

my $VSIZE = 1000;
# a deadline for something that must happen, stretched for a slow build
# on a busy machine
sub within { return $_[0] * slowdown() * load_factor() }

sub value_of { my ($i) = @_; return substr(sprintf('%08d', $i) x 126, 0, $VSIZE) }

# Store keys $prefix$from .. $prefix$($from+$n-1), noreply, pipelined; a
# no-op at the end waits for them all.
sub fill {
    my ($srv, $prefix, $from, $n) = @_;
    my $s = $srv->sock;
    for (my $i = $from; $i < $from + $n; $i += 500) {
        my $to = $i + 499 < $from + $n - 1 ? $i + 499 : $from + $n - 1;
        my $req = join '', map {
            "set $prefix$_ 0 0 $VSIZE noreply\r\n" . value_of($_) . "\r\n"
        } $i .. $to;
        mc_send($s, $req, within(30)) or die "fill: send failed";
    }
    my $r = send_recv($s, "mn\r\n", timeout => within(60));
    die "fill: no MN but '$r'" unless $r =~ /^MN\r\n/;
    close $s;
}

# How many of the keys hold exactly their value: multi-gets of 100.
sub count_intact {
    my ($srv, $prefix, @ids) = @_;
    my $s = $srv->sock;
    my $good = 0;
    while (my @b = splice @ids, 0, 100) {
        my $r = send_recv($s, 'get ' . join(' ', map { "$prefix$_" } @b)
            . "\r\n", timeout => within(30));
        while ($r =~ /VALUE \Q$prefix\E(\d+) \d+ (\d+)\r\n/g) {
            my ($id, $len) = ($1, $2);
            my $v = substr $r, pos($r), $len;
            $good++ if $v eq value_of($id);
        }
    }
    close $s;
    return $good;
}

# The N-zone's and the D-zone's pages per node: (N pages by node, N
# total, D pages by node, D total); $is_n and $is_d pick their VMAs.
sub placement {
    my ($srv, $is_n, $is_d) = @_;
    my @m = $vm->numa_maps($srv->gpid);
    my ($n, $nt) = GuestVM::pages_by_node($is_n, @m);
    my ($d, $dt) = $is_d ? GuestVM::pages_by_node($is_d, @m) : ({}, 0);
    return ($n, $nt, $d, $dt);
}

# The rest of the process's anonymous pages (heap, hash table, thread
# stacks, a sanitizer's shadow): where the kernel's default policy put
# them, for the record (node 0 unless it ran short).
sub other_anon {
    my ($srv, $when) = @_;
    my ($o, $ot) = GuestVM::pages_by_node(sub { $_[0]{policy} eq 'default'
        && $_[0]{anon} > 0 && $_[0]{file} eq '' }, $vm->numa_maps($srv->gpid));
    note sprintf '%s: other anonymous pages (default policy): %d, %s on '
        . 'node 0', $when, $ot, pct($ot ? ($o->{0} // 0) / $ot : 0);
}

sub share { my ($h, $t, $node) = @_; return $t ? ($h->{$node} // 0) / $t : 0 }

sub pct { return sprintf '%.1f%%', 100 * $_[0] }

# kill -9, and no sanitizer report in its log
sub finish {
    my ($srv, $label) = @_;
    ok($srv->kill9, "$label killed");
    ok($srv->log_clean, "$label: no sanitizer report") or diag $srv->log_text;
}

# ---- 1. CXL as a CPU-less node ----

my @f = $vm->node_facts('node1/cpulist',
    'node0/access0/initiators/read_latency',
    'node1/access0/initiators/read_latency',
    'node1/access0/initiators/read_bandwidth', 'has_memory');
is($f[0], '', 'node 1 has no CPUs (cpulist empty)');
is_deeply([@f[1, 2]], [80, 250],
    'HMAT: read latency 80 ns on node 0, 250 ns on node 1');
note "node 1 read bandwidth $f[3] MB/s; nodes with memory: $f[4]";
is($f[4], '0-1', 'node 2 (the NVDIMM) has no memory online at boot');

{
    # dram_node=0: the D-zone's pages are its bind:0 mappings
    my $srv = $vm->start_server("-m $P{m} -t 2 -o nvm_node=auto,"
        . "nvm_size=$P{nsize}m,dram_node=0");
    my $is_n = sub { $_[0]{policy} eq 'bind:1' };
    my $is_d = sub { $_[0]{policy} eq 'bind:0' };
    my $ts = $srv->tier_stats;
    is($ts->{nvm_backend}, 'numa_node', 'nvm_node=auto: numa_node backend');
    my $set = $srv->stats('settings');
    is(join(' ', map { $set->{$_} // 'none' } qw(nvm_node nvm_node_bound
        nvm_node_read_latency_ns nvm_node_read_bandwidth_mbs)),
        'auto 1 250 5120', 'stats settings: nvm_node auto, bound to node 1, '
        . 'its HMAT read latency 250 ns and bandwidth 5120 MB/s');
    unlike($srv->log_text, qr/Warning: the N-zone is on NUMA node/,
        'nvm_node=auto: no warning about CPUs');
    fill($srv, 'a', 0, $P{evict});
    $ts = $srv->tier_stats;
    cmp_ok($ts->{n_evictions} + $ts->{d_evictions}, '>', 0,
        "$P{evict} values of 1,000 bytes evict ($ts->{n_evictions} N, "
        . "$ts->{d_evictions} D)");
    my ($n, $nt, $d, $dt) = placement($srv, $is_n, $is_d);
    cmp_ok($nt, '>=', 0.9 * $P{nsize} * 256,
        "the N-zone (bind:1) has its pages after the fill ($nt)");
    cmp_ok($dt, '>=', 0.9 * $P{m} * 256,
        "the D-zone (bind:0) has its pages after the fill ($dt)");
    is(share($n, $nt, 1), 1, 'after the fill: every N-zone page on node 1 '
        . "($nt pages)");
    is(share($d, $dt, 0), 1, 'after the fill: every D-zone page on node 0 '
        . "($dt pages)");
    other_anon($srv, 'after the fill');
    # a read phase over a hot range: N hits promote, D is full so the
    # promotions demote
    my $s = $srv->sock;
    for (1 .. $P{reads}) {
        for (my $i = $P{evict} * 5 / 6; $i < $P{evict}; $i += 100) {
            send_recv($s, 'get ' . join(' ', map { "a$_" } $i .. $i + 99)
                . "\r\n", timeout => within(30));
        }
    }
    close $s;
    my $ts2 = $srv->tier_stats;
    my $moved = join ', ', map { "$_ " . ($ts2->{$_} // '?') }
        qw(promotions demotions n_pages_moved);
    ($n, $nt, $d, $dt) = placement($srv, $is_n, $is_d);
    is(share($n, $nt, 1), 1, "after reads ($moved): every N-zone page on "
        . "node 1 ($nt pages)");
    is(share($d, $dt, 0), 1, "after reads: every D-zone page on node 0 "
        . "($dt pages)");
    other_anon($srv, 'after reads');
    # values of a second size class into a full N-zone: its pages go to
    # the new class (page moves) or its items are evicted
    my $big = 'L' x 8000;
    $s = $srv->sock;
    for (my $i = 0; $i < 2000; $i += 100) {
        mc_send($s, join('', map { "set L$_ 0 0 8000 noreply\r\n$big\r\n" }
            $i .. $i + 99), within(30)) or die 'large values: send failed';
    }
    like(send_recv($s, "mn\r\n", timeout => within(60)), qr/^MN\r\n/,
        '2,000 values of 8,000 bytes stored');
    close $s;
    my $ts3 = $srv->tier_stats;
    ($n, $nt, $d, $dt) = placement($srv, $is_n, $is_d);
    is(share($n, $nt, 1), 1, 'after a second size class (n_pages_moved '
        . ($ts3->{n_pages_moved} // '?') . ", N evictions $ts3->{n_evictions}"
        . "): every N-zone page on node 1 ($nt pages)");
    is(share($d, $dt, 0), 1, 'after a second size class: every D-zone page '
        . "on node 0 ($dt pages)");
    finish($srv, 'server');
}

{
    my $srv = $vm->start_server("-m $P{m} -t 2 -o nvm_node=1,"
        . "nvm_size=$P{nsize}m");
    fill($srv, 'b', 0, $P{node1});
    my ($n, $nt) = placement($srv, sub { $_[0]{policy} eq 'bind:1' });
    ok($nt > 0 && share($n, $nt, 1) == 1,
        "nvm_node=1: every N-zone page on node 1 ($nt pages)");
    finish($srv, 'server');
}

{
    my $srv = $vm->start_server("-m $P{m} -t 2 -o nvm_node=0,nvm_size=16m");
    like($srv->log_text, qr/Warning: the N-zone is on NUMA node 0, which has CPUs \(0\)/,
        'nvm_node=0 (a node with CPUs) starts with a warning naming it');
    finish($srv, 'server');
}

# ---- bad input on nodes ----

{
    my ($rc, $out) = $vm->failed_start('-o nvm_node=3,nvm_size=32m');
    isnt($rc, 0, 'nvm_node=3 (no such node) is refused');
    like($out, qr/nvm_node=3: no such NUMA node \(this machine has nodes 0-1\)/,
        '... naming the node and the nodes there are');
    ($rc, $out) = $vm->failed_start('-o nvm_node=1,nvm_size=512m');
    isnt($rc, 0, 'nvm_size=512m on the 256 MiB node 1 is refused');
    like($out, qr/nvm_size=536870912 bytes = 512\.0 MiB is larger than NUMA node 1 /,
        '... naming the size and the node');
    # node 1 mostly taken by a file in a tmpfs bound to it: a zone that
    # fits the node but not its free memory is refused
    my ($fout, $frc) = $vm->run('mkdir -p /mnt/fill && mount -t tmpfs -o '
        . 'size=200m,mpol=bind:1 tmpfs /mnt/fill && dd if=/dev/zero '
        . 'of=/mnt/fill/f bs=1M count=120 2>/dev/null && echo filled', 120);
    is($fout, "filled\n", 'node 1: 120 MiB taken by a tmpfs file');
    ($rc, $out) = $vm->failed_start('-o nvm_node=1,nvm_size=100m');
    isnt($rc, 0, 'nvm_size=100m with node 1 mostly taken is refused');
    like($out, qr/nvm_size=\S+ bytes = 100\.0 MiB is more than NUMA node 1 has free/,
        '... naming the size, the node and its free memory');
    ($fout) = $vm->run('rm -f /mnt/fill/f && umount /mnt/fill && echo freed',
        60);
    is($fout, "freed\n", 'node 1 freed again');
    is(scalar $vm->run('pidof memcached || echo none'), "none\n",
        'no server left running in the guest');
}

# ---- 3. a tmpfs bound to node 1 ----

# The crash check (doc/restart.md "What survives"), a few cycles of the
# crash torture: acknowledged sets stream in, a kill -9 lands while a
# batch is in flight, the server starts again on the same zone; every
# key acknowledged before (this cycle's and the earlier ones') must be
# back with its value.
sub crash_cycles {
    my ($label, $args, $cycles) = @_;
    my @acked;
    my $next = 0;
    for my $cycle (1 .. $cycles) {
        my $srv = $vm->start_server($args);
        is(count_intact($srv, 'c', @acked), scalar @acked,
            "$label: cycle $cycle starts with every acknowledged key "
            . '(' . scalar(@acked) . ')') if @acked;
        my $s = $srv->sock;
        for my $batch (1 .. $P{batches}) {
            my @ids = $next .. $next + 299;
            $next += 300;
            my $req = join '', map {
                "set c$_ 0 0 $VSIZE\r\n" . value_of($_) . "\r\n" } @ids;
            mc_send($s, $req, within(30));
            # the last batch: the kill lands while it is being served
            ok($srv->kill9, "$label: kill -9 in cycle $cycle")
                if $batch == $P{batches};
            for my $id (@ids) {
                my $l = read_line($s, within(10));
                last unless defined $l;
                push @acked, $id if $l eq "STORED\r\n";
            }
        }
        close $s;
    }
    my $srv = $vm->start_server($args);
    like($srv->log_text, qr/^(?!.*starting with a clean N-zone)/s,
        "$label: the last restart is warm");
    is(count_intact($srv, 'c', @acked), scalar @acked,
        "$label: after $cycles kill -9s every acknowledged N item is back ("
        . scalar(@acked) . ')');
    finish($srv, $label);
}

# Every item back after SIGUSR1 and a start on the same zone.
sub graceful_restart {
    my ($label, $args, $n, $is_n, $is_d) = @_;
    my $srv = $vm->start_server($args);
    fill($srv, 'g', 0, $n);
    my $ts = $srv->tier_stats;
    is($ts->{n_evictions} + $ts->{d_evictions}, 0,
        "$label: $n items stored without eviction (D $ts->{d_items}, "
        . "N $ts->{n_items})");
    is(count_intact($srv, 'g', 0 .. $n - 1), $n, "$label: all $n there");
    my @r;
    @r = placement($srv, $is_n, $is_d) if $is_n;
    ok($srv->stop_graceful, "$label: graceful stop (SIGUSR1)");
    ok($srv->log_clean, "$label: no sanitizer report after the graceful "
        . 'stop') or diag $srv->log_text;
    $srv = $vm->start_server($args);
    is(count_intact($srv, 'g', 0 .. $n - 1), $n,
        "$label: every item back after the graceful restart (100%)");
    finish($srv, $label);
    return @r;
}

{
    my ($out, $rc) = $vm->run('mkdir -p /mnt/cxl && mount -t tmpfs -o '
        . 'mpol=bind:1,size=160m tmpfs /mnt/cxl && touch /mnt/cxl/zone '
        . '/mnt/cxl/crash && grep -c mpol=bind:1 /proc/mounts');
    is($rc, 0, 'tmpfs mounted with mpol=bind:1');
    my $zone = '/mnt/cxl/zone';
    my $is_n = sub { $_[0]{file} eq $zone };
    my $is_d = sub { $_[0]{policy} eq 'bind:0' };
    my ($n, $nt, $d, $dt) = graceful_restart('tmpfs on node 1',
        "-m $P{m} -t 2 -o nvm_path=$zone,nvm_size=$P{nsize}m,dram_node=0",
        $P{tmpfs},
        $is_n, $is_d);
    ok($nt > 0 && share($n, $nt, 1) == 1,
        "tmpfs on node 1: every N-zone page on node 1 ($nt pages)");
    ok($dt > 0 && share($d, $dt, 0) == 1,
        "tmpfs on node 1: every D-zone page on node 0 ($dt pages)");
    crash_cycles('tmpfs on node 1', "-m 4 -t 2 -o nvm_path=/mnt/cxl/crash,"
        . 'nvm_size=16m,tier_policy=nvm', $P{crash});
}

# ---- 2. CXL as device DAX ----

{
    my ($out, $rc) = $vm->run('ndctl create-namespace -f -e namespace0.0 '
        . '--mode=devdax --map=mem -a 2M >/dev/null && '
        . 'cat /sys/bus/dax/devices/dax0.0/target_node', 120);
    is("$rc $out", "0 2\n", 'ndctl: /dev/dax0.0 made, its memory on node 2');
    my $args = "-m $P{m} -t 2 -o nvm_path=/dev/dax0.0,nvm_size=$P{dax_mb}m";
    my $srv = $vm->start_server($args);
    my $ts = $srv->tier_stats;
    is($ts->{nvm_backend}, 'devdax', 'nvm_path=/dev/dax0.0: devdax backend '
        . "(granularity $ts->{nvm_granularity})");
    finish($srv, 'server');
    graceful_restart('devdax', $args, $P{dax});
    # a changed size: the zone's layout no longer fits, a cold start
    my $cold = '-m 4 -t 2 -o nvm_path=/dev/dax0.0,nvm_size='
        . ($P{dax_mb} / 2) . 'm';
    $srv = $vm->start_server($cold);
    like($srv->log_text, qr/nvm_size changed.*starting with a clean N-zone/,
        'devdax: a changed nvm_size starts cold and says why');
    is(count_intact($srv, 'g', 0 .. 99), 0, '... with none of the old items');
    finish($srv, 'server');
    crash_cycles('devdax', "$cold,tier_policy=nvm", $P{crash});
    my ($frc, $fout) = $vm->failed_start('-o nvm_path=/dev/dax0.0,nvm_size=1g');
    isnt($frc, 0, 'nvm_size=1g on the 510 MiB /dev/dax0.0 is refused');
    like($fout, qr/larger than the device \/dev\/dax0\.0/,
        '... naming the device and its size');
}

# ---- 5. kmem: the device onlined as system RAM ----

{
    my ($out, $rc) = $vm->run('daxctl reconfigure-device --mode=system-ram '
        . 'dax0.0 >/dev/null 2>&1; cat /sys/devices/system/node/has_memory; '
        . 'for t in /sys/devices/virtual/memory_tiering/memory_tier*; do '
        . 'echo ${t##*/} $(cat $t/nodelist); done', 120);
    my @l = split /\n/, $out;
    is($l[0], '0-2', 'daxctl: node 2 has memory online (kmem)');
    my %tier = map { (split ' ', $_)[1] => (split ' ', $_)[0] } @l[1 .. $#l];
    my ($t01) = $tier{'0-1'} =~ /(\d+)$/ if $tier{'0-1'};
    my ($t2) = $tier{2} =~ /(\d+)$/ if $tier{2};
    ok(defined $t01 && defined $t2 && $t2 > $t01,
        'node 2 is in a lower memory tier than nodes 0-1 ('
        . join(', ', map { "$tier{$_}: $_" } sort keys %tier) . ')');
    my ($frc, $fout) = $vm->failed_start('-o nvm_path=/dev/dax0.0,nvm_size=32m');
    isnt($frc, 0, 'nvm_path= a device DAX in system-ram mode is refused');
    like($fout, qr/nvm_path=\/dev\/dax0\.0: the device DAX is onlined as system RAM/,
        '... saying so');
    my $srv = $vm->start_server("-m $P{m} -t 2 -o nvm_node=auto,"
        . "nvm_size=$P{nsize}m");
    fill($srv, 'k', 0, $P{kmem});
    my ($n, $nt) = placement($srv, sub { $_[0]{policy} =~ /^bind:/ });
    ok($nt > 0 && share($n, $nt, 2) == 1, 'nvm_node=auto with two CPU-less '
        . "nodes picks the larger, the kmem node 2: every N page there ($nt)");
    my $set = $srv->stats('settings');
    is(join(' ', map { $set->{$_} // 'none' } qw(nvm_node_bound
        nvm_node_read_latency_ns)), '2 300',
        'stats settings: bound to node 2, read latency 300 ns');
    finish($srv, 'server');
}

note sprintf 'guest_cxl.t: %.1f s in all', time - $t0;
done_testing();
