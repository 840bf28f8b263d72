#!/usr/bin/perl
# udp.t: the UDP listener (-U).  Every request datagram carries the 8-byte
# frame header (request id, sequence number, datagram count, reserved);
# replies carry the same request id, sequence numbers 0..n-1 and the total
# count.  Covers set/get/delete/incr/stats over UDP, replies spanning many
# datagrams, interleaved request ids, multi-datagram requests (dropped),
# and runts that must be ignored without harming the server.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Select;
use IO::Socket::INET;
use MemcachedTest;

my $server = new_memcached('-t 2', udp => 1);
ok($server->udpport, 'udp port ' . $server->udpport);
my $u = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $server->udpport,
    Proto => 'udp') or die "udp socket: $!";

# send one request; collect datagrams for $reqid until all arrived
sub udp_req {
    my ($payload, $reqid, %o) = @_;
    my $total = defined $o{total} ? $o{total} : 1;
    $u->send(pack('nnnn', $reqid, 0, $total, 0) . $payload);
    my (%parts, $count, @hdrs);
    my $sel = IO::Select->new($u);
    while ($sel->can_read($o{timeout} || 3)) {
        my $dg;
        $u->recv($dg, 65536);
        next if length $dg < 8;
        my ($id, $seq, $n, $res) = unpack('nnnn', substr($dg, 0, 8));
        push @hdrs, [$id, $seq, $n, $res];
        next unless $id == $reqid;
        $parts{$seq} = substr($dg, 8);
        $count = $n;
        last if keys(%parts) == $count;
    }
    return { data => undef, hdrs => \@hdrs } unless $count && keys(%parts) == $count;
    return { data => join('', map { $parts{$_} } sort { $a <=> $b } keys %parts),
        hdrs => \@hdrs, count => $count };
}

my $r = udp_req("set foo 0 0 3\r\nbar\r\n", 1);
reply_is($r->{data}, "STORED\r\n", 'set over UDP');
is_deeply($r->{hdrs}, [[1, 0, 1, 0]], 'reply header: id 1, seq 0, 1 datagram, reserved 0');
$r = udp_req("get foo\r\n", 2);
reply_is($r->{data}, "VALUE foo 0 3\r\nbar\r\nEND\r\n", 'get over UDP');
mem_get_is($server->sock, 'foo', 'bar', 'UDP store visible over TCP');
reply_is(udp_req("incr n 1\r\n", 3)->{data}, "NOT_FOUND\r\n", 'incr miss over UDP');
reply_is(udp_req("delete foo\r\n", 4)->{data}, "DELETED\r\n", 'delete over UDP');
reply_is(udp_req("bogus\r\n", 5)->{data}, "ERROR\r\n", 'error over UDP');
reply_is(udp_req("mg nokey v\r\n", 6)->{data}, "EN\r\n", 'meta over UDP');
reply_is(udp_req("version\r\n", 65535)->{data}, "VERSION 1.6.18\r\n", 'request id 65535');

# a reply spanning many datagrams
my $val = join '', map { sprintf '%07d|', $_ } 1 .. 1250;    # 10000 bytes
send_recv($server->sock, "set big 0 0 " . length($val) . "\r\n$val\r\n");
$r = udp_req("get big\r\n", 77);
reply_is($r->{data}, "VALUE big 0 " . length($val) . "\r\n$val\r\nEND\r\n",
    'multi-datagram reply reassembled');
cmp_ok($r->{count} || 0, '>=', 8, "reply split into $r->{count} datagrams");
my @seqs = sort { $a <=> $b } map { $_->[1] } grep { $_->[0] == 77 } @{ $r->{hdrs} };
is_deeply(\@seqs, [0 .. $r->{count} - 1], 'sequence numbers 0..n-1');
ok(!grep({ $_->[2] != $r->{count} } @{ $r->{hdrs} }), 'every datagram carries the count');

# two request ids in flight
$u->send(pack('nnnn', 100, 0, 1, 0) . "get big\r\n");
$u->send(pack('nnnn', 101, 0, 1, 0) . "version\r\n");
my (%got, %cnt);
my $sel = IO::Select->new($u);
while ($sel->can_read(3)) {
    my $dg;
    $u->recv($dg, 65536);
    my ($id, $seq, $n) = unpack('nnnn', $dg);
    $got{$id}{$seq} = substr($dg, 8);
    $cnt{$id} = $n;
    last if keys(%got) == 2 && keys(%{ $got{100} }) == $cnt{100} && keys(%{ $got{101} }) == 1;
}
reply_is(join('', map { $got{101}{$_} } sort keys %{ $got{101} || {} }),
    "VERSION 1.6.18\r\n", 'interleaved request: small reply');
reply_is(join('', map { $got{100}{$_} } sort { $a <=> $b } keys %{ $got{100} || {} }),
    "VALUE big 0 " . length($val) . "\r\n$val\r\nEND\r\n", 'interleaved request: big reply');

# multi-datagram requests are not supported: memcached 1.6.18 drops them
# without a reply
$r = udp_req("get foo\r\n", 9, total => 2, timeout => 1);
ok(!defined $r->{data} && !grep({ $_->[0] == 9 } @{ $r->{hdrs} }),
    'multi-datagram request dropped');

# runts and garbage are ignored
$u->send("\x00\x01");
$u->send('');
$u->send(pack('nnnn', 10, 0, 1, 0));
$u->send(pack('nnnn', 11, 0, 1, 0) . ("\xff" x 3000));
reply_is(udp_req("version\r\n", 12)->{data}, "VERSION 1.6.18\r\n", 'alive after runts');
ok($server->alive, 'server process alive');

my $st = $server->stats;
cmp_ok($st->{cmd_get}, '>=', 3, 'UDP gets counted');
$server->stop;

# without -U no UDP listener is opened (default -U 0)
my $tcp_only = new_memcached('');
is($tcp_only->stats('settings')->{udpport}, 0, 'default: udpport 0');

done_testing();
