#!/usr/bin/perl
# add_replace.t: add stores only missing keys, replace only existing ones;
# both keep/lose flags correctly, honour noreply, and treat expired or
# deleted items as missing.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $server = new_memcached();
my $sock = $server->sock;

reply_is(send_recv($sock, "replace r 0 0 1\r\nx\r\n"), "NOT_STORED\r\n",
    'replace of a missing key');
mem_get_is($sock, 'r', undef, 'still missing after failed replace');

reply_is(send_recv($sock, "add a 5 0 3\r\none\r\n"), "STORED\r\n", 'add new key');
mem_get_is({ sock => $sock, flags => 5 }, 'a', 'one', 'added value');
reply_is(send_recv($sock, "add a 6 0 3\r\ntwo\r\n"), "NOT_STORED\r\n",
    'add of an existing key refused');
mem_get_is({ sock => $sock, flags => 5 }, 'a', 'one', 'value unchanged after failed add');

reply_is(send_recv($sock, "replace a 7 0 5\r\nthree\r\n"), "STORED\r\n",
    'replace existing key');
mem_get_is({ sock => $sock, flags => 7 }, 'a', 'three', 'replaced value and flags');

# the data block of a refused add/replace is consumed, not parsed
reply_is(send_sync($sock, "add a 0 0 7\r\nget a b\r\nversion\r\n"),
    "NOT_STORED\r\nVERSION 1.6.18\r\n", 'refused add swallows its data block');

# delete then add works again
reply_is(send_recv($sock, "delete a\r\n"), "DELETED\r\n", 'delete');
reply_is(send_recv($sock, "add a 0 0 1\r\n1\r\n"), "STORED\r\n", 'add after delete');
reply_is(send_recv($sock, "replace zz 0 0 1\r\n1\r\n"), "NOT_STORED\r\n",
    'replace never-set key');

# noreply variants
reply_is(send_sync($sock, "add a 0 0 1 noreply\r\nX\r\nadd n1 0 0 1 noreply\r\nY\r\n"
        . "replace n1 3 0 1 noreply\r\nZ\r\nreplace n2 0 0 1 noreply\r\nW\r\n"),
    '', 'noreply add/replace send nothing');
mem_get_is($sock, 'a', '1', 'noreply add did not overwrite');
mem_get_is({ sock => $sock, flags => 3 }, 'n1', 'Z', 'noreply add then replace');
mem_get_is($sock, 'n2', undef, 'noreply replace of missing key stored nothing');

# expired items count as missing for add, and replace fails on them
reply_is(send_recv($sock, "set e 0 -1 1\r\nx\r\n"), "STORED\r\n", 'set already expired');
reply_is(send_recv($sock, "replace e 0 0 1\r\ny\r\n"), "NOT_STORED\r\n",
    'replace on expired item');
reply_is(send_recv($sock, "add e 0 0 1\r\nz\r\n"), "STORED\r\n", 'add on expired item');
mem_get_is($sock, 'e', 'z', 'add on expired stored the new value');

# add bumps an existing item's stats but not its value; stats count it
my $st = $server->stats;
cmp_ok($st->{cmd_set}, '>=', 10, "cmd_set counts add/replace ($st->{cmd_set})");

done_testing();
