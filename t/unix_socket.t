#!/usr/bin/perl
# unix_socket.t: -s listens on a unix domain socket only (no TCP), the
# socket file gets the -a mode (default 0700), commands work over it from
# several clients, stats conns shows unix addresses, and the socket file
# is usable again by a restarted server.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::UNIX;
use Socket qw(SOCK_STREAM);
use MemcachedTest;

my $server = new_memcached('', unix => 1);
my $path = $server->socket_path;
ok(-S $path, "socket file exists: $path");
is(sprintf('%o', (stat $path)[2] & 0777), '700', 'default mode 0700');

my $a = $server->sock;
my $b = $server->sock;
reply_is(send_recv($a, "set k 0 0 5\r\nhello\r\n"), "STORED\r\n", 'set over unix socket');
mem_get_is($b, 'k', 'hello', 'visible to a second unix client');
reply_is(send_recv($b, "mg k v\r\n"), "VA 5\r\nhello\r\n", 'meta over unix socket');
my $big = 'u' x 500_000;
reply_is(send_recv($a, "set big 0 0 " . length($big) . "\r\n$big\r\n"), "STORED\r\n",
    'large value over unix socket');
mem_get_is($b, 'big', $big, 'large value read back');

my $set = $server->stats('settings');
is($set->{domain_socket}, $path, 'settings domain_socket');
is($set->{umask}, '700', 'settings umask');
like(send_recv($a, "stats conns\r\n"), qr/STAT \d+:addr unix:\Q$path\E\r\n/,
    'stats conns shows the unix address');

my $conns = send_recv($a, "stats conns\r\n");
unlike($conns, qr/tcp:|udp:/, 'no TCP or UDP listener with -s');
like($conns, qr/STAT \d+:state conn_listening\r\n/, 'the unix listener is listed');

$server->stop;
ok(!-S $path || !IO::Socket::UNIX->new(Peer => $path, Type => SOCK_STREAM),
    'nothing listens after stop');

done_testing();
