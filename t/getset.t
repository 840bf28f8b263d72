#!/usr/bin/perl
# getset.t: set/get/gets over the wire: single and multi-key gets, many
# keys, binary-safe values, zero-length values, 32-bit flags, values up to
# the item size limit at the default -I (1 MB) and with -I 2m, and the
# "object too large" boundary.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $server = new_memcached('-m 64');
my $sock = $server->sock;

# basic set/get
reply_is(send_recv($sock, "set foo 0 0 3\r\nbar\r\n"), "STORED\r\n", 'set foo');
mem_get_is($sock, 'foo', 'bar', 'get foo');
reply_is(send_recv($sock, "get nosuchkey\r\n"), "END\r\n", 'miss is END');

# overwrite, flags
reply_is(send_recv($sock, "set foo 123 0 6\r\nbarbaz\r\n"), "STORED\r\n",
    'overwrite with flags');
mem_get_is({ sock => $sock, flags => 123 }, 'foo', 'barbaz', 'new value and flags');
reply_is(send_recv($sock, "set fmax 4294967295 0 1\r\nx\r\n"), "STORED\r\n",
    'flags 2^32-1 accepted');
mem_get_is({ sock => $sock, flags => 4294967295 }, 'fmax', 'x', 'flags 2^32-1 round trip');
# a refused command line does not swallow the data line: it is read as a
# command of its own (memcached 1.6.18 behaviour)
reply_is(send_sync($sock, "set fneg -1 0 1\r\nx\r\n"),
    "CLIENT_ERROR bad command line format\r\nERROR\r\n", 'negative flags rejected');
reply_is(send_recv($sock, "get fneg\r\n"), "END\r\n", 'nothing stored for bad flags');

# zero-length value
reply_is(send_recv($sock, "set empty 7 0 0\r\n\r\n"), "STORED\r\n", 'zero-length set');
mem_get_is({ sock => $sock, flags => 7 }, 'empty', '', 'zero-length get');

# gets returns a cas; cas changes on every store
my ($cas1) = mem_gets($sock, 'foo');
ok(defined $cas1 && $cas1 > 0, 'gets returns a positive cas');
send_recv($sock, "set foo 0 0 1\r\nz\r\n");
my ($cas2, $v2) = mem_gets($sock, 'foo');
ok($cas2 > $cas1, "cas grows on store ($cas1 -> $cas2)");
is($v2, 'z', 'gets value');
reply_is(send_recv($sock, "gets nosuch\r\n"), "END\r\n", 'gets miss');

# multi-get: order preserved, misses skipped, duplicates returned twice
send_recv($sock, "set k1 1 0 2\r\nv1\r\n");
send_recv($sock, "set k2 2 0 2\r\nv2\r\n");
reply_is(send_recv($sock, "get k1 nope k2 k1\r\n"),
    "VALUE k1 1 2\r\nv1\r\nVALUE k2 2 2\r\nv2\r\nVALUE k1 1 2\r\nv1\r\nEND\r\n",
    'multi-get with a miss and a duplicate');
my $r = send_recv($sock, "gets k1 k2\r\n");
like($r, qr/^VALUE k1 1 2 \d+\r\nv1\r\nVALUE k2 2 2 \d+\r\nv2\r\nEND\r\n\z/,
    'multi-gets');

# binary-safe values (CR, LF, NUL, high bytes)
my $bin = join '', map { chr } 0 .. 255;
$bin .= "\r\nEND\r\n\0";
reply_is(send_recv($sock, "set bin 0 0 " . length($bin) . "\r\n$bin\r\n"),
    "STORED\r\n", 'binary value stored');
mem_get_is($sock, 'bin', $bin, 'binary value intact');

# key length limit: 250 ok, 251 rejected
my $k250 = 'k' x 250;
reply_is(send_recv($sock, "set $k250 0 0 1\r\n1\r\n"), "STORED\r\n", '250-byte key');
mem_get_is($sock, $k250, '1', '250-byte key readable');
my $k251 = 'k' x 251;
reply_is(send_recv($sock, "get $k251\r\n"),
    "CLIENT_ERROR bad command line format\r\n", '251-byte key rejected by get');

# many keys, pipelined
my $n = 2000;
my $req = join '', map { "set many:$_ 0 0 " . length("val$_") . "\r\nval$_\r\n" } 1 .. $n;
my $got = send_sync($sock, $req, timeout => 20);
reply_is($got, "STORED\r\n" x $n, "$n pipelined sets stored");
my $ok = 0;
for my $batch (0 .. 19) {
    my @keys = map { "many:" . ($batch * 100 + $_) } 1 .. 100;
    my $exp = join '', map { (my $i = $_) =~ s/many://;
        "VALUE $_ 0 " . length("val$i") . "\r\nval$i\r\n" } @keys;
    $ok++ if send_recv($sock, "get @keys\r\n", timeout => 10) eq "${exp}END\r\n";
}
is($ok, 20, 'all keys read back by 100-key multi-gets');
my $st = $server->stats;
cmp_ok($st->{curr_items}, '>=', $n, "curr_items >= $n");

# largest value at the default -I 1m: the item (header+key+value) must fit,
# so the value limit is a little under 1 MB.  A value of 1 MB - 512 fits,
# 1 MB + 1 does not.
my $big = 'B' x (1024 * 1024 - 512);
reply_is(send_recv($sock, "set big 0 0 " . length($big) . "\r\n$big\r\n", timeout => 10),
    "STORED\r\n", 'value just under 1 MB stored at default -I');
mem_get_is($sock, 'big', $big, 'value just under 1 MB read back');
my $huge = 'H' x (1024 * 1024 + 1);
reply_is(send_recv($sock, "set huge 0 0 " . length($huge) . "\r\n$huge\r\n", timeout => 10),
    "SERVER_ERROR object too large for cache\r\n", 'value over 1 MB refused');
mem_get_is($sock, 'huge', undef, 'refused value is absent');
mem_get_is($sock, 'foo', 'z', 'connection still usable after too-large');
$server->stop;

# -I 2m allows bigger values
my $s2 = new_memcached('-m 64 -I 2m');
my $c2 = $s2->sock;
is($s2->stats('settings')->{item_size_max}, 2097152, 'item_size_max is 2m');
my $v15 = join '', map { chr(65 + $_ % 26) } 1 .. 1536 * 1024;
reply_is(send_recv($c2, "set v15 9 0 " . length($v15) . "\r\n$v15\r\n", timeout => 10),
    "STORED\r\n", '1.5 MB value stored with -I 2m');
mem_get_is({ sock => $c2, flags => 9 }, 'v15', $v15, '1.5 MB value intact');
my $v3 = 'x' x (3 * 1024 * 1024);
reply_is(send_recv($c2, "set v3 0 0 " . length($v3) . "\r\n$v3\r\n", timeout => 10),
    "SERVER_ERROR object too large for cache\r\n", '3 MB refused with -I 2m');
reply_is(send_recv($c2, "version\r\n"), "VERSION 1.6.18\r\n", 'still talking');
$s2->stop;

done_testing();
