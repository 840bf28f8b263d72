#!/usr/bin/perl
# options.t: options that cannot take effect (doc/protocol.md "Options that
# cannot take effect", doc/tiering.md "Options").  Where running without
# the option would lose what the operator configured (extstore's capacity,
# the proxy, new keys in the N-zone, items kept across restarts, an
# N-zone too small to hold an item) the server must refuse to start: a
# non-zero exit within seconds and one line naming the option and why.
# Where the option only tunes something absent, the server must start and
# say on stderr, once per option, that it has no effect; a configuration
# whose options all take effect must start without a warning.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $bin = server_bin();

# memcached's argv for a one-shot run: no port to bind (-p 0 takes any),
# no UDP, loopback, nobody when we are root.
sub one_shot_argv {
    my @a = ('-p', 0, '-U', 0, '-l', '127.0.0.1');
    push @a, '-u', 'nobody' if $> == 0;
    return @a;
}

# `memcached $args` must exit with EX_USAGE (64) and one line matching
# every regex in $res.
sub refused_ok {
    my ($args, $res) = @_;
    my ($code, $out) = run_binary($bin, [one_shot_argv(), split ' ', $args],
        10);
    is($code, 64, "$args: refused with exit code 64") or diag("output: $out");
    my @lines = split /\n/, $out;
    is(scalar @lines, 1, "$args: one line") or diag("output: $out");
    for my $re (@$res) {
        like($out, $re, "$args: message says $re");
    }
}

# `memcached $args` must start, serve a set/get, and have printed exactly
# the lines matching @$res (in that order) and nothing else.
sub warns_ok {
    my ($args, $res) = @_;
    my $srv = eval { new_memcached($args) };
    ok($srv, "$args: starts") or do { diag($@); return };
    my @lines = split /\n/, $srv->log_text;
    is(scalar @lines, scalar @$res, "$args: " . scalar(@$res)
        . ' line(s) on stderr') or diag(join "\n", @lines);
    for my $i (0 .. $#$res) {
        like($lines[$i] // '', $res->[$i], "$args: line " . ($i + 1));
    }
    my $s = $srv->sock;
    reply_is(send_recv($s, "set k 0 0 2\r\nhi\r\n"), "STORED\r\n",
        "$args: stores");
    mem_get_is($s, 'k', 'hi', "$args: reads back");
    $srv->stop;
}

# A regex for exactly this line.
sub line_re { my ($l) = @_; return qr/^\Q$l\E$/ }

# --------------------------------------------------- refused at start-up

refused_ok('-o ext_path=/tmp/extstore:64m',
    [qr/^ext_path: /, qr/capacity/, qr/nvm_path=FILE,nvm_size=SIZE/]);
refused_ok('-o read_buf_mem_limit=-1',
    [line_re('Invalid value for read_buf_mem_limit: -1')]);
refused_ok('-o read_buf_mem_limit=abc',
    [line_re('Invalid value for read_buf_mem_limit: abc')]);
refused_ok('-o proxy_config=/etc/proxy.lua',
    [qr/^proxy_config: /, qr/proxy is not supported/]);
refused_ok('-o tier_placement=nvm',
    [qr/^tier_placement=nvm needs an N-zone/, qr/no nvm_size= was given/]);
refused_ok('-o nvm_size=8m,tier_policy=dram,tier_placement=nvm',
    [qr/^tier_placement=nvm needs an N-zone/,
     qr/tier_policy=dram leaves it unused/]);
# the default policy without an N-zone keeps everything in DRAM; one asked
# for by name needs the zone
refused_ok('-o tier_policy=hmcached',
    [line_re('tier_policy=hmcached needs an N-zone: give nvm_size=')]);
refused_ok('-o tier_policy=hotter',
    [line_re('tier_policy=hotter needs an N-zone: give nvm_size=')]);
refused_ok('-o nvm_restart=require',
    [qr/^nvm_restart=require needs an N-zone/, qr/no nvm_size= was given/]);
refused_ok('-o nvm_size=8m,nvm_restart=require',
    [qr/^nvm_restart=require needs an nvm_path= N-zone/,
     qr/an anonymous N-zone starts empty/]);
refused_ok('-o nvm_node=0,nvm_size=8m,nvm_restart=require',
    [qr/^nvm_restart=require needs an nvm_path= N-zone/,
     qr/an nvm_node= N-zone starts empty/]);
refused_ok('-o nvm_size=8m,nvm_verify=always',
    [line_re('nvm_verify must be recovery or read (got always)')]);
# the segmented LRU's tuning: memcached's bounds (doc/tiering.md
# "Segments"); memcached 1.6.18 has no lru_segmented sub-option
refused_ok('-o hot_lru_pct=80',
    [line_re('hot_lru_pct must be between 1 and 79')]);
refused_ok('-o hot_lru_pct=50',
    [line_re('hot_lru_pct + warm_lru_pct must be at most 80')]);
refused_ok('-o hot_max_factor=0',
    [line_re('hot_max_factor must be greater than 0')]);
refused_ok('-o no_lru_segmented',
    [line_re('Illegal suboption "no_lru_segmented"')]);

# the zone's first page holds its metadata: two pages at least
refused_ok('-o nvm_size=4k',
    [qr/^nvm_size: an N-zone of 4096 bytes is too small/,
     qr/minimum is two slab pages, 2m/, qr/metadata/]);
refused_ok('-o nvm_size=2047k',
    [qr/^nvm_size: an N-zone of 2096128 bytes/, qr/2m/]);
refused_ok('-o nvm_size=8m,tier_staging_limit=lots',
    [line_re('tier_staging_limit must be a size such as 8m, or 0 (got '
        . 'lots)')]);
refused_ok('-m 64 -I 2m -o nvm_size=3m',
    [qr/^nvm_size: an N-zone of 3145728 bytes/, qr/two slab pages, 4m/,
     qr/larger of -I and 1m/]);
{
    my $f = shm_file();
    refused_ok("-o nvm_path=$f,nvm_size=1m", [qr/^nvm_size: /, qr/2m/]);
    is(-s $f, 0, 'nvm_size=1m on a file: the file is not grown');
}

# the logger's buffers: memcached's words and exit status (1) when missing
# or unparsable; 0 and sizes past 4 GB, which it takes, are refused here
for my $case (
    ['watcher_logbuf_size=x', 1,
     line_re('could not parse argument to watcher_logbuf_size')],
    ['worker_logbuf_size', 1, line_re('Missing worker_logbuf_size argument')],
    ['worker_logbuf_size=0', 64,
     line_re('worker_logbuf_size must be between 1 and 4194303 (kilobytes)')],
    ['watcher_logbuf_size=4194304', 64,
     qr/^watcher_logbuf_size must be between 1 and 4194303/],
) {
    my ($opt, $want, $re) = @$case;
    my ($code, $out) = run_binary($bin, [one_shot_argv(), '-o', $opt], 10);
    is($code, $want, "-o $opt: exit status $want") or diag("output: $out");
    like($out, $re, "-o $opt: says why");
}

# -o hashpower: memcached's bounds, 12 to 32 and above its item lock
# table, which grows with -t (12 at -t 4): the same refusals from both
# servers (memcached exits 1, we 64 as for any bad option)
for my $case (['-o hashpower=11', qr/^Initial hashtable multiplier of 11 is too low$/m],
              ['-o hashpower=33', qr/^Initial hashtable multiplier of 33 is too high$/m],
              ['-t 4 -o hashpower=12',
               qr/^Hash table power size \(12\) cannot be equal to or less than item lock table \(12\)$/m],
              ['-t 16 -o hashpower=14',
               qr/^Hash table power size \(14\) cannot be equal to or less than item lock table \(14\)$/m]) {
    my ($args, $re) = @$case;
    for my $b ([tiercached => $bin], -x stock_bin() && !server_is_stock()
               ? ([memcached => stock_bin()]) : ()) {
        my ($code, $out) = run_binary($b->[1],
            [one_shot_argv(), split ' ', $args], 10);
        ok($code =~ /^\d+$/ && $code != 0, "$b->[0]: $args: refused ($code)");
        like($out, $re, "$b->[0]: $args: says why");
    }
}
for my $args ('-t 3 -o hashpower=12', '-t 16 -o hashpower=15') {
    for my $server (servers_with_stock($args)) {
        is($server->{srv}->stats->{hash_power_level}, (split /=/, $args)[1],
           "$server->{name}: $args: started, hash_power_level as asked");
        $server->{srv}->stop;
    }
}

# ------------------------------------------- started, with a warning each

warns_ok('-o ssl_chain_cert=/etc/cert.pem,ssl_key=/etc/key.pem',
    [qr/^WARNING: the ssl_\* options have no effect without -Z/]);
warns_ok('-o ext_item_size=512',
    [qr/^WARNING: -o ext_item_size has no effect: extstore is not part/]);
warns_ok('-o warm_lru_pct=30,no_chunked_items',
    [qr/^WARNING: -o warm_lru_pct has no effect: WARM is the MQ's upper /,
     qr/^WARNING: -o no_chunked_items has no effect: .*never split/]);
warns_ok('-o tier_threshold=8,tier_promote=sync,nvm_emulate=224:924',
    [line_re('WARNING: -o nvm_emulate, tier_promote, tier_threshold: no '
        . 'effect without an N-zone in use (no nvm_size= was given)')]);
warns_ok('-o tier_reassign=greedy,tier_reassign_period=1000,'
    . 'tier_inflight_limit=1m,tier_placement=dram_first,'
    . 'tier_staging_limit=1m',
    [line_re('WARNING: -o tier_placement, tier_reassign, '
        . 'tier_reassign_period, tier_inflight_limit, tier_staging_limit: no '
        . 'effect without an N-zone in use (no nvm_size= was given)')]);
warns_ok('-m 8 -o nvm_size=8m,tier_policy=dram,tier_decay_period=10',
    [line_re('WARNING: -o tier_decay_period: no effect without an N-zone '
        . 'in use (tier_policy=dram leaves it unused)'),
     line_re('WARNING: tier_policy=dram leaves the N-zone unused: its '
        . '8388608 bytes hold no item')]);
warns_ok('-o nvm_verify=read',
    [line_re('WARNING: -o nvm_verify: no effect without an N-zone in use '
        . '(no nvm_size= was given)')]);
warns_ok('-m 8 -o nvm_size=8m,nvm_restart=no',
    [line_re('WARNING: -o nvm_restart has no effect: an anonymous N-zone '
        . 'starts empty at every start (only nvm_path= keeps items)')]);

# ---------------------------------------- every option takes effect: quiet

warns_ok('-o nvm_size=2m', []);
warns_ok('-m 8 -o nvm_size=8m,nvm_verify=read', []);
warns_ok('-m 64 -I 2m -o nvm_size=4m', []);
warns_ok('-o tier_mq_queues=4,dram_node=0', []);
warns_ok('-o watcher_logbuf_size=8,worker_logbuf_size=16', []);
warns_ok('-o hot_lru_pct=30,hot_max_factor=0.5', []);
warns_ok('-o slab_automove_ratio=0.5', [line_re('WARNING: -o '
    . 'slab_automove_ratio has no effect: the automover compares hits, '
    . 'not ages')]);
warns_ok('-m 8 -o nvm_size=8m,tier_threshold=8,tier_promote=sync,'
    . 'nvm_emulate=1:1,tier_reassign=psa', []);
{
    my $f = shm_file();
    warns_ok("-m 8 -o nvm_path=$f,nvm_size=4m,nvm_restart=yes", []);
}

# ------------------------------------------------------ what -h says

my ($code, $help) = run_binary($bin, ['-h'], 10);
is($code, 0, '-h exits 0');
like($help, qr/at least two slab\s+pages/, '-h: nvm_size names its minimum');
# it lists only what takes effect (issue 23): the rest is in doc/protocol.md
like($help, qr/other sub-options have no effect here.*doc\/protocol\.md/s,
    '-h: the others are named in doc/protocol.md');
like($help, qr/hot_lru_pct=.*hot_max_factor=/s,
    '-h: the HOT segment\'s tuning, which takes effect');
unlike($help, qr/(?<![\w-])(?:warm_lru_pct|modern|no_chunked_items|ext_\*|
    slab_chunk_max|drop_privileges)(?![\w-])/x,
    '-h: no sub-option that has no effect is advertised');
# memcached's own test library takes these words in -h for the features
unlike($help, qr/ext_path/i, '-h: no ext_path (no extstore here)');
unlike($help, qr/proxy_config/i, '-h: no proxy_config (no proxy here)');

done_testing();
