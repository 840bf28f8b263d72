#!/usr/bin/perl
# binary_empty.t: binary replies that carry an empty value (issue 21, a
# value of 0 bytes) against Debian's memcached 1.6.18, byte for byte.
#
# A get/getq/getk/getkq (and gat/gatq/gatk/gatkq) hit of a 0-byte value
# once queued an empty piece as the last of its connection's reply: over
# TCP the server then closed the connection and the next request got a
# reset, over UDP the worker looped for ever.  Each script here sends its
# steps one at a time and waits for each step's last reply before the
# next, so that such a reply is the last thing queued, then checks that
# the connection still answers: a noop, a get of another key, quiet gets
# followed by a noop.
#
# The same scripts run on one stock memcached and on ours without an
# N-zone, with every item in the N-zone (served from heap snapshots) and
# with items stored in N and promoted to D on their first hit; every
# reply is compared whole (header, extras, key, value) with the cas
# numbered by first appearance, and so is whether the connection stayed
# open.  UDP: the same, one datagram per step.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Select;
use IO::Socket::INET;
use MemcachedTest;
use BinaryFrames;

plan skip_all => 'Debian memcached not installed (apt-get install memcached)'
    unless -x stock_bin() && !server_is_stock();

my $STOCK_ARGS = '-m 64 -t 1';
my @CONFIGS = (
    [plain   => '-m 64 -t 1'],
    [nvm     => '-m 64 -t 1 -o nvm_size=64m,tier_policy=nvm'],
    [promote => '-m 64 -t 1 -o nvm_size=64m,tier_policy=hmcached,'
        . 'tier_placement=nvm,tier_threshold=1,tier_promote=sync'],
);
my $STEP_TIMEOUT = 3;

# ---------------------------------------------------------------- scripts

# A script is [name, steps]; a step is a list of frames [op, options]
# sent in one write, or { ascii => text } sent on a connection of its own
# (a value stored through the ASCII protocol).  Every step's last frame
# must be answered: a step waits for that reply.

my @GETS = (
    ['get'], ['getq'], ['getk'], ['getkq'],
    ['gat', ext => pack('N', 0)], ['gatq', ext => pack('N', 0)],
    ['gatk', ext => pack('N', 1000)], ['gatkq', ext => pack('N', 1000)],
);

sub store { my ($op, $key, $flags, $value) = @_;
    return [$op, key => $key, ext => store_ext($flags, 0), value => $value];
}

my @scripts;
for my $g (@GETS) {
    my ($op, @o) = @$g;
    my ($e, $x) = ("e_$op", "x_$op");
    push @scripts, ["$op of an empty value", [
        [store('set', $e, 0x2a, ''), store('set', $x, 1, 'xyz')],
        [[$op, key => $e, @o]],
        [['noop']],
        [[$op, key => $e, @o], ['get', key => $x]],
        [[$op, key => $e, @o], ['noop']],
        [[$op, key => $e, @o]],
        [['get', key => $x]],
        [[$op, key => $e, @o], ['getq', key => 'nx'], ['noop']],
        [[$op, key => $e, @o]],
        [['getkq', key => $x], ['getkq', key => 'nx'], ['noop']],
    ]];
}

push @scripts, ['empty values made by add, replace, append, prepend', [
    [store('add', 'a_e', 3, '')], [['getk', key => 'a_e']], [['noop']],
    [store('set', 'r_e', 4, 'full'), store('replace', 'r_e', 5, '')],
    [['getk', key => 'r_e']], [['noop']],
    [['append', key => 'a_e', value => ''],
        ['prependq', key => 'a_e', value => ''], ['noop']],
    [['getkq', key => 'a_e']], [['version']],
    [['append', key => 'r_e', value => 'z']], [['get', key => 'r_e']],
    [['noop']],
]];

push @scripts, ['an empty value stored through ASCII', [
    { ascii => "set ascii_e 7 0 0\r\n\r\n" },
    [['get', key => 'ascii_e']], [['noop']],
    [['getkq', key => 'ascii_e']], [['getk', key => 'ascii_e']],
    [['noop']],
]];

push @scripts, ['fifty empty values, the last reply empty', [
    [(map { store('setq', "m$_", $_, '') } 1 .. 50), ['noop']],
    [map { ['getkq', key => "m$_"] } 1 .. 50],
    [['noop']],
    [map { ['get', key => "m$_"] } 1 .. 50],
    [['version']],
    [(map { ['getq', key => "m$_"] } 1 .. 50), ['noop']],
]];

push @scripts, ['empty and non-empty values alternating', [
    [store('set', 'alt_e', 0, ''), store('set', 'alt_x', 0, 'v' x 100)],
    [map { ['getkq', key => $_ % 2 ? 'alt_x' : 'alt_e'] } 1 .. 10],
    [map { ['getkq', key => $_ % 2 ? 'alt_e' : 'alt_x'] } 1 .. 10],
    [['getk', key => 'alt_x']],
]];

# ---------------------------------------------------------------- the wire

# One reply frame as bytes, or undef on timeout or EOF.
sub read_frame {
    my ($sock) = @_;
    my $h = read_bytes($sock, 24, $STEP_TIMEOUT) // return;
    my $bodylen = unpack('N', substr($h, 8, 4));
    my $body = $bodylen ? read_bytes($sock, $bodylen, $STEP_TIMEOUT) : '';
    return defined $body ? $h . $body : undef;
}

# A reply frame for comparison: every byte in hex but the cas, which
# shows as c1, c2, ... in the order values first appear ($names).
sub frame_text {
    my ($f, $names) = @_;
    my ($hi, $lo) = unpack('NN', substr($f, 16, 8));
    my $cas = $hi * 4294967296 + $lo;
    my $n = keys %$names;
    my $c = $cas == 0 ? '0' : ($names->{$cas} //= 'c' . ($n + 1));
    return join ' ', unpack('H*', substr($f, 0, 16)), "cas=$c",
        unpack('H*', substr($f, 24));
}

# Frames of a step, each with its own opaque; and that last opaque.
sub step_frames {
    my ($step, $next) = @_;
    my $data = '';
    for my $f (@$step) {
        my ($op, %o) = @$f;
        $data .= bin_req($op, %o, opaque => $$next++);
    }
    return ($data, $$next - 1);
}

# The replies to one step: frame texts up to its last frame's reply, then
# '<closed>' or '<timeout>' if that reply never came.
sub tcp_step {
    my ($srv, $sock, $step, $next, $names) = @_;
    if (ref $step eq 'HASH') {
        my $a = $srv->sock;
        mc_send($a, $step->{ascii});
        my $line = read_line($a, $STEP_TIMEOUT) // '<none>';
        close $a;
        return ["ascii: $line"];
    }
    my ($data, $last) = step_frames($step, $next);
    my @got;
    return ['<closed>'] unless mc_send($sock, $data);
    while (1) {
        my $f = read_frame($sock);
        if (!defined $f) {
            push @got, MemcachedTest::is_eof($sock) ? '<closed>' : '<timeout>';
            return \@got;
        }
        push @got, frame_text($f, $names);
        return \@got if unpack('N', substr($f, 12, 4)) == $last;
    }
}

# Every script on its own connection: { script name => [step replies] }.
sub run_tcp {
    my ($srv) = @_;
    my (%out, %names);
    my $next = 1;
    for my $s (@scripts) {
        my ($name, $steps) = @$s;
        my $sock = $srv->sock;
        $out{$name} = [map { tcp_step($srv, $sock, $_, \$next, \%names) }
            @$steps];
        close $sock;
    }
    return \%out;
}

# UDP: one step per datagram; the replies' frames up to the last one's.
sub udp_steps {
    my ($srv, $steps) = @_;
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
        PeerPort => $srv->udpport, Proto => 'udp') or die "udp: $!";
    my $sel = IO::Select->new($sock);
    my (%names, @out);
    my ($next, $id) = (1, 0);
    for my $step (@$steps) {
        my ($data, $last) = step_frames($step, \$next);
        $id++;
        $sock->send(pack('nnnn', $id, 0, 1, 0) . $data);
        my ($bytes, @got) = ('');
        my $deadline = time + $STEP_TIMEOUT;
        while (1) {
            my $left = $deadline - time;
            if ($left <= 0 || !$sel->can_read($left)) {
                push @got, '<timeout>';
                last;
            }
            $sock->recv(my $dg, 65536);
            next unless length $dg >= 8 && unpack('n', $dg) == $id;
            $bytes .= substr($dg, 8);
            my $done = 0;
            while (length $bytes >= 24) {
                my $len = 24 + unpack('N', substr($bytes, 8, 4));
                last if length $bytes < $len;
                my $f = substr($bytes, 0, $len, '');
                push @got, frame_text($f, \%names);
                $done = 1 if unpack('N', substr($f, 12, 4)) == $last;
            }
            last if $done;
        }
        push @out, \@got;
    }
    return \@out;
}

my @UDP_STEPS = (
    [store('set', 'u_e', 9, ''), store('set', 'u_x', 9, 'udp')],
    [['get', key => 'u_e']],
    [['noop']],
    [['getkq', key => 'u_e']],
    [['getk', key => 'u_x']],
    [['gatq', key => 'u_e', ext => pack('N', 0)], ['noop']],
);

# ---------------------------------------------------------------- compare

my $stock = stock_memcached($STOCK_ARGS, udp => 1);
my $want = run_tcp($stock);
my $want_udp = udp_steps($stock, \@UDP_STEPS);
$stock->stop;

# the stock replies are what the comparison rests on: they must show
# every step answered
my @unanswered = grep { join(' ', map { @$_ } @{ $want->{$_} }) =~ /</ }
    sort keys %$want;
is_deeply(\@unanswered, [], 'stock memcached answered every TCP step');
ok(!grep({ grep { /</ } @$_ } @$want_udp),
    'stock memcached answered every UDP step');

for my $c (@CONFIGS) {
    my ($cname, $args) = @$c;
    note("---- $cname: $args");
    my $srv = new_memcached($args, udp => 1);
    my $n_hits = $cname eq 'plain' ? 0 : $srv->tier_stats->{n_hits};
    my $got = run_tcp($srv);
    for my $s (@scripts) {
        my $name = $s->[0];
        is_deeply($got->{$name}, $want->{$name}, "$cname: $name")
            or diag(explain({ ours => $got->{$name},
                memcached => $want->{$name} }));
    }
    if ($cname eq 'nvm') {
        is($srv->zone_of('e_get'), 'N', 'nvm: the empty values are in N');
        cmp_ok($srv->tier_stats->{n_hits} - $n_hits, '>=', 100,
            'nvm: the gets were N hits (served from snapshots)');
        ok(wait_until(5, sub { $srv->tier_stats->{inflight_bytes} == 0 }),
            'nvm: every snapshot released, the empty ones too');
    }
    elsif ($cname eq 'promote') {
        my $t = $srv->tier_stats;
        ok($t->{n_hits} - $n_hits >= 50 && $t->{promotions} >= 50,
            "promote: first hits in N, then promoted to D "
            . "(n_hits $t->{n_hits}, promotions $t->{promotions})");
    }
    my $udp = udp_steps($srv, \@UDP_STEPS);
    is_deeply($udp, $want_udp, "$cname: UDP, one step per datagram")
        or diag(explain({ ours => $udp, memcached => $want_udp }));
    ok($srv->alive, "$cname: server alive");
    $srv->stop;
}

done_testing();
