#!/usr/bin/env perl
# -o read_buf_mem_limit: a reply past a worker's budget of memcached's
# response objects is refused as memcached refuses it (a multiget answers
# its out-of-memory error, stacked requests lose the connection), counted
# in response_obj_oom; a request line longer than the read buffer is read
# whole, as memcached reads a long multiget; the buffer gauges of `stats`
# follow the connections.  Compared with Debian's memcached (the budget's
# edges are t/read_buf_limit.t's).
use strict;
use warnings;
use FindBin qw($Bin);
use lib "$Bin/lib";
use Test::More;
use MemcachedTest;

my $OOM_GET = "SERVER_ERROR out of memory writing get response\r\n";

# 1 MB split over 32 workers: two 16 KB units each, a read buffer and 13
# response objects
my $LIMITED = '-o read_buf_mem_limit=1 -t 32 -R 500';

for my $s (servers_with_stock($LIMITED)) {
    my $n = $s->{name};
    my $sock = $s->{sock};
    reply_is(send_recv($sock, "set foo 0 0 3\r\nabc\r\n"), "STORED\r\n",
        "$n: stored");

    my $many = 'get ' . join(' ', ('foo') x 500) . "\r\n";
    reply_is(send_recv($sock, $many), $OOM_GET,
        "$n: a multiget past the share answers only the error");
    reply_is(send_recv($sock, "get foo\r\n"),
        "VALUE foo 0 3\r\nabc\r\nEND\r\n",
        "$n: the connection goes on serving");
    is(mem_stats($sock)->{response_obj_oom}, 1,
        "$n: response_obj_oom counts the refused reply");

    my $stacked = $s->{srv}->new_sock;
    mc_send($stacked, "mg foo v\r\n" x 500);
    ok(wait_closed($stacked, 10),
        "$n: 500 stacked meta gets past the share close the connection");
    is(mem_stats($sock)->{response_obj_oom}, 2, "$n: and are counted");
    reply_is(send_recv($sock, "mg foo v\r\n"), "VA 3\r\nabc\r\n",
        "$n: the item is still there");
    $s->{srv}->stop;
}

# Without a limit the same requests are served whole.
{
    my $srv = new_memcached('-t 32 -R 500');
    my $sock = $srv->sock;
    send_recv($sock, "set foo 0 0 3\r\nabc\r\n");
    my $many = 'get ' . join(' ', ('foo') x 500) . "\r\n";
    my $want = "VALUE foo 0 3\r\nabc\r\n" x 500 . "END\r\n";
    reply_is(send_recv($sock, $many), $want,
        'no limit: 500 values and END');
    my $st = mem_stats($sock);
    is($st->{response_obj_oom}, 0, 'no limit: nothing refused');
    cmp_ok($st->{response_obj_count}, '>=', 1000,
        'response_obj_count: the reply pieces the multiget grew to');
    cmp_ok($st->{response_obj_bytes}, '<', $st->{read_buf_bytes},
        'response_obj_bytes is a part of read_buf_bytes');

    # buffer sets follow the connections; a closed one's are kept
    my $before = mem_stats($sock);
    my @extra = map { $srv->new_sock } 1 .. 3;
    send_recv($_, "version\r\n") for @extra;
    is(mem_stats($sock)->{read_buf_count}, $before->{read_buf_count} + 3,
        'read_buf_count: one set per open connection');
    $_->close for @extra;
    ok(wait_until(5, sub {
        mem_stats($sock)->{read_buf_count} == $before->{read_buf_count};
    }), 'read_buf_count: closed connections give theirs up');
    cmp_ok(mem_stats($sock)->{read_buf_bytes_free}, '>',
        $before->{read_buf_bytes_free},
        'read_buf_bytes_free: the closed structs keep their buffers');

    $srv->stop;
}

# A request line longer than the read buffer (a multiget of 12,000 keys):
# memcached reads it into a buffer of its own, outside the limit, and the
# multiget then fails for response objects; the connection goes on.
for my $s (servers_with_stock('-o read_buf_mem_limit=1 -t 32')) {
    my $n = $s->{name};
    my $sock = $s->{sock};
    send_recv($sock, "set k 0 0 1\r\nx\r\n");
    my $other = $s->{srv}->new_sock;
    my $long = 'get ' . join(' ', map { "key$_" } 1 .. 12000) . "\r\n";
    reply_is(send_recv($other, $long, timeout => 10), $OOM_GET,
        "$n: a line longer than the read buffer is read, the get fails");
    reply_is(send_recv($other, "get k\r\n"), "VALUE k 0 1\r\nx\r\nEND\r\n",
        "$n: the connection goes on");
    my $st = mem_stats($sock);
    is($st->{read_buf_oom}, 0, "$n: read_buf_oom: none");
    is($st->{response_obj_oom}, 1, "$n: response_obj_oom: the get");
    $s->{srv}->stop;
}

done_testing();
