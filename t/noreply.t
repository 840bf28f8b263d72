#!/usr/bin/perl
# noreply.t: every storage/arith/delete/touch/flush command with "noreply"
# sends nothing back (hits, misses and refusals alike) yet takes effect,
# and a long pipelined noreply stream leaves the connection in sync.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $server = new_memcached();
my $sock = $server->sock;

my @cases = (
    ["set a 1 0 3 noreply\r\naaa\r\n", 'a', 'aaa', 1],
    ["add a 0 0 3 noreply\r\nbbb\r\n", 'a', 'aaa', 1],
    ["add b 2 0 3 noreply\r\nbbb\r\n", 'b', 'bbb', 2],
    ["replace b 3 0 3 noreply\r\nccc\r\n", 'b', 'ccc', 3],
    ["replace zz 0 0 1 noreply\r\nz\r\n", 'zz', undef, 0],
    ["append b 0 0 1 noreply\r\n+\r\n", 'b', 'ccc+', 3],
    ["prepend b 0 0 1 noreply\r\n-\r\n", 'b', '-ccc+', 3],
    ["append zz 0 0 1 noreply\r\nz\r\n", 'zz', undef, 0],
    ["set n 0 0 2 noreply\r\n10\r\n", 'n', '10', 0],
    ["incr n 5 noreply\r\n", 'n', '15', 0],
    ["decr n 3 noreply\r\n", 'n', '12', 0],
    ["incr zz 1 noreply\r\n", 'zz', undef, 0],
    ["delete a noreply\r\n", 'a', undef, 0],
    ["delete a noreply\r\n", 'a', undef, 0],
    ["touch b 100 noreply\r\n", 'b', '-ccc+', 3],
    ["set t 0 0 1 noreply\r\nx\r\nincr t 1 noreply\r\n", 't', 'x', 0],
);
for my $c (@cases) {
    my ($req, $key, $val, $flags) = @$c;
    (my $name = $req) =~ s/\r\n.*//s;
    reply_is(send_sync($sock, $req), '', "silent: $name");
    mem_get_is({ sock => $sock, flags => $flags }, $key, $val, "effect of: $name");
}

# cas noreply
my ($cas) = mem_gets($sock, 'b');
reply_is(send_sync($sock, "cas b 0 0 1 " . ($cas + 1) . " noreply\r\nX\r\n"), '',
    'silent: cas mismatch');
reply_is(send_sync($sock, "cas b 0 0 1 $cas noreply\r\nY\r\n"), '', 'silent: cas match');
mem_get_is($sock, 'b', 'Y', 'cas noreply applied');

# a long pipelined noreply stream followed by a normal command
my $req = '';
$req .= "set p$_ 0 0 " . length($_) . " noreply\r\n$_\r\n" for 1 .. 1000;
$req .= "incr p$_ 1 noreply\r\n" for 1 .. 1000;
$req .= "get p1 p500 p1000\r\n";
reply_is(send_recv($sock, $req, timeout => 10),
    "VALUE p1 0 1\r\n2\r\nVALUE p500 0 3\r\n501\r\nVALUE p1000 0 4\r\n1001\r\nEND\r\n",
    '2000 noreply commands then a get: in sync');

# noreply does not suppress the reply of the next command
reply_is(send_recv($sock, "set q 0 0 1 noreply\r\nq\r\nget q\r\n"),
    "VALUE q 0 1\r\nq\r\nEND\r\n", 'reply after noreply command');

done_testing();
