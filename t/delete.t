#!/usr/bin/perl
# delete.t: delete hits and misses, the legacy "delete key 0" form, other
# time arguments refused, noreply, bad argument counts, and that delete
# really removes the item (add succeeds afterwards).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $server = new_memcached();
my $sock = $server->sock;

reply_is(send_recv($sock, "delete nokey\r\n"), "NOT_FOUND\r\n", 'delete missing');
send_recv($sock, "set k 0 0 1\r\nv\r\n");
reply_is(send_recv($sock, "delete k\r\n"), "DELETED\r\n", 'delete existing');
mem_get_is($sock, 'k', undef, 'gone');
reply_is(send_recv($sock, "delete k\r\n"), "NOT_FOUND\r\n", 'second delete misses');
reply_is(send_recv($sock, "add k 0 0 1\r\nw\r\n"), "STORED\r\n", 'add after delete');

# legacy time argument: only 0 is accepted
reply_is(send_recv($sock, "delete k 0\r\n"), "DELETED\r\n", 'delete k 0 (legacy)');
send_recv($sock, "set k 0 0 1\r\nv\r\n");
reply_is(send_recv($sock, "delete k 10\r\n"),
    "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n",
    'delete k 10 refused');
mem_get_is($sock, 'k', 'v', 'refused delete left the item');

# noreply forms
reply_is(send_sync($sock, "delete k noreply\r\ndelete k noreply\r\n"), '',
    'delete noreply silent (hit and miss)');
mem_get_is($sock, 'k', undef, 'noreply delete removed it');
send_recv($sock, "set k 0 0 1\r\nv\r\n");
reply_is(send_sync($sock, "delete k 0 noreply\r\n"), '', 'delete k 0 noreply silent');
mem_get_is($sock, 'k', undef, 'legacy noreply delete removed it');

# bad argument counts
reply_is(send_recv($sock, "delete\r\n"), "ERROR\r\n", 'bare delete');
reply_is(send_recv($sock, "delete a b c d\r\n"), "ERROR\r\n", 'too many tokens');
my $long = 'x' x 251;
reply_is(send_recv($sock, "delete $long\r\n"),
    "CLIENT_ERROR bad command line format\r\n", 'key too long');

# delete of an expired item is a miss
send_recv($sock, "set old 0 -1 1\r\nv\r\n");
reply_is(send_recv($sock, "delete old\r\n"), "NOT_FOUND\r\n", 'delete expired item');

# many deletes
my $n = 300;
send_sync($sock, join '', map { "set d$_ 0 0 1\r\nx\r\n" } 1 .. $n);
reply_is(send_sync($sock, join '', map { "delete d$_\r\n" } 1 .. $n),
    "DELETED\r\n" x $n, "$n pipelined deletes");
reply_is(send_recv($sock, "get d1 d100 d300\r\n"), "END\r\n", 'all deleted');

my $st = $server->stats;
cmp_ok($st->{delete_hits}, '>=', $n + 4, 'delete_hits');
cmp_ok($st->{delete_misses}, '>=', 3, 'delete_misses');

done_testing();
