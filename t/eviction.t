#!/usr/bin/perl
# eviction.t: with a small -m, writing far more than fits evicts old items
# (the oldest keys disappear first), the `evictions` stat rises, recent and
# frequently read keys survive, nothing read back is ever corrupt, and the
# server keeps serving.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $server = new_memcached('-m 8');
my $sock = $server->sock;
my $val = sub { my $i = shift; return sprintf('%06d', $i) x 170 };    # 1020 bytes
my $n = 30_000;    # ~30 MB into 8 MB
my $hot = 'hotkey';
send_recv($sock, "set $hot 0 0 3\r\nhot\r\n");
my $batch = '';
my $bad = 0;
for my $i (1 .. $n) {
    my $v = $val->($i);
    $batch .= "set key$i 0 0 " . length($v) . "\r\n$v\r\n";
    if ($i % 500 == 0) {
        my $r = send_sync($sock, $batch, timeout => 20);
        $bad++ unless $r eq "STORED\r\n" x 500;
        $batch = '';
        send_recv($sock, "get $hot\r\n");
    }
}
is($bad, 0, "all $n sets acknowledged");
my $st = $server->stats;
cmp_ok($st->{evictions}, '>', 1000, "evictions stat rose ($st->{evictions})");
cmp_ok($st->{curr_items}, '<', $n, "curr_items below $n ($st->{curr_items})");
cmp_ok($st->{bytes}, '<=', 8 * 1024 * 1024, 'bytes within -m');
is($st->{total_items}, $n + 1, 'total_items counts every store');

# oldest gone, newest present, nothing corrupt
my ($old_present, $new_present, $corrupt) = (0, 0, 0);
for my $i (1 .. 500) {
    my $r = send_recv($sock, "get key$i\r\n");
    next if $r eq "END\r\n";
    $old_present++;
    $corrupt++ unless $r eq "VALUE key$i 0 1020\r\n" . $val->($i) . "\r\nEND\r\n";
}
for my $i ($n - 499 .. $n) {
    my $r = send_recv($sock, "get key$i\r\n");
    if ($r eq "VALUE key$i 0 1020\r\n" . $val->($i) . "\r\nEND\r\n") { $new_present++ }
    elsif ($r ne "END\r\n") { $corrupt++ }
}
cmp_ok($old_present, '<', 50, "oldest keys evicted ($old_present of 500 left)");
cmp_ok($new_present, '>', 450, "newest keys present ($new_present of 500)");
is($corrupt, 0, 'no corrupt values');
mem_get_is($sock, $hot, 'hot', 'frequently read key survived');

my $it = $server->stats('items');
my $ev = 0;
$ev += $it->{$_} for grep { /^items:\d+:evicted$/ } keys %$it;
cmp_ok($ev, '>', 1000, 'per-class evicted counters');
reply_is(send_recv($sock, "set after 0 0 2\r\nok\r\n"), "STORED\r\n", 'still accepting sets');
ok($server->alive, 'server alive');

done_testing();
