#!/usr/bin/perl
# staging_memory.t: values bound for the N-zone that clients are sending
# are bounded per worker by -o tier_staging_limit (doc/tiering.md "Values
# in flight"):
#   - connections that each send most of a large N-bound set and stop:
#     the staging gauge rises to the limit of each worker and stops there,
#     the clients past it get memcached's out-of-memory reply and their
#     connections go on working, stalled values that are finished are
#     stored, and the gauge is back to 0 once the connections close;
#   - refused stores answer as memcached's do when it cannot allocate an
#     item (ASCII, meta and binary), and a refused set unlinks the key's
#     old value as memcached's does while add leaves it; no other stored
#     key is lost;
#   - the server's anonymous memory follows the gauge, not the number of
#     stalled clients, and goes back once they close (the buffers'
#     mappings within a second or two: they are kept for reuse until
#     unused for a second);
#   - a worker that holds no staging buffer takes a value larger than the
#     limit; tier_staging_limit=0 refuses nothing.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;
use BinaryFrames;

my $OOM = "SERVER_ERROR out of memory storing object\r\n";
my $LEN = 300_000;            # each value; 6 fit under 2 MB, 7 do not
my $SENT = 299_000;           # what a stalled client sends of it
my $LIMIT = 2 * 1024 * 1024;
my $WORKERS = 2;

# $n connections that each send $SENT bytes of a $LEN-byte set of
# stall:<tag>:<i> and stop; returns them once the server has read it all.
sub stall {
    my ($srv, $ctl, $tag, $n) = @_;
    my $want = mem_stats($ctl)->{bytes_read};
    my $part = 's' x $SENT;
    my @socks;
    for my $i (1 .. $n) {
        my $s = $srv->new_sock;
        my $line = "set stall:$tag:$i 0 0 $LEN\r\n";
        mc_send($s, $line . $part, 10) or BAIL_OUT("send to the server");
        $want += length($line) + $SENT;
        push @socks, $s;
    }
    ok(wait_until(20, sub { mem_stats($ctl)->{bytes_read} >= $want }),
        "$tag: the server read what $n stalled clients sent");
    return @socks;
}

# The replies the stalled clients got (the refused ones) by index, once
# as many as staging_refused counts have arrived.
sub refusals {
    my ($srv, $socks, $base) = @_;
    my %got;
    wait_until(20, sub {
        for my $i (0 .. $#$socks) {
            $got{$i} .= drain($socks->[$i], 0.01);
            delete $got{$i} if $got{$i} eq '';
        }
        scalar(keys %got)
            == $srv->tier_stats->{staging_refused} - $base;
    });
    return \%got;
}

my $srv = new_memcached("-m 64 -t $WORKERS -o nvm_size=64m,tier_policy=nvm,"
    . "tier_staging_limit=$LIMIT");
my $ctl = $srv->sock;
my $base_conns = mem_stats($ctl)->{curr_connections};
is(mem_stats($ctl, 'settings')->{tier_staging_limit}, $LIMIT,
    'stats settings shows tier_staging_limit');

my %kept;
for my $i (1 .. 5) {
    $kept{"keep$i"} = random_bytes($LEN, join '', 'a' .. 'z');
}
$kept{victim} = 'v' x $LEN;
$kept{victim_ms} = 'm' x $LEN;
for my $k (sort keys %kept) {
    reply_is(send_recv($ctl, "set $k 0 0 $LEN\r\n$kept{$k}\r\n",
        timeout => 10), "STORED\r\n", "$k stored");
}
is($srv->tier_stats->{n_items}, scalar keys %kept, 'all in the N-zone');
my $t0 = $srv->tier_stats;
is($t0->{staging_bytes}, 0, 'staging_bytes 0 with no value in flight');
is($t0->{staging_refused}, 0, 'staging_refused 0');
my $rss0 = proc_status_kb($srv->pid, 'RssAnon');

# ---- 1. stalled clients fill each worker's budget and no more ----
my $n = 60;
my @stalled = stall($srv, $ctl, 'a', $n);
my $got = refusals($srv, \@stalled, 0);
my $t = $srv->tier_stats;
my $item = $LEN + 100;     # a staging buffer: header, key and value
cmp_ok($t->{staging_bytes}, '<=', $WORKERS * $LIMIT,
    "staging_bytes ($t->{staging_bytes}) within $WORKERS workers' limit");
cmp_ok($t->{staging_bytes}, '>', $WORKERS * ($LIMIT - $item),
    'and each worker filled it: one more value would not fit');
my $refused = $t->{staging_refused};
is(scalar keys %$got, $refused,
    "the $refused clients past the limit were answered (staging_refused)");
is(scalar(grep { $_ eq $OOM } values %$got), $refused,
    '... each with SERVER_ERROR out of memory storing object');
my $held = $n - $refused;
my $per = $held > 0 ? $t->{staging_bytes} / $held : 0;
ok($per > $LEN && $per < $LEN + 200,
    "staging_bytes is the $held buffers still being received")
    or diag("$t->{staging_bytes} bytes for $held buffers");
is(mem_stats($ctl)->{store_no_memory}, $refused,
    'store_no_memory counts them as memcached counts a failed item');
my $rss1 = proc_status_kb($srv->pid, 'RssAnon');
SKIP: {
    skip 'sanitizer builds: their allocators change RSS', 1
        if slowdown() > 1;
    # staged whole, 60 values would take 18 MB
    cmp_ok($rss1 - $rss0, '<', 8 * 1024,
        'anonymous memory grew by under 8 MB with the clients stalled')
        or diag("RssAnon $rss0 kB -> $rss1 kB");
}
note("RssAnon $rss0 kB -> $rss1 kB with $n stalled clients, "
    . "$t->{staging_bytes} bytes staged");

# the refused clients' connections go on: the rest of the value is
# dropped, the next command is served
my ($r) = sort { $a <=> $b } keys %$got;
reply_is(send_recv($stalled[$r], ('s' x ($LEN - $SENT)) . "\r\n"
    . "get keep1\r\n", timeout => 10),
    "VALUE keep1 0 $LEN\r\n$kept{keep1}\r\nEND\r\n",
    'a refused client finishes its value and is served after it');

# ---- 2. refused stores while the budgets are spent ----
{
    my $s = $srv->new_sock;
    my $v = 'n' x $LEN;
    reply_is(send_recv($s, "set victim 0 0 $LEN\r\n$v\r\nget victim\r\n",
        n => 2, timeout => 10), $OOM . "END\r\n",
        'a refused set unlinks the old value, as memcached does');
    reply_is(send_recv($s, "add keep2 0 0 $LEN\r\n$v\r\nget keep2\r\n",
        n => 2, timeout => 10),
        $OOM . "VALUE keep2 0 $LEN\r\n$kept{keep2}\r\nEND\r\n",
        'a refused add leaves it');
    reply_is(send_recv($s, "ms victim_ms $LEN T0\r\n$v\r\nmg victim_ms v\r\n",
        n => 2, timeout => 10), $OOM . "EN\r\n",
        'ms: the same reply, and the old value unlinked');
    delete @kept{qw(victim victim_ms)};
    my $b = $srv->new_sock;
    my @r = map { bin_desc($_) } @{ bin_exchange($b,
        bin_req('set', key => 'binkey', ext => store_ext(0), value => $v)
        . bin_req('noop'), 2, 10) };
    is_deeply(\@r, ['01/0082 v=Out of memory c=0', '0a/0000 c=0'],
        'binary set: Out of memory, and the connection goes on');
    my $small = $srv->new_sock;
    reply_is(send_recv($small, "set small 0 0 5\r\nhello\r\n"),
        "STORED\r\n", 'a value that fits in what is left is stored');
    $kept{small} = 'hello';
}
for my $k (sort keys %kept) {
    mem_get_is($ctl, $k, $kept{$k}, "$k is still stored");
}

# ---- 3. a stalled value finished is stored and leaves the gauge ----
{
    my @held = grep { !exists $got->{$_} } 0 .. $#stalled;
    my $i = $held[0];
    my $before = $srv->tier_stats->{staging_bytes};
    reply_is(send_recv($stalled[$i], ('s' x ($LEN - $SENT)) . "\r\n",
        timeout => 10), "STORED\r\n", 'a stalled client finishes: STORED');
    my $key = 'stall:a:' . ($i + 1);
    mem_get_is($ctl, $key, 's' x $LEN, "$key reads back whole");
    cmp_ok($srv->tier_stats->{staging_bytes}, '<', $before,
        'its staging buffer left the gauge');
}

# ---- 4. closing the connections frees the buffers ----
close $_ for @stalled;
ok(wait_until(20, sub { $srv->tier_stats->{staging_bytes} == 0 }),
    'staging_bytes back to 0 once the stalled clients closed');
ok(wait_until(20, sub {
    mem_stats($ctl)->{curr_connections} <= $base_conns }),
    'the server closed them');
# the buffers' mappings are kept for reuse until unused for a second
my $rss2;
SKIP: {
    skip 'sanitizer builds: their allocators change RSS', 1
        if slowdown() > 1;
    ok(wait_until(10, sub {
        $rss2 = proc_status_kb($srv->pid, 'RssAnon');
        $rss2 - $rss0 < 3 * 1024 }),
        'anonymous memory back within 3 MB of where it was')
        or diag("RssAnon $rss0 kB -> $rss2 kB after the clients closed");
}
$rss2 //= proc_status_kb($srv->pid, 'RssAnon');
note("RssAnon $rss0 kB -> $rss2 kB after the clients closed");
for my $k (sort keys %kept) {
    mem_get_is($ctl, $k, $kept{$k}, "after: $k is still stored");
}
ok($srv->alive, 'server alive');
$srv->stop;

# ---- 5. a value larger than the limit, on a worker holding none ----
{
    my $srv = new_memcached('-m 64 -t 1 -o nvm_size=64m,tier_policy=nvm,'
        . 'tier_staging_limit=256k');
    my $s = $srv->sock;
    my $big = random_bytes(600_000, join '', 'A' .. 'Z');
    reply_is(send_recv($s, "set big 0 0 600000\r\n$big\r\n", timeout => 10),
        "STORED\r\n", 'a 600 KB value with a 256 KB limit: stored');
    mem_get_is($s, 'big', $big, 'and reads back');
    my $p = $srv->new_sock;
    mc_send($p, "set part 0 0 100000\r\n" . ('p' x 1000));
    ok(wait_until(10, sub { $srv->tier_stats->{staging_bytes} > 0 }),
        'another client holds a staging buffer on the worker');
    reply_is(send_recv($s, "set big 0 0 600000\r\n$big\r\n", timeout => 10),
        $OOM, 'then the large value is refused');
    close $p;
    ok(wait_until(10, sub { $srv->tier_stats->{staging_bytes} == 0 }),
        'the other client leaves');
    reply_is(send_recv($s, "set big 0 0 600000\r\n$big\r\n", timeout => 10),
        "STORED\r\n", 'and it is stored again');
    $srv->stop;
}

# ---- 6. no limit ----
{
    my $srv = new_memcached('-m 64 -t 1 -o nvm_size=64m,tier_policy=nvm,'
        . 'tier_staging_limit=0,tier_inflight_limit=0');
    my $ctl = $srv->sock;
    my $st = mem_stats($ctl, 'settings');
    is($st->{tier_staging_limit}, 0, 'tier_staging_limit=0 accepted');
    is($st->{tier_inflight_limit}, 0, 'so is tier_inflight_limit=0');
    my @s = stall($srv, $ctl, 'nolimit', 10);
    ok(wait_until(10, sub {
        $srv->tier_stats->{staging_bytes} >= 10 * $LEN }),
        'without a limit every stalled value is staged');
    is($srv->tier_stats->{staging_refused}, 0, 'and none refused');
    close $_ for @s;
    ok(wait_until(20, sub { $srv->tier_stats->{staging_bytes} == 0 }),
        'all freed when they close');
    $srv->stop;
}

done_testing();
