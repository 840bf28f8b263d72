#!/usr/bin/perl
# append_prepend.t: append/prepend on existing and missing keys, flags and
# exptime arguments ignored, growth across slab classes, binary data,
# noreply, and the too-large boundary.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $server = new_memcached();
my $sock = $server->sock;

reply_is(send_recv($sock, "append miss 0 0 1\r\nx\r\n"), "NOT_STORED\r\n",
    'append to missing key');
reply_is(send_recv($sock, "prepend miss 0 0 1\r\nx\r\n"), "NOT_STORED\r\n",
    'prepend to missing key');
mem_get_is($sock, 'miss', undef, 'nothing created');

reply_is(send_recv($sock, "set k 42 0 5\r\nhello\r\n"), "STORED\r\n", 'set');
reply_is(send_recv($sock, "append k 99 0 6\r\n world\r\n"), "STORED\r\n", 'append');
mem_get_is({ sock => $sock, flags => 42 }, 'k', 'hello world',
    'appended; flags of append ignored');
reply_is(send_recv($sock, "prepend k 7 0 3\r\n>> \r\n"), "STORED\r\n", 'prepend');
mem_get_is({ sock => $sock, flags => 42 }, 'k', '>> hello world', 'prepended');

# empty append is fine
reply_is(send_recv($sock, "append k 0 0 0\r\n\r\n"), "STORED\r\n", 'empty append');
mem_get_is({ sock => $sock, flags => 42 }, 'k', '>> hello world', 'unchanged by empty append');

# cas changes on append
my ($c1) = mem_gets($sock, 'k');
send_recv($sock, "append k 0 0 1\r\n!\r\n");
my ($c2, $v2) = mem_gets($sock, 'k');
isnt($c2, $c1, 'append gives a new cas');
is($v2, '>> hello world!', 'value after append');

# grow an item through many slab classes
send_recv($sock, "set grow 0 0 1\r\na\r\n");
my $exp = 'a';
my $bad = 0;
for my $i (1 .. 60) {
    my $chunk = chr(97 + $i % 26) x (37 * $i);
    $exp .= $chunk;
    my $r = send_recv($sock, "append grow 0 0 " . length($chunk) . "\r\n$chunk\r\n");
    $bad++ unless $r eq "STORED\r\n";
}
is($bad, 0, '60 growing appends stored');
mem_get_is($sock, 'grow', $exp, 'grown value intact (' . length($exp) . ' bytes)');
my $pre = '';
for my $i (1 .. 20) {
    my $chunk = "<$i>" x 50;
    $pre = $chunk . $pre;
    send_recv($sock, "prepend grow 0 0 " . length($chunk) . "\r\n$chunk\r\n");
}
mem_get_is($sock, 'grow', $pre . $exp, 'prepends on a big item');

# binary data
my $b = "\0\r\n\xff";
send_recv($sock, "set bin 0 0 4\r\n$b\r\n");
send_recv($sock, "append bin 0 0 4\r\n$b\r\n");
send_recv($sock, "prepend bin 0 0 4\r\n$b\r\n");
mem_get_is($sock, 'bin', $b x 3, 'binary append/prepend');

# noreply
reply_is(send_sync($sock, "append k 0 0 1 noreply\r\n?\r\nprepend k 0 0 1 noreply\r\n?\r\n"
        . "append none 0 0 1 noreply\r\n?\r\n"), '', 'noreply append/prepend silent');
mem_get_is({ sock => $sock, flags => 42 }, 'k', '?>> hello world!?', 'noreply took effect');

# appending past the item size limit fails and leaves the item alone
my $big = 'x' x (600 * 1024);
reply_is(send_recv($sock, "set lim 0 0 " . length($big) . "\r\n$big\r\n"), "STORED\r\n",
    '600 KB item');
my $r = send_recv($sock, "append lim 0 0 " . length($big) . "\r\n$big\r\n", timeout => 10);
reply_is($r, "NOT_STORED\r\n", 'append beyond item_size_max: NOT_STORED (as 1.6.18)');
mem_get_is($sock, 'lim', $big, 'original kept after refused append');
reply_is(send_recv($sock, "version\r\n"), "VERSION 1.6.18\r\n", 'connection usable');

done_testing();
