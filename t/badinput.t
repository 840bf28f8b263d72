#!/usr/bin/perl
# badinput.t: malformed input never kills the server.  Garbage lines get
# ERROR, bad command lines CLIENT_ERROR, bad data chunks are reported,
# oversized values get "SERVER_ERROR object too large for cache" with the
# data swallowed (connection still usable, old value dropped), pipelined
# garbage mixed with good commands stays in sync, an over-long line without
# newline or an HTTP request line closes the connection, binary junk is
# survived.  Afterwards the server is alive and every acknowledged item is
# still there.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $server = new_memcached('-m 64');
my %acked;    # key => value the server acknowledged with STORED

sub store {
    my ($sock, $k, $v) = @_;
    my $r = send_recv($sock, "set $k 0 0 " . length($v) . "\r\n$v\r\n");
    $acked{$k} = $v if $r eq "STORED\r\n";
    return $r;
}

my $sock = $server->sock;
store($sock, "keep$_", "value$_") for 1 .. 50;

# unknown commands and empty lines
reply_is(send_recv($sock, "foo bar\r\n"), "ERROR\r\n", 'unknown command');
reply_is(send_recv($sock, "\r\n"), "ERROR\r\n", 'empty line');
reply_is(send_recv($sock, "GETX a\r\n"), "ERROR\r\n", 'near-miss command name');
reply_is(send_recv($sock, "GET a\r\n"), "ERROR\r\n", 'commands are case sensitive');
reply_is(send_recv($sock, "get\r\n"), "ERROR\r\n", 'get without key');
reply_is(send_recv($sock, "set\r\n"), "ERROR\r\n", 'set without args');
reply_is(send_recv($sock, "set a 0 0\r\n"), "ERROR\r\n", 'set with too few args');
reply_is(send_recv($sock, "\x00\x01\x02\xff\xfe\r\n"), "ERROR\r\n", 'binary junk line');
reply_is(send_recv($sock, "get a\n"), "END\r\n", 'bare LF line ending accepted');

# too-long keys
my $k251 = 'k' x 251;
reply_is(send_recv($sock, "get $k251\r\n"), "CLIENT_ERROR bad command line format\r\n",
    'get: key too long');
reply_is(send_sync($sock, "set $k251 0 0 1\r\nx\r\n"),
    "CLIENT_ERROR bad command line format\r\nERROR\r\n",
    'set: key too long (data line then read as a command)');
reply_is(send_recv($sock, "get ok1 $k251\r\n"), "CLIENT_ERROR bad command line format\r\n",
    'multi-get with one key too long');

# bad lengths / numbers
for my $bad ('-1', 'abc', '1x') {
    reply_is(send_recv($sock, "set bl 0 0 $bad\r\n"),
        "CLIENT_ERROR bad command line format\r\n", "bad length '$bad'");
}
reply_is(send_recv($sock, "set bl x 0 1\r\n"), "CLIENT_ERROR bad command line format\r\n",
    'non-numeric flags');
reply_is(send_recv($sock, "set bl 0 x 1\r\n"), "CLIENT_ERROR bad command line format\r\n",
    'non-numeric exptime');
mem_get_is($sock, 'bl', undef, 'nothing stored by bad lines');

# bad data chunk: data longer than declared
store($sock, 'chunk', 'orig');
reply_is(send_sync($sock, "set chunk 0 0 2\r\nabcd\r\n"),
    "CLIENT_ERROR bad data chunk\r\nERROR\r\n", 'bad data chunk');
reply_is(send_sync($sock, "set chunk 0 0 3\r\nab\r\n\r\n"),
    "CLIENT_ERROR bad data chunk\r\nERROR\r\n", 'data block without CRLF terminator');
reply_is(send_recv($sock, "version\r\n"), "VERSION 1.6.18\r\n", 'in sync after bad chunks');

# oversized value: error, data swallowed, old value dropped, connection ok
store($sock, 'over', 'old');
my $huge = 'H' x (2 * 1024 * 1024);
reply_is(send_sync($sock, "set over 0 0 " . length($huge) . "\r\n$huge\r\n", timeout => 10),
    "SERVER_ERROR object too large for cache\r\n", 'oversized set');
delete $acked{over};
mem_get_is($sock, 'over', undef, 'old value dropped by the failed oversized set');
# with noreply memcached 1.6.18 stays silent even about the error
reply_is(send_sync($sock, "set over2 0 0 " . length($huge) . " noreply\r\n$huge\r\n",
        timeout => 10),
    '', 'oversized noreply set: silent, data swallowed');
# the value arrives in pieces: the swallow must span reads
my $s2 = $server->sock;
mc_send($s2, "set over3 0 0 " . length($huge) . "\r\n");
for my $i (0 .. 63) {
    mc_send($s2, substr($huge, $i * 32768, 32768));
}
mc_send($s2, "\r\nget keep1\r\n");
reply_is(read_reply($s2) . read_reply($s2),
    "SERVER_ERROR object too large for cache\r\nVALUE keep1 0 6\r\nvalue1\r\nEND\r\n",
    'oversized value sent in 64 pieces then a get');
my $st = $server->stats;
cmp_ok($st->{store_too_large}, '>=', 3, 'store_too_large counted');

# pipelined garbage mixed with good commands
my $mix = "set p1 0 0 1\r\na\r\n"
    . "bogus\r\n"
    . "get p1\r\n"
    . "incr p1 x\r\n"
    . "set p2 0 0 1\r\nb\r\n"
    . "\xff\xfe\r\n"
    . "delete\r\n"
    . "get p1 p2\r\n"
    . "mg p2 v zz\r\n"
    . "mg p2 v\r\n";
reply_is(send_sync($sock, $mix),
    "STORED\r\nERROR\r\nVALUE p1 0 1\r\na\r\nEND\r\n"
    . "CLIENT_ERROR invalid numeric delta argument\r\nSTORED\r\nERROR\r\nERROR\r\n"
    . "VALUE p1 0 1\r\na\r\nVALUE p2 0 1\r\nb\r\nEND\r\n"
    . "CLIENT_ERROR invalid flag\r\nVA 1\r\nb\r\n",
    'pipelined garbage mixed with good commands');
$acked{p1} = 'a';
$acked{p2} = 'b';

# a line longer than 2048 bytes without newline closes the connection
my $c3 = $server->sock;
mc_send($c3, 'x' x 4096);
ok(wait_closed($c3, 5), 'over-long line without newline: connection closed');
# ... unless it is a long multi-get, which is legal
my $c4 = $server->sock;
my @keys = map { "keep$_" } 1 .. 50;
my @many = (@keys) x 10;
my $exp = join '', map { "VALUE $_ 0 " . length($acked{$_}) . "\r\n$acked{$_}\r\n" } @many;
reply_is(send_recv($c4, "get @many\r\n"), "${exp}END\r\n",
    'multi-get line of ' . length("get @many") . ' bytes works');

# HTTP request lines close the connection
my $c5 = $server->sock;
mc_send($c5, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
ok(wait_closed($c5, 5), 'HTTP/1.1 request line: connection closed');
my $c6 = $server->sock;
mc_send($c6, "PUT /x HTTP/1.0\r\n");
ok(wait_closed($c6, 5), 'unknown command ending in HTTP/1.0 closes too');
# a known command whose last token looks like HTTP is just that command
my $c7 = $server->sock;
reply_is(send_recv($c7, "get foo HTTP/1.1\r\n"), "END\r\n",
    'get of keys named foo and HTTP/1.1 is a normal multi-get');

# random binary junk on many connections (no 0x80 first byte: that would
# select the binary protocol)
srand(42);
for my $i (1 .. 20) {
    my $c = $server->sock;
    my $junk = join '', map { chr(int(rand(127)) + 1) } 1 .. 1000 + int(rand(3000));
    mc_send($c, $junk);
    drain($c, 0.05);
    close $c;
}
ok($server->alive, 'server alive after junk');

# the server is alive and every acknowledged item is intact
my $check = $server->sock;
reply_is(send_recv($check, "version\r\n"), "VERSION 1.6.18\r\n", 'server answers');
my $lost = 0;
for my $k (sort keys %acked) {
    my $r = send_recv($check, "get $k\r\n");
    my $e = "VALUE $k 0 " . length($acked{$k}) . "\r\n$acked{$k}\r\nEND\r\n";
    next if $r eq $e;
    $lost++;
    diag("$k: " . escape_bytes($r));
}
is($lost, 0, scalar(keys %acked) . ' acknowledged items all intact');
ok($server->alive, 'server process still running');

done_testing();
