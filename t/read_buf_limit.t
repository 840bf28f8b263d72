#!/usr/bin/env perl
# -o read_buf_mem_limit=MB: memcached 1.6.18's budget of response objects
# (doc/protocol.md "Connection memory").  A worker has MB / -t of 16 KB
# units; a connection reading a request holds one, and response objects
# (one per command, one per further multiget key) come 13 to a unit until
# they are written at a flush point (the end of a get, mn, a binary
# noop).  A multiget past the budget answers only "SERVER_ERROR out of
# memory writing get response", the replies pipelined before it since the
# last flush dropped; a command past it closes the connection and sends
# nothing more; a connection that finds every unit held by another's
# unread replies is closed before reading.  The same checks run against
# Debian's memcached, with the values it answers.
use strict;
use warnings;
use FindBin qw($Bin);
use lib "$Bin/lib";
use Test::More;
use MemcachedTest;

my $OOM_GET = "SERVER_ERROR out of memory writing get response\r\n";

# What a new connection answers to $data, read up to the reply to a
# `version` sent after it (one more object, not a flush), with "<EOF>" appended when the connection
# closed first.
sub answer {
    my ($srv, $data) = @_;
    my $c = $srv->sock;
    mc_send($c, $data . "version\r\n", 20);
    my $r = '';
    while (1) {
        my $reply = read_reply($c, 20);
        last if $reply =~ /^VERSION /;
        $r .= $reply;
        last if $reply =~ /<(?:EOF|TIMEOUT)>$/;
    }
    close $c;
    return $r;
}

sub bin_request {
    my ($opcode, $key, $opaque) = @_;
    return pack('CCnCCnNNNN', 0x80, $opcode, length $key, 0, 0, 0,
                length $key, $opaque, 0, 0) . $key;
}

my $BIN_PROBE = 1000;

# The same for binary requests, with a noop: how many replies came before
# it, or "<EOF>".
sub bin_answer {
    my ($srv, $data) = @_;
    my $c = $srv->sock;
    mc_send($c, $data . bin_request(0x0a, '', $BIN_PROBE));
    my $replies = 0;
    while (1) {
        my $h = read_bytes($c, 24, 20);
        last unless defined $h;
        my ($op, $body, $opaque) = unpack('x1 C x6 N N', $h);
        read_bytes($c, $body, 20) if $body > 0;
        close $c, return $replies if $op == 0x0a && $opaque == $BIN_PROBE;
        $replies++;
    }
    close $c;
    return '<EOF>';
}

sub counters {
    my ($srv) = @_;
    my $st = $srv->stats;
    return ($st->{response_obj_oom}, $st->{read_buf_oom});
}

sub gets_of { my ($cmd, @keys) = @_; return "$cmd " . join(' ', @keys) . "\r\n" }

my $VALUE_FOO = "VALUE foo 0 3\r\nabc\r\n";

# ---- 1 MB over 32 workers: 2 units, a read buffer and 13 objects ----
for my $s (servers_with_stock('-o read_buf_mem_limit=1 -t 32')) {
    my ($n, $srv) = ($s->{name}, $s->{srv});
    send_recv($s->{sock}, "set foo 0 0 3\r\nabc\r\n");
    my @cases = (
        ['get of 13 keys: served', gets_of('get', ('foo') x 13),
         $VALUE_FOO x 13 . "END\r\n", 0],
        ['get of 14 keys: the error alone', gets_of('get', ('foo') x 14),
         $OOM_GET, 1],
        ['get of 14 missing keys: the same', gets_of('get', ('nokey') x 14),
         $OOM_GET, 1],
        ['gets of 14 keys', gets_of('gets', ('foo') x 14), $OOM_GET, 1],
        ['gat of 14 keys', gets_of('gat 0', ('foo') x 14), $OOM_GET, 1],
        ['mg, then a get of 12 keys: served',
         "mg foo v\r\n" . gets_of('get', ('foo') x 12),
         "VA 3\r\nabc\r\n" . $VALUE_FOO x 12 . "END\r\n", 0],
        ['mg, then a get of 13 keys: the mg reply dropped too',
         "mg foo v\r\n" . gets_of('get', ('foo') x 13), $OOM_GET, 1],
        ['set, then a get of 13 keys: STORED dropped too',
         "set bar 0 0 1\r\nx\r\n" . gets_of('get', ('foo') x 13),
         $OOM_GET, 1],
        ['mn flushes: mn, then a get of 13 keys served',
         "mg foo v\r\nmn\r\n" . gets_of('get', ('foo') x 13),
         "VA 3\r\nabc\r\nMN\r\n" . $VALUE_FOO x 13 . "END\r\n", 0],
        ['a get flushes: get, then a get of 13 keys served',
         "get foo\r\n" . gets_of('get', ('foo') x 13),
         $VALUE_FOO . "END\r\n" . $VALUE_FOO x 13 . "END\r\n", 0],
        ['14 pipelined mg: closed, nothing sent', "mg foo v\r\n" x 14,
         '<EOF>', 1],
        ['a get line longer than the read buffer: its own buffer, the error',
         gets_of('get', map { sprintf 'a_rather_long_key_%06d', $_ }
                 1 .. 1000), $OOM_GET, 1],
    );
    for my $case (@cases) {
        my ($what, $send, $want, $want_oom) = @$case;
        my ($oom0) = counters($srv);
        reply_is(answer($srv, $send), $want, "$n: $what");
        my ($oom1) = counters($srv);
        is($oom1 - $oom0, $want_oom, "$n: $what: response_obj_oom +$want_oom");
    }
    my ($oom0) = counters($srv);
    is(bin_answer($srv, join('', map { bin_request(0x09, 'foo', $_) }
                             1 .. 13)),
       '<EOF>', "$n: 13 binary getq and a noop: closed, nothing sent");
    is(bin_answer($srv, join('', map { bin_request(0x09, 'foo', $_) } 1 .. 12)
                        . bin_request(0x0a, '', 99)
                        . join('', map { bin_request(0x09, 'foo', $_) }
                               1 .. 12)),
       25, "$n: a noop flushes: 12 getq, noop, 12 getq and a noop served");
    my ($oom1) = counters($srv);
    is($oom1 - $oom0, 1, "$n: binary: response_obj_oom +1");
    $srv->stop;
}

# ---- a connection whose unread replies hold every unit ----
# The 32nd connection after A is served by A's worker (connections go to
# the workers in turn, in both servers).  A's 13 values of 900 KB do not
# fit the socket buffers while A reads nothing: A keeps its read buffer
# and a unit of objects, so B finds no read buffer and is closed.
for my $s (servers_with_stock('-o read_buf_mem_limit=1 -t 32 -m 64')) {
    my ($n, $srv) = ($s->{name}, $s->{srv});
    my $big = 'b' x 900_000;
    send_recv($s->{sock}, "set big 0 0 900000\r\n$big\r\n");
    send_recv($s->{sock}, "set foo 0 0 3\r\nabc\r\n");
    my (undef, $rb0) = counters($srv);
    my $a = $srv->sock;
    my @others = map { $srv->sock } 1 .. 31;
    my $b = $srv->sock;
    mc_send($a, "mg big v\r\n" x 13);
    # A's replies are queued once the server has read A's requests
    ok(wait_until(10, sub { $srv->stats->{bytes_written} > 1_000_000 }),
       "$n: A's replies are being written");
    my $r = send_recv($b, "get foo\r\n", timeout => 5);
    is($r, '<EOF>', "$n: B, on A's worker, is closed before reading");
    my (undef, $rb1) = counters($srv);
    is($rb1 - $rb0, 1, "$n: read_buf_oom counts it");
    close $a;
    $srv->stop;
}

# ---- 100 KB values, -t 4: 16 units, a multiget of 195 keys at most ----
# (400 of the 2,000 keys are stored: a missing key takes an object too)
for my $s (servers_with_stock('-o read_buf_mem_limit=1 -m 128')) {
    my ($n, $srv) = ($s->{name}, $s->{srv});
    my $v = 'v' x 100_000;
    my $sock = $s->{sock};
    for (my $i = 0; $i < 400; $i += 100) {
        send_sync($sock, join '', map { "set big_value_key_$_ 0 0 100000 "
                                        . "noreply\r\n$v\r\n" }
                  $i .. $i + 99);
    }
    my @keys = map { "big_value_key_$_" } 0 .. 1999;
    my ($oom0) = counters($srv);
    my $r = send_recv($sock, gets_of('get', @keys[0 .. 194]), timeout => 30);
    my $values = () = $r =~ /^VALUE /mg;
    is($values, 195, "$n: 195 values of 100 KB: all of them");
    like($r, qr/END\r\n\z/, "$n: and END");
    reply_is(send_recv($sock, gets_of('get', @keys[0 .. 195])), $OOM_GET,
             "$n: 196 keys: the error alone");
    reply_is(send_recv($sock, gets_of('get', @keys), timeout => 30),
             $OOM_GET, "$n: 2,000 keys: the error alone");
    reply_is(send_recv($sock, "get big_value_key_7\r\n"),
             "VALUE big_value_key_7 0 100000\r\n$v\r\nEND\r\n",
             "$n: the connection goes on");
    my ($oom1, $rb) = counters($srv);
    is($oom1 - $oom0, 2, "$n: response_obj_oom counts the two");
    is($rb, 0, "$n: read_buf_oom none");
    $srv->stop;
}

# ---- without the limit: a multiget that fails drops the replies before
# it too (an overlong key) ----
for my $s (servers_with_stock('')) {
    my ($n, $srv) = ($s->{name}, $s->{srv});
    send_recv($s->{sock}, "set foo 0 0 3\r\nabc\r\n");
    reply_is(answer($srv, "mg foo v\r\nget foo " . ('k' x 251)
                    . "\r\nget foo\r\n"),
             "CLIENT_ERROR bad command line format\r\n" . $VALUE_FOO
             . "END\r\n",
             "$n: an overlong key: the mg reply dropped, the next served");
    $srv->stop;
}

done_testing();
