#!/usr/bin/perl
# refcount.t: a large value whose reply is still being sent survives a
# delete, an overwrite and a flush issued from other connections: the
# reader gets the complete old value, byte for byte, and the new state is
# visible afterwards.  The reader reads slowly so the reply is in flight.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use MemcachedTest;

my $server = new_memcached('-m 64 -I 4m');
my $w = $server->sock;
my $size = 3 * 1024 * 1024;
my $old = join '', map { sprintf '%08x', $_ } 0 .. $size / 8 - 1;
my $new = 'N' x 1000;
my $exp_old = "VALUE big 0 $size\r\n$old\r\nEND\r\n";

for my $case (['delete', "delete big\r\n", "DELETED\r\n", undef],
              ['overwrite', "set big 0 0 1000\r\n$new\r\n", "STORED\r\n", $new],
              ['flush_all', "flush_all\r\n", "OK\r\n", undef]) {
    my ($name, $cmd, $ack, $after) = @$case;
    reply_is(send_recv($w, "set big 0 0 $size\r\n$old\r\n", timeout => 10), "STORED\r\n",
        "$name: store 3 MB");
    my $r = $server->sock;
    mc_send($r, "get big\r\n");
    # read only the first bytes, so the rest of the reply is pending
    my $head = read_bytes($r, 4096, 5);
    reply_is(send_recv($w, $cmd), $ack, "$name issued while the reply is in flight");
    my $rest = read_bytes($r, length($exp_old) - 4096, 15);
    my $got = defined $head && defined $rest ? $head . $rest : undef;
    ok(defined $got && $got eq $exp_old, "$name: the in-flight reply is complete and intact")
        or diag('got ' . (defined $got ? length($got) : 'undef') . ' bytes');
    mem_get_is($r, 'big', $after, "$name: new state visible");
}

# many concurrent readers, writer overwriting in between
my @readers = map { $server->sock } 1 .. 5;
send_recv($w, "set big 0 0 $size\r\n$old\r\n", timeout => 10);
mc_send($_, "get big\r\n") for @readers;
send_recv($w, "set big 0 0 1000\r\n$new\r\n");
my $intact = 0;
for my $r (@readers) {
    my $got = read_reply($r, 15);
    $intact++ if $got eq $exp_old || $got eq "VALUE big 0 1000\r\n$new\r\nEND\r\n";
}
is($intact, 5, 'five concurrent readers each got one whole value');
ok($server->alive, 'server alive');

done_testing();
