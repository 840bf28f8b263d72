#!/usr/bin/perl
# binary.t: memcached's binary protocol (doc/protocol.md "Binary
# protocol") over the wire.
#
#  - Every opcode and status, quiet-mode semantics, cas matches and
#    mismatches, incr/decr with initial value and expiry, touch and the
#    gat family, flush, stat groups, version, noop, quit: the same
#    scripts, with the replies spelled out, against a server without an
#    N-zone and against tiny zones whose keys live in D (tier_policy=dram),
#    in N (tier_policy=nvm) and move N->D between the requests
#    (tier_threshold=1, synchronous promotion).
#  - Bad input: bad magic (connection closed), truncated headers and
#    bodies then close, key and extras longer than the frame, keys over
#    250 bytes, wrong extras, unknown opcodes, values over the item size
#    and over 2 GB, 400 random frames; the server stays up.
#  - -B binary and -B ascii, UDP (each datagram negotiates) and unix
#    sockets.
#  - Differential: the same frames to Debian's memcached and to ours,
#    replies compared with cas values numbered by first appearance.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Select;
use IO::Socket::INET;
use MemcachedTest;
use BinaryFrames;

srand(11);

my $NOEXP = 0xffffffff;    # incr/decr: do not create a missing key

# Send frames, each with its own opaque, plus a noop; compare the
# replies' descriptions with @$want and check they come in request order.
sub step {
    my ($sock, $frames, $want, $name) = @_;
    my $i = 0;
    my $data = join '', map {
        my ($op, %o) = @$_;
        bin_req($op, %o, opaque => 1000 + $i++)
    } @$frames;
    my $r = bin_sync($sock, $data);
    if (!$r) {
        fail("$name: no noop reply (connection closed or timed out)");
        return [];
    }
    is_deeply([map { bin_desc($_) } @$r], $want, $name)
        or diag(explain([map { bin_desc($_) } @$r]));
    my @opq = map { $_->{opaque} } @$r;
    is_deeply(\@opq, [sort { $a <=> $b } @opq],
        "$name: replies in request order, opaques echoed");
    return $r;
}

my $NF = 'v=Not found c=0';

# the binary replies packed in one string (a UDP datagram's payload)
sub split_replies {
    my ($bytes) = @_;
    my @r;
    while (length $bytes >= 24) {
        my ($m, $op, $kl, $el, $dt, $st, $bl, $opq, $ch, $cl)
            = unpack('CCnCCnNNNN', $bytes);
        last if length $bytes < 24 + $bl;
        my $body = substr($bytes, 24, $bl);
        push @r, { magic => $m, opcode => $op, status => $st,
            opaque => $opq, cas => $ch * 4294967296 + $cl,
            ext => substr($body, 0, $el), key => substr($body, $el, $kl),
            value => substr($body, $el + $kl) };
        substr($bytes, 0, 24 + $bl) = '';
    }
    return @r;
}

# ---------------------------------------------------------------- commands

sub get_family {
    my ($s) = @_;
    step($s, [
        ['set', key => 'k1', ext => store_ext(7, 0), value => 'hello'],
        ['get', key => 'k1'], ['getk', key => 'k1'],
        ['getq', key => 'nx'], ['getkq', key => 'nx'],
        ['getq', key => 'k1'], ['getkq', key => 'k1'],
        ['get', key => 'nx'], ['getk', key => 'nx'],
    ], [
        '01/0000 c=C',
        '00/0000 x=00000007 v=hello c=C',
        '0c/0000 x=00000007 k=k1 v=hello c=C',
        '09/0000 x=00000007 v=hello c=C',
        '0d/0000 x=00000007 k=k1 v=hello c=C',
        "00/0001 $NF", '0c/0001 k=nx c=0',
    ], 'get, getk, getq, getkq: hits and misses');
    my $r = step($s, [
        ['set', key => 'e', ext => store_ext(0xffffffff, 0), value => ''],
        ['get', key => 'e'],
    ], ['01/0000 c=C', '00/0000 x=ffffffff c=C'],
        'empty value, flags 2^32-1');
    is($r->[0]{cas}, $r->[1]{cas}, 'get returns the cas the set returned')
        if @$r == 2;
}

sub quiet_stores {
    my ($s) = @_;
    step($s, [
        ['setq', key => 'k2', ext => store_ext(1), value => 'v'],
        ['addq', key => 'k2', ext => store_ext(1), value => 'v'],
        ['replaceq', key => 'nx', ext => store_ext(1), value => 'v'],
        ['addq', key => 'k3', ext => store_ext(2), value => 'w'],
        ['replaceq', key => 'k3', ext => store_ext(3), value => 'x'],
        ['add', key => 'k3', ext => store_ext(1), value => 'v'],
        ['replace', key => 'nx', ext => store_ext(1), value => 'v'],
        ['get', key => 'k3'],
    ], [
        '12/0002 v=Data exists for key. c=0', "13/0001 $NF",
        '02/0002 v=Data exists for key. c=0', "03/0001 $NF",
        '00/0000 x=00000003 v=x c=C',
    ], 'setq/addq/replaceq: silent on success, errors still sent');
}

sub cas_checks {
    my ($s) = @_;
    my $r = step($s, [['get', key => 'k3']], ['00/0000 x=00000003 v=x c=C'],
        'cas: read');
    my $cas = @$r ? $r->[0]{cas} : 1;
    $r = step($s, [
        ['set', key => 'k3', ext => store_ext(4), value => 'y',
            cas => $cas + 1000],
        ['replace', key => 'k3', ext => store_ext(4), value => 'y',
            cas => $cas + 1000],
        ['set', key => 'nx', ext => store_ext(4), value => 'y', cas => $cas],
        ['add', key => 'nx2', ext => store_ext(4), value => 'y', cas => 5],
        ['set', key => 'k3', ext => store_ext(4), value => 'y', cas => $cas],
        ['get', key => 'k3'],
    ], [
        '01/0002 v=Data exists for key. c=0',
        '03/0002 v=Data exists for key. c=0',
        "01/0001 $NF", "02/0001 $NF",
        '01/0000 c=C', '00/0000 x=00000004 v=y c=C',
    ], 'cas: mismatch, missing key, match');
    ok(@$r == 6 && $r->[4]{cas} != $cas && $r->[4]{cas} == $r->[5]{cas},
        'cas: a new cas after the store, seen by get');
    $cas = @$r == 6 ? $r->[5]{cas} : 1;
    step($s, [
        ['add', key => 'k3', ext => store_ext(5), value => 'z', cas => $cas],
        ['get', key => 'k3'],
    ], ['02/0000 c=C', '00/0000 x=00000005 v=z c=C'],
        'add with the current cas stores, as memcached does');
}

sub append_prepend {
    my ($s) = @_;
    step($s, [
        ['set', key => 'ap', ext => store_ext(9), value => 'mid'],
        ['append', key => 'nx', value => 'a'],
        ['prepend', key => 'ap', value => '<'],
        ['append', key => 'ap', value => '>'],
        ['appendq', key => 'ap', value => '!'],
        ['prependq', key => 'nx', value => '!'],
        ['append', key => 'ap', value => 'x', cas => 1],
        ['get', key => 'ap'],
    ], [
        '01/0000 c=C', '0e/0005 v=Not stored. c=0', '0f/0000 c=C',
        '0e/0000 c=C', '1a/0005 v=Not stored. c=0',
        '0e/0002 v=Data exists for key. c=0',
        '00/0000 x=00000009 v=<mid>! c=C',
    ], 'append/prepend and quiet forms, cas mismatch');
    my $big = random_bytes(3000, 'abcdef');
    step($s, [
        ['append', key => 'ap', value => $big], ['get', key => 'ap'],
    ], ['0e/0000 c=C', '00/0000 x=00000009 v=' . ('len3006:' .
        unpack('H*', '<mid>!' . substr($big, 0, 2))) . ' c=C'],
        'append moves the value to a larger class');
}

sub delete_checks {
    my ($s) = @_;
    step($s, [
        ['set', key => 'd1', ext => store_ext(0), value => '1'],
        ['delete', key => 'nx'], ['deleteq', key => 'nx'],
        ['deleteq', key => 'd1'], ['get', key => 'd1'],
        ['set', key => 'd2', ext => store_ext(0), value => '2'],
        ['delete', key => 'd2', cas => 3],
        ['delete', key => 'd2'], ['getq', key => 'd2'],
    ], [
        '01/0000 c=C', "04/0001 $NF", "14/0001 $NF", "00/0001 $NF",
        '01/0000 c=C', '04/0002 v=Data exists for key. c=0',
        '04/0000 c=0',
    ], 'delete, deleteq: hits, misses, cas mismatch');
}

sub counters {
    my ($s) = @_;
    my $h = sub { 'v=h:' . unpack('H*', pack('NN', 0, $_[0])) };
    step($s, [
        ['incr', key => 'n', ext => incr_ext(5, 100, 0)],
        ['incr', key => 'n', ext => incr_ext(5, 100, 0)],
        ['decr', key => 'n', ext => incr_ext(500, 0, 0)],
        ['incr', key => 'm', ext => incr_ext(5, 100, $NOEXP)],
        ['incrq', key => 'n', ext => incr_ext(1, 0, 0)],
        ['decrq', key => 'm', ext => incr_ext(1, 0, $NOEXP)],
        ['set', key => 't', ext => store_ext(0), value => 'abc'],
        ['incr', key => 't', ext => incr_ext(1, 0, 0)],
        ['incr', key => 'n', ext => incr_ext(1, 0, 0), cas => 1],
        ['get', key => 'n'],
    ], [
        '05/0000 ' . $h->(100) . ' c=C', '05/0000 ' . $h->(105) . ' c=C',
        '06/0000 ' . $h->(0) . ' c=C', "05/0001 $NF", "16/0001 $NF",
        '01/0000 c=C',
        '05/0006 v=Non-numeric server-side value for incr or decr c=0',
        '05/0002 v=Data exists for key. c=0',
        '00/0000 x=00000000 v=1   c=C',
    ], 'incr/decr: initial value, floor at 0 (the length kept, as '
        . 'memcached keeps it), no-create, quiet, non-numeric, cas mismatch');
    step($s, [
        ['set', key => 'w', ext => store_ext(0),
            value => '18446744073709551615'],
        ['incr', key => 'w', ext => incr_ext(1, 0, 0)],
        ['set', key => 'g', ext => store_ext(3), value => '9'],
        ['incr', key => 'g', ext => incr_ext(99991, 0, 0)],
        ['get', key => 'g'],
        ['incr', key => 'g', ext => incr_ext(4294967296 * 3, 0, 0)],
    ], [
        '01/0000 c=C', '05/0000 ' . $h->(0) . ' c=C', '01/0000 c=C',
        '05/0000 ' . $h->(100000) . ' c=C',
        '00/0000 x=00000003 v=100000 c=C',
        '05/0000 v=h:' . unpack('H*', pack('NN', 3, 100000)) . ' c=C',
    ], 'incr wraps at 2^64, keeps flags, 64-bit deltas');
}

sub touch_gat {
    my ($s) = @_;
    my $e = pack('N', 1000);
    step($s, [
        ['set', key => 'tg', ext => store_ext(5), value => 'val'],
        ['touch', key => 'tg', ext => $e], ['touch', key => 'nx', ext => $e],
        ['gat', key => 'tg', ext => $e], ['gatk', key => 'tg', ext => $e],
        ['gatq', key => 'nx', ext => $e], ['gatkq', key => 'nx', ext => $e],
        ['gatq', key => 'tg', ext => $e], ['gatkq', key => 'tg', ext => $e],
        ['gat', key => 'nx', ext => $e], ['gatk', key => 'nx', ext => $e],
    ], [
        '01/0000 c=C', '1c/0000 x=00000005 c=C', "1c/0001 $NF",
        '1d/0000 x=00000005 v=val c=C', '23/0000 x=00000005 k=tg v=val c=C',
        '1e/0000 x=00000005 v=val c=C',
        '24/0000 x=00000005 k=tg v=val c=C',
        "1d/0001 $NF", '23/0001 k=nx c=0',
    ], 'touch, gat, gatk, gatq, gatkq: hits and misses');
}

sub misc_commands {
    my ($s) = @_;
    step($s, [
        ['version'], ['verbosity', ext => pack('N', 1)],
        ['stat', key => 'bogus'], [0x30, key => 'x', value => 'yz'],
        ['flush'], ['flushq'], ['get', key => 'tg'],
    ], [
        '0b/0000 v=1.6.18 c=0', '1b/0081 v=Unknown command c=0',
        "10/0001 $NF", '30/0081 v=Unknown command c=0', '08/0000 c=0',
        "00/0001 $NF",
    ], 'version, verbosity (unknown, as in 1.6.18), unknown opcodes, '
        . 'flush, flushq');
}

sub odd_keys_and_values {
    my ($s) = @_;
    my $key = "a b\r\nc\x00d";
    my $val = random_bytes(300_000);
    my $r = step($s, [
        ['set', key => $key, ext => store_ext(1), value => $val],
        ['getk', key => $key],
    ], [
        '01/0000 c=C',
        '0c/0000 x=00000001 k=h:' . unpack('H*', $key) . ' v=len300000:'
            . unpack('H*', substr($val, 0, 8)) . ' c=C',
    ], 'binary-safe keys, a 300 KB value');
    ok(@$r == 2 && $r->[1]{value} eq $val, '300 KB value intact');
    step($s, [
        ['set', key => 'big', ext => store_ext(0), value => 'small'],
        ['set', key => 'big', ext => store_ext(0),
            value => 'x' x (1024 * 1024 + 10)],
        ['get', key => 'big'],
        ['append', key => 'k3', value => 'x' x (1024 * 1024 + 10)],
    ], [
        '01/0000 c=C', '01/0003 v=Too large. c=0', "00/0001 $NF",
        '0e/0003 v=Too large. c=0',
    ], 'too large: E2BIG, value skipped, a failed set drops the old value');
}

sub stat_groups {
    my ($s, $srv) = @_;
    my $st = bin_stats($s);
    ok($st->{_end} && $st->{version} eq '1.6.18' && $st->{pid} == $srv->pid
        && defined $st->{curr_items}, 'stat: general, terminated');
    $st = bin_stats($s, 'settings');
    ok($st->{_end} && $st->{binding_protocol} eq 'auto-negotiate',
        'stat settings');
    $st = bin_stats($s, 'settingsx');
    ok($st->{_end} && defined $st->{maxbytes},
        'stat settings matched by prefix, as memcached does');
    $st = bin_stats($s, 'items');
    ok($st->{_end} && grep(/^items:\d+:number$/, keys %$st), 'stat items');
    $st = bin_stats($s, 'slabs');
    ok($st->{_end} && defined $st->{active_slabs}, 'stat slabs');
    $st = bin_stats($s, 'sizes');
    ok($st->{_end} && $st->{sizes_status} eq 'disabled', 'stat sizes');
    my $r = bin_exchange($s, bin_req('stat', key => 'detail on')
        . bin_req('set', key => 'p:x', ext => store_ext(0), value => '1')
        . bin_req('get', key => 'p:x')
        . bin_req('stat', key => 'detail dump'), 5);
    is_deeply([map { bin_desc($_) } @$r[0 .. 2]],
        ['10/0000 c=0', '01/0000 c=C', '00/0000 x=00000000 v=1 c=C'],
        'stat detail on: the empty terminator alone');
    is(@$r == 5 && $r->[3]{key} . '=' . $r->[3]{value},
        "detailed=PREFIX p get 1 hit 1 set 1 del 0\r\nEND\r\n",
        'stat detail dump: one "detailed" entry');
    step($s, [['stat', key => 'detail off'], ['stat', key => 'detail'],
        ['stat', key => 'reset'], ['stat', key => 'sizes_disable']],
        ['10/0000 c=0', "10/0001 $NF", '10/0000 c=0',
         '10/0000 k=sizes_status v=disabled c=0'],
        'stat detail off, detail alone, reset, sizes_disable (no '
            . 'terminator, as memcached)');
}

sub expiry {
    my ($srv, $s) = @_;
    step($s, [
        ['set', key => 'x1', ext => store_ext(0, 2), value => 'a'],
        ['set', key => 'x2', ext => store_ext(0, 100), value => 'b'],
        ['set', key => 'x3', ext => store_ext(0, 0xffffffff), value => 'c'],
        ['incr', key => 'x4', ext => incr_ext(1, 7, 2)],
        ['touch', key => 'x2', ext => pack('N', 2)],
        ['set', key => 'x5', ext => store_ext(0, 2), value => 'e'],
        ['gat', key => 'x5', ext => pack('N', 0)],
    ], [
        '01/0000 c=C', '01/0000 c=C', '01/0000 c=C',
        '05/0000 v=h:0000000000000007 c=C', '1c/0000 x=00000000 c=C',
        '01/0000 c=C', '1d/0000 x=00000000 v=e c=C',
    ], 'expiry times set by set, incr, touch and gat');
    $srv->debugtime(4);
    step($s, [['get', key => 'x1'], ['get', key => 'x2'],
        ['get', key => 'x3'], ['get', key => 'x4'], ['get', key => 'x5'],
        ['flush', ext => pack('N', 2)], ['get', key => 'x3']],
        ["00/0001 $NF", "00/0001 $NF", '00/0000 x=00000000 v=c c=C',
         "00/0001 $NF", '00/0000 x=00000000 v=e c=C', '08/0000 c=0',
         '00/0000 x=00000000 v=c c=C'],
        'after 4 s: expired; 2^32-1 is unsigned (far future), 0 never');
    $srv->debugtime(3);
    step($s, [['get', key => 'x3'], ['get', key => 'x5']],
        ["00/0001 $NF", "00/0001 $NF"], 'the delayed flush has struck');
}

my %configs = (
    plain   => '-m 2 -t 1',
    dram    => '-m 2 -t 1 -o nvm_size=16m,tier_policy=dram',
    nvm     => '-m 2 -t 1 -o nvm_size=16m,tier_policy=nvm',
    promote => '-m 2 -t 1 -o nvm_size=16m,tier_policy=hmcached,'
        . 'tier_placement=nvm,tier_threshold=1,tier_promote=sync',
);
for my $name (qw(plain dram nvm promote)) {
    my $srv = new_memcached($configs{$name});
    my $s = $srv->sock;
    note("---- $name: $configs{$name}");
    get_family($s);
    if ($name eq 'dram' || $name eq 'nvm') {
        is($srv->zone_of('k1'), $name eq 'nvm' ? 'N' : 'D',
            "$name: k1 is in the " . ($name eq 'nvm' ? 'N' : 'D') . '-zone');
    }
    my $before = $name eq 'nvm' ? $srv->tier_stats->{n_hits} : 0;
    quiet_stores($s);
    cas_checks($s);
    append_prepend($s);
    delete_checks($s);
    counters($s);
    touch_gat($s);
    if ($name eq 'nvm') {
        cmp_ok($srv->tier_stats->{n_hits}, '>', $before + 10,
            'nvm: the binary commands were served from the N-zone');
    }
    misc_commands($s);
    odd_keys_and_values($s);
    stat_groups($s, $srv) if $name eq 'plain';
    expiry($srv, $s) if $name eq 'nvm'
        && $srv->has_debugtime;
    ok($srv->alive, "$name: server alive");
}

# ---------------------------------------------------------------- bad input

my $srv = new_memcached('-m 64');

# a connection that must be closed by the server; returns what it sent
sub expect_close {
    my ($bytes, $want, $name) = @_;
    my $s = $srv->sock;
    mc_send($s, $bytes);
    my $closed = wait_closed($s, 3);
    my $got = [];
    $got = bin_exchange($s, '', scalar @$want, 1) if @$want;
    is_deeply([map { bin_desc($_) } @$got], $want, "$name: reply");
    ok($closed, "$name: connection closed");
}

expect_close(bin_req('noop') . bin_req('noop', magic => 0x81)
    . bin_req('noop'), ['0a/0000 c=0'], 'bad magic after a request');
expect_close(bin_req('get', key => 'abc', bodylen => 2),
    ['00/0081 v=Unknown command c=0'], 'key longer than the body');
expect_close(bin_req('set', key => 'k', ext => store_ext(0), bodylen => 8),
    ['01/0081 v=Unknown command c=0'], 'key and extras longer than the body');
expect_close(bin_req('get', key => 'a' x 251),
    ['00/0004 v=Invalid arguments c=0'], 'key of 251 bytes');
expect_close(bin_req('getq', key => 'a' x 300),
    ['09/0004 v=Invalid arguments c=0'], 'quiet: errors still sent');
expect_close(bin_req('get', key => 'k', ext => 'abcd'),
    ['00/0004 v=Invalid arguments c=0'], 'get with extras');
expect_close(bin_req('set', key => 'k', ext => 'abcd', value => 'v'),
    ['01/0004 v=Invalid arguments c=0'], 'set with 4 bytes of extras');
expect_close(bin_req('incr', key => 'k', ext => pack('NN', 0, 1)),
    ['05/0004 v=Invalid arguments c=0'], 'incr with 8 bytes of extras');
expect_close(bin_req('noop', value => 'x'),
    ['0a/0004 v=Invalid arguments c=0'], 'noop with a body');
expect_close(bin_req('touch', key => 'k'),
    ['1c/0004 v=Invalid arguments c=0'], 'touch without expiry');
expect_close(bin_req(0x41, key => 'k' x 260),
    ['41/0004 v=Invalid arguments c=0'], 'unknown opcode, key too long');

for my $t (
    ["\x80\x00\x00", 'a 3-byte header'],
    [substr(bin_req('get', key => 'k'), 0, 23), 'a 23-byte header'],
    [substr(bin_req('get', key => 'key'), 0, 26), 'a key cut short'],
    [substr(bin_req('set', key => 'k', ext => store_ext(0), value => 'v' x 100),
        0, 60), 'a value cut short'],
    [bin_req('set', key => 'k', ext => store_ext(0), bodylen => 0x7ffffff0),
        'a 2 GB value announced'],
) {
    my ($bytes, $what) = @$t;
    my $s = $srv->sock;
    mc_send($s, $bytes);
    close $s;
    my $ok = $srv->sock;
    my $r = bin_sync($ok, '');
    ok($srv->alive && $r && !@$r, "$what, then close: server serves others");
}

my $s = $srv->sock;
step($s, [['set', key => 'k', ext => store_ext(0), bodylen => 0xfffffff0]],
    ['01/0003 v=Too large. c=0'],
    'a value over 4 GB - 16: Too large, nothing skipped (memcached)');

{
    my $r = bin_sync($s, bin_req('set', key => 'k', ext => store_ext(0),
        value => 'x' x 2_000_000));
    is_deeply([map { bin_desc($_) } @{ $r || [] }],
        ['01/0003 v=Too large. c=0'], '2 MB value skipped, stream in step');
}

# pipelined quiet gets: only the hits come back, in order
{
    my $data = join '', map {
        bin_req('setq', key => "p$_", ext => store_ext($_), value => "v$_")
    } grep { $_ % 2 } 1 .. 200;
    $data .= join '', map { bin_req('getkq', key => "p$_") } 1 .. 200;
    my $r = bin_sync($s, $data);
    is_deeply([map { $_->{key} } @{ $r || [] }],
        [map { "p$_" } grep { $_ % 2 } 1 .. 200],
        'pipelined getkq: the 100 hits, in order, none of the misses');
}
# random frames: valid magic, random opcodes, lengths and bodies
{
    my $sock = $srv->sock;
    for my $i (1 .. 400) {
        my $keylen = int rand 2 ? int rand 20 : int rand 300;
        my $extlen = int rand 3 ? (0, 4, 8, 20)[int rand 4] : int rand 40;
        my $vlen = int rand 64;
        my $bodylen = $keylen + $extlen + $vlen;
        $bodylen = int rand($bodylen + 1) if rand() < 0.2;
        my $frame = pack('CCnCCnNNNN', 0x80, int rand 0x30, $keylen,
            $extlen, 0, 0, $bodylen, $i, 0, int rand 3)
            . random_bytes($keylen + $extlen + $vlen);
        if (!mc_send($sock, $frame, 1) || MemcachedTest::is_eof($sock)) {
            $sock = $srv->sock;
            next;
        }
        drain($sock, 0) if $i % 16 == 0;
    }
}
step($srv->sock, [['set', key => 'after', ext => store_ext(0), value => 'ok'],
    ['get', key => 'after']],
    ['01/0000 c=C', '00/0000 x=00000000 v=ok c=C'],
    '400 random frames later the server serves');
ok($srv->alive, 'server alive after bad input');

# ------------------------------------------------------- -B, UDP, unix

{
    my $b = new_memcached('-B binary');
    my $bs = $b->sock;
    mc_send($bs, "get foo bar baz qux quux\r\n");
    ok(wait_closed($bs, 3), '-B binary: ASCII text is bad magic: closed');
    step($b->sock, [['version']], ['0b/0000 v=1.6.18 c=0'],
        '-B binary: binary served');
    my $a = new_memcached('-B ascii');
    my $as = $a->sock;
    mc_send($as, bin_req('noop'));
    is(read_line($as, 3), "ERROR\r\n",
        '-B ascii: a binary frame is read as text');
    is(mem_stats($a->sock, 'settings')->{binding_protocol}, 'ascii',
        '-B ascii: stats settings');
}

{
    my $u = new_memcached('', udp => 1);
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
        PeerPort => $u->udpport, Proto => 'udp') or die "udp: $!";
    my $udp = sub {
        my ($id, $payload) = @_;
        $sock->send(pack('nnnn', $id, 0, 1, 0) . $payload);
        my $sel = IO::Select->new($sock);
        my $dg = '';
        while ($sel->can_read(3)) {
            $sock->recv($dg, 65536);
            last if length $dg >= 8 && unpack('n', $dg) == $id;
        }
        return substr($dg, 8);
    };
    my @frames = split_replies($udp->(7, bin_req('set', key => 'u',
        ext => store_ext(3), value => 'udp', opaque => 9)
        . bin_req('getk', key => 'u', opaque => 10)));
    is_deeply([map { bin_desc($_) . " o=$_->{opaque}" } @frames],
        ['01/0000 c=C o=9', '0c/0000 x=00000003 k=u v=udp c=C o=10'],
        'UDP: two binary requests in one datagram');
    is($udp->(8, "get u\r\n"), "VALUE u 3 3\r\nudp\r\nEND\r\n",
        'UDP: the next datagram speaks ASCII');
    is_deeply([map { bin_desc($_) } split_replies($udp->(9,
        bin_req('version')))], ['0b/0000 v=1.6.18 c=0'],
        'UDP: and the next one binary again');
}

{
    my $x = new_memcached('', unix => 1);
    step($x->sock, [['set', key => 'sock', ext => store_ext(0),
        value => 'unix'], ['get', key => 'sock']],
        ['01/0000 c=C', '00/0000 x=00000000 v=unix c=C'],
        'unix socket: binary set and get');
}

{
    my $f = new_memcached('-F');
    step($f->sock, [['flush'], ['flushq']],
        ['08/0020 v=Auth failure. c=0', '18/0020 v=Auth failure. c=0'],
        '-F: flush refused with Auth failure, as memcached does');
}

# ---------------------------------------------------------------- differential

SKIP: {
    skip 'Debian memcached not installed (apt-get install memcached)', 1
        unless -x stock_bin() && !server_is_stock();
    my @flags = ('-m 64 -t 1', '-m 64 -t 1 -C');
    for my $args (@flags) {
        my $ours = new_memcached($args);
        my $ref = stock_memcached($args);
        my (%names_ours, %names_ref);
        my @scripts = (
            bin_req('set', key => 'a', ext => store_ext(1, 0), value => 'x')
             . bin_req('getk', key => 'a') . bin_req('getq', key => 'b')
             . bin_req('add', key => 'a', ext => store_ext(0), value => 'y')
             . bin_req('addq', key => 'c', ext => store_ext(0), value => 'z')
             . bin_req('replace', key => 'd', ext => store_ext(0),
                value => 'w')
             . bin_req('get', key => 'c'),
            bin_req('append', key => 'a', value => '+')
             . bin_req('prependq', key => 'a', value => '-')
             . bin_req('appendq', key => 'nx', value => '-')
             . bin_req('gatk', key => 'a', ext => pack('N', 100))
             . bin_req('touch', key => 'c', ext => pack('N', 0))
             . bin_req('gatkq', key => 'nx', ext => pack('N', 1)),
            bin_req('incr', key => 'n', ext => incr_ext(1, 41, 0))
             . bin_req('incr', key => 'n', ext => incr_ext(1, 41, 0))
             . bin_req('decrq', key => 'n', ext => incr_ext(50, 0, 0))
             . bin_req('decr', key => 'nn', ext => incr_ext(1, 0, $NOEXP))
             . bin_req('incr', key => 'a', ext => incr_ext(1, 0, 0))
             . bin_req('getk', key => 'n'),
            bin_req('delete', key => 'a', cas => 12345)
             . bin_req('delete', key => 'a') . bin_req('deleteq', key => 'a')
             . bin_req('set', key => 'a', ext => store_ext(0), value => 'q',
                cas => 999999)
             . bin_req('version') . bin_req('verbosity')
             . bin_req('flushq') . bin_req('get', key => 'c'),
            bin_req('set', key => 'b', ext => store_ext(0),
                value => 'x' x (1024 * 1024 + 1))
             . bin_req('set', key => 'b', ext => store_ext(0),
                bodylen => 0xfffffff0),
            bin_req('stat', key => 'bogus') . bin_req('stat', key => 'reset')
             . bin_req('stat', key => 'detail on')
             . bin_req('stat', key => 'detail off')
             . bin_req('stat', key => 'detailx')
             . bin_req(0x20) . bin_req(0x21, key => 'PLAIN', value => "\0a\0b")
             . bin_req(0x30),
        );
        my $so = $ours->sock;
        my $sr = $ref->sock;
        my $i = 0;
        for my $frames (@scripts) {
            $i++;
            my $ro = bin_sync($so, $frames);
            my $rr = bin_sync($sr, $frames);
            ok($ro && $rr && @$rr, "differential ($args) script $i: "
                . 'both servers answered');
            is_deeply([map { bin_desc($_, \%names_ours) } @{ $ro || [] }],
                [map { bin_desc($_, \%names_ref) } @{ $rr || [] }],
                "differential ($args) script $i");
        }
        for my $bad (bin_req('get', key => 'a' x 251),
                     bin_req('get', key => 'abc', bodylen => 2),
                     bin_req('noop') . bin_req('noop', magic => 0)) {
            my ($a, $b) = ($ours->sock, $ref->sock);
            mc_send($a, $bad);
            mc_send($b, $bad);
            my ($ca, $cb) = (wait_closed($a, 3), wait_closed($b, 3));
            my $ra = bin_exchange($a, '', 1, 1);
            my $rb = bin_exchange($b, '', 1, 1);
            is(join(' ', $ca, map { bin_desc($_) } @$ra),
                join(' ', $cb, map { bin_desc($_) } @$rb),
                'differential: bad frame ' . unpack('H*', substr($bad, 0, 8)));
        }
    }
}

done_testing();
