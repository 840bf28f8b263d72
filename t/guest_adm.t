#!/usr/bin/perl
# guest_adm.t: ADM's shape, a fast CPU-less node (HBM) beside the DRAM,
# in a QEMU guest (scripts/guest topology "adm": node 1 CPU-less with HMAT
# read latency 40 ns against node 0's 80 ns, twice the bandwidth), one
# boot, driven over the forwarded port (t/lib/GuestVM.pm):
#   - dram_node=1 puts every D-zone page on the fast node, and the N-zone
#     goes where the N options say: nvm_node=0 binds it to node 0 (no
#     warning about node 0's CPUs, since the D-zone was put elsewhere on
#     purpose); an anonymous N-zone (nvm_size= alone) takes the CPU's
#     local node 0;
#   - dram_node=2 (no such node) is refused at start-up.
#   - nvm_node=1 binds the N-zone to the fast node when asked by number,
#     and stats settings name it with its HMAT figures; nvm_node=auto
#     never takes a CPU-less node faster than the CPUs' own (by the HMAT's
#     read latency), so here, with no other, it is refused and says why
#     (doc/nvm.md "Running on CXL memory").
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

# Under TSan (whose shadow memory is several times what the server
# touches; the guest's DRAM is 320 MiB) smaller zones and fills: the
# smallest set.  GUEST_TESTS=full runs the full set whatever the build.
my $tsan = server_sanitizer() eq 'tsan' && ($ENV{GUEST_TESTS} // '') ne 'full';
my ($M, $NMB, $EVICT, $FILL) = $tsan ? (8, 16, 30_000, 5_000)
                                     : (32, 64, 100_000, 40_000);
note $tsan ? 'the smallest set (a tsan build)' : 'the full set';

my $t0 = time;
my $vm = GuestVM->boot('adm');
note sprintf 'guest booted in %.1f s', time - $t0;

my $NSIZE = $NMB << 20;

# fill: noreply sets of 1,000-byte values, a no-op waits for them
sub fill {
    my ($srv, $n) = @_;
    my $s = $srv->sock;
    my $v = 'v' x 1000;
    for (my $i = 0; $i < $n; $i += 500) {
        mc_send($s, join('', map { "set f$_ 0 0 1000 noreply\r\n$v\r\n" }
            $i .. $i + 499), 30 * slowdown() * load_factor())
            or die 'fill: send failed';
    }
    my $r = send_recv($s, "mn\r\n", timeout => 60 * slowdown()
        * load_factor());
    die "fill: '$r'" unless $r =~ /^MN\r\n/;
    close $s;
}

sub share { my ($h, $t, $node) = @_; return $t ? ($h->{$node} // 0) / $t : 0 }

my @f = $vm->node_facts('node1/cpulist',
    map { "node$_->[0]/access0/initiators/$_->[1]" } [0, 'read_latency'],
    [1, 'read_latency'], [0, 'read_bandwidth'], [1, 'read_bandwidth']);
is($f[0], '', 'node 1 has no CPUs');
ok($f[2] < $f[1] && $f[4] > $f[3], "HMAT: node 1 is faster ($f[2] ns, "
    . "$f[4] MB/s) than node 0 ($f[1] ns, $f[3] MB/s)");

{
    my $srv = $vm->start_server("-m $M -t 2 -o dram_node=1,nvm_node=0,"
        . "nvm_size=${NMB}m");
    unlike($srv->log_text, qr/Warning: the N-zone is on NUMA node/,
        'nvm_node=0 beside dram_node=1: no warning');
    fill($srv, $EVICT);
    my $ts = $srv->tier_stats;
    cmp_ok($ts->{n_evictions} + $ts->{d_evictions}, '>', 0,
        "the fill evicts (D items $ts->{d_items}, N items $ts->{n_items})");
    my @m = $vm->numa_maps($srv->gpid);
    my ($d, $dt) = GuestVM::pages_by_node(sub { $_[0]{policy} eq 'bind:1' },
        @m);
    my ($n, $nt) = GuestVM::pages_by_node(sub { $_[0]{policy} eq 'bind:0' },
        @m);
    cmp_ok($dt, '>=', 0.9 * $M * 256, "the D-zone's pages (bind:1: $dt) "
        . "hold the $M MiB");
    is(share($d, $dt, 1), 1, "dram_node=1: every D page on the fast node 1 "
        . "($dt pages)");
    cmp_ok($nt, '>=', 0.9 * $NMB * 256, "the N-zone's pages (bind:0: $nt)");
    is(share($n, $nt, 0), 1, "nvm_node=0: every N page on node 0 ($nt pages)");
    ok($srv->kill9, 'server killed');
    ok($srv->log_clean, 'no sanitizer report') or diag $srv->log_text;
}

{
    my $srv = $vm->start_server("-m $M -t 2 -o dram_node=1,nvm_size=${NMB}m");
    fill($srv, $FILL);
    my @m = $vm->numa_maps($srv->gpid);
    my ($d, $dt) = GuestVM::pages_by_node(sub { $_[0]{policy} eq 'bind:1' },
        @m);
    # the anonymous N-zone: the one mapping of exactly nvm_size
    my @nz = grep { $_->{size} == $NSIZE && $_->{file} eq '' } @m;
    is(scalar @nz, 1, "the anonymous N-zone is one $NMB MiB mapping");
    my ($n, $nt) = GuestVM::pages_by_node(sub { $_[0]{size} == $NSIZE
        && $_[0]{file} eq '' }, @m);
    is(share($d, $dt, 1), 1, "dram_node=1: every D page on node 1 ($dt)");
    ok($nt > 0 && share($n, $nt, 0) == 1, 'the anonymous N-zone (default '
        . "policy) on the CPU's node 0 ($nt pages)");
    ok($srv->kill9, 'server killed');
    ok($srv->log_clean, 'no sanitizer report') or diag $srv->log_text;
}

{
    my ($rc, $out) = $vm->failed_start('-o dram_node=2,nvm_size=32m');
    isnt($rc, 0, 'dram_node=2 (no such node) is refused');
    like($out, qr/dram_node=2: no such NUMA node/, '... naming it');
}

{
    # given by number, the fast node takes the N-zone: stats settings name
    # it and its HMAT figures
    my $srv = $vm->start_server("-m $M -t 2 -o nvm_node=1,"
        . "nvm_size=${NMB}m");
    my $set = $srv->stats('settings');
    is(join(' ', map { $set->{$_} // 'none' } qw(nvm_node_bound
        nvm_node_read_latency_ns nvm_node_read_bandwidth_mbs)),
        "1 $f[2] $f[4]", 'stats settings name the node and its HMAT figures');
    ok($srv->kill9, 'server killed');
    ok($srv->log_clean, 'no sanitizer report') or diag $srv->log_text;
}

{
    # auto never takes a CPU-less node faster than the CPUs' own: here the
    # only one is, so it refuses and says why
    my ($rc, $out) = $vm->failed_start("-o nvm_node=auto,nvm_size=${NMB}m");
    isnt($rc, 0, 'nvm_node=auto with only a fast CPU-less node is refused');
    my $why = "nvm_node=auto: the only CPU-less NUMA node, 1, is faster "
        . "than the CPUs' memory (read latency $f[2] ns against $f[1] ns";
    like($out, qr/\Q$why\E/, '... naming the node and the latencies');
}

note sprintf 'guest_adm.t: %.1f s in all', time - $t0;
done_testing();
