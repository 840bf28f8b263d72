#!/usr/bin/perl
# data_safety.t: one client can never read another key's value, and no
# failure eats a stored item (doc/tiering.md "Values in flight" and
# "Replacing a version").  Each case is a defect once seen on the wire:
#   - a multiget naming one key 65,536 times, left unread, must not wrap
#     the item's reference count: after a delete and a set that reuses the
#     chunk, every value the reader gets is the old key's, and the new key
#     stays stored;
#   - N-zone values copied out for unread replies are bounded per worker
#     (tier_inflight_limit): RSS stays put, the multiget is refused with
#     memcached's out-of-memory reply alone, and the gauge returns to
#     zero;
#   - a copy of an N item that cannot be made (debugfail) is an error,
#     never a miss: no command then links a second version of the key;
#   - append, prepend, cas and replace that find no room keep the stored
#     value (-M, both zones full);
#   - under -C with sync promotion, touch keeps the TTL it set;
#   - a late TTL write of `ma` never lands on a newer version of the key.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use MemcachedTest;

# Parse a get reply: list of [key, value] and the trailer line.  Walks
# the reply with pos(): cutting each value off its front copied the rest
# of a 7 MB reply every time (a minute of CPU for the refcount case).
sub parse_values {
    my ($r) = @_;
    my @v;
    while ($r =~ /\GVALUE (\S+) \d+ (\d+)\r\n/gc) {
        my ($k, $len) = ($1, $2);
        push @v, [$k, substr($r, pos($r), $len)];
        pos($r) += $len;
        $r =~ /\G\r\n/gc;
    }
    return (\@v, substr($r, pos($r) // 0));
}

# ---- 1. reference count bounded per item ----
{
    my $srv = new_memcached('-m 64 -t 1');
    my $w = $srv->sock;
    my ($kval, $jval) = ('k' x 100, 'j' x 100);
    reply_is(send_recv($w, "set k 0 0 100\r\n$kval\r\n"), "STORED\r\n",
        'refcount: set k');
    my $n = 65536;
    my $r = $srv->sock;
    ok(mc_send($r, 'get ' . join(' ', ('k') x $n) . "\r\n", 20),
        "refcount: a get naming k $n times sent, its reply left unread");
    my $done = wait_until(20, sub {
        (mem_stats($w)->{cmd_get} // 0) >= $n });
    ok($done, 'refcount: the server looked every key up');
    reply_is(send_recv($w, "delete k\r\n"), "DELETED\r\n",
        'refcount: delete k while the reply is in flight');
    reply_is(send_recv($w, "set j 0 0 100\r\n$jval\r\n"), "STORED\r\n",
        'refcount: set j (same slab class)');
    my $reply = '';
    my $deadline = time + 30;
    while (time < $deadline && $reply !~ /END\r\n\z/) {
        my $chunk = drain($r, 0.5);
        $reply .= $chunk;
    }
    my ($vals, $tail) = parse_values($reply);
    my $foreign = grep { $_->[1] ne $kval } @$vals;
    is($tail, "END\r\n", 'refcount: the reply ends with END');
    is($foreign, 0, 'refcount: no value in the reply is another key\'s')
        or diag("$foreign of " . scalar(@$vals) . ' values were not k\'s');
    cmp_ok(scalar @$vals, '<=', 60000,
        'refcount: hits past the limit were answered as misses');
    cmp_ok(scalar @$vals, '>', 0, 'refcount: the hits before it were served');
    mem_get_is($w, 'j', $jval, 'refcount: j is still stored');
    is(mem_stats($w)->{curr_items}, 1, 'refcount: curr_items 1');
    ok($srv->alive, 'refcount: server alive');
}

# ---- 2. N values in flight bounded per worker ----
{
    my $limit = 4 * 1024 * 1024;
    my $srv = new_memcached('-m 64 -I 1m -t 1 -o nvm_size=64m,'
        . "tier_policy=nvm,tier_inflight_limit=$limit");
    my $w = $srv->sock;
    my $len = 512 * 1024;
    my $val = random_bytes($len, join '', 'a' .. 'z');
    reply_is(send_recv($w, "set big 0 0 $len\r\n$val\r\n", timeout => 10),
        "STORED\r\n", 'inflight: 512 KB item stored in the N-zone');
    mem_get_is($w, 'big', $val, 'inflight: it reads back');
    my $rss0 = proc_status_kb($srv->pid, 'VmRSS');
    my $n = 400;
    my $r = $srv->sock;
    mc_send($r, 'get ' . join(' ', ('big') x $n) . "\r\n");
    ok(wait_until(20, sub { (mem_stats($w)->{cmd_get} // 0) >= $n + 1
                            || $srv->tier_stats->{inflight_refused} }),
        "inflight: the server took the $n-key get");
    sleep 0.5;
    my $rss1 = proc_status_kb($srv->pid, 'VmRSS');
    my $t = $srv->tier_stats;
    cmp_ok($t->{inflight_refused}, '>', 0, 'inflight: hits past the limit '
        . 'were refused');
    cmp_ok($t->{inflight_bytes}, '<=', $limit + $len + 4096,
        'inflight: bytes held within the limit plus one value');
    ok(defined $rss0 && defined $rss1 && $rss1 - $rss0 < 16 * 1024,
        'inflight: RSS within 16 MB of where it started')
        or diag('RSS ' . ($rss0 // '?') . ' kB -> ' . ($rss1 // '?') . ' kB');
    note('RSS ' . ($rss0 // '?') . ' kB -> ' . ($rss1 // '?') . ' kB, '
        . "$t->{inflight_refused} hits refused");
    my $reply = '';
    my $deadline = time + 30;
    while (time < $deadline && $reply !~ /\r\n\z/ || length $reply < 100) {
        $reply .= drain($r, 0.5);
        last if $reply =~ /(?:END|SERVER_ERROR[^\r]*)\r\n\z/;
        last if time >= $deadline;
    }
    my ($vals, $tail) = parse_values($reply);
    is($tail, "SERVER_ERROR out of memory writing get response\r\n",
        'inflight: the reader is told the reply ran out of memory');
    my $bad = grep { $_->[0] ne 'big' || $_->[1] ne $val } @$vals;
    is($bad, 0, 'inflight: every value sent is whole and right');
    is(scalar @$vals, 0, 'inflight: the error alone: the values queued '
       . 'before it are dropped, as memcached drops its unsent replies');
    ok(wait_until(10, sub { $srv->tier_stats->{inflight_bytes} == 0 }),
        'inflight: nothing held once the reply is written');
    mem_get_is($r, 'big', $val, 'inflight: the reader is served again');
    is(mem_stats($w, 'settings')->{tier_inflight_limit}, $limit,
        'inflight: stats settings shows the limit');
}

# ---- 3. a copy that cannot be made is no miss ----
SKIP: {
    my $srv = new_memcached('-m 64 -t 1 -o nvm_size=16m,tier_policy=nvm');
    my $s = $srv->sock;
    skip 'debugfail needs the debug build (memcached-debug)', 1
        unless send_recv($s, "debugfail 0\r\n") eq "OK\r\n";
    my $fail = sub { send_recv($s, "debugfail 1\r\n") };
    reply_is(send_recv($s, "set k 0 0 2\r\nv1\r\n"), "STORED\r\n",
        'nomem: set k (N-zone)');
    reply_is(send_recv($s, "set n 0 0 2\r\n10\r\n"), "STORED\r\n",
        'nomem: set n = 10');
    my %want = (
        "get k\r\n" => "SERVER_ERROR out of memory writing get response\r\n",
        "mg k v\r\n" => "SERVER_ERROR out of memory writing get response\r\n",
        "add k 0 0 2\r\nv2\r\n" => "SERVER_ERROR out of memory storing object\r\n",
        "set k 0 0 2\r\nv2\r\n" => "SERVER_ERROR out of memory storing object\r\n",
        "cas k 0 0 2 1\r\nv2\r\n" => "SERVER_ERROR out of memory storing object\r\n",
        "touch k 100\r\n" => "SERVER_ERROR out of memory\r\n",
        "incr n 1\r\n" => "SERVER_ERROR out of memory\r\n",
        "append k 0 0 2\r\nv2\r\n" => "SERVER_ERROR out of memory storing object\r\n",
    );
    for my $cmd (sort keys %want) {
        $fail->();
        (my $name = $cmd) =~ s/\r\n.*//s;
        reply_is(send_recv($s, $cmd), $want{$cmd},
            "nomem: '$name' with the copy failing");
    }
    send_recv($s, "debugfail 0\r\n");
    is(mem_stats($s)->{curr_items}, 2, 'nomem: still one version of each key');
    mem_get_is($s, 'k', 'v1', 'nomem: k kept its value');
    mem_get_is($s, 'n', '10', 'nomem: n kept its value');
    $fail->();
    reply_is(send_recv($s, "delete k\r\n"), "DELETED\r\n",
        'nomem: delete copies nothing, so it cannot fail');
    send_recv($s, "debugfail 0\r\n");
    mem_get_is($s, 'k', undef, 'nomem: k is gone');
    is(mem_stats($s)->{curr_items}, 1, 'nomem: curr_items 1');
}

# ---- 4. a replace that finds no room keeps the old value ----
{
    my $srv = new_memcached('-m 2 -I 64k -t 1 -M -o nvm_size=4m');
    my $s = $srv->sock;
    my $len = 3000;
    my (%kv, $full);
    for my $i (1 .. 5000) {
        my $v = random_bytes($len, join '', 'A' .. 'Z');
        my $r = send_recv($s, "set key$i 0 0 $len\r\n$v\r\n");
        if ($r ne "STORED\r\n") {
            $full = $r;
            last;
        }
        $kv{"key$i"} = $v;
    }
    is($full, "SERVER_ERROR out of memory storing object\r\n",
        'full: both zones filled under -M');
    my $t = $srv->tier_stats;
    cmp_ok($t->{n_items}, '>', 0, 'full: some keys live in the N-zone');
    # every update needs a chunk of a larger class: none is left
    my $grow = 2000;
    my $big = $len + $grow;
    my $tail = 't' x $grow;
    my %outcome;
    my @keys = sort keys %kv;
    for my $i (0 .. $#keys) {
        my $k = $keys[$i];
        my $kind = (qw(append prepend replace cas))[$i % 4];
        my $cmd;
        if ($kind eq 'cas') {
            my $g = send_recv($s, "gets $k\r\n");
            my ($cas) = $g =~ /^VALUE \S+ \d+ \d+ (\d+)/;
            $cmd = "cas $k 0 0 $big $cas\r\n" . ('c' x $big) . "\r\n";
        }
        elsif ($kind eq 'replace') {
            $cmd = "replace $k 0 0 $big\r\n" . ('r' x $big) . "\r\n";
        }
        else {
            $cmd = "$kind $k 0 0 $grow\r\n$tail\r\n";
        }
        my $r = send_recv($s, $cmd);
        $outcome{$r}++;
        next unless $r eq "STORED\r\n";
        $kv{$k} = $kind eq 'append' ? $kv{$k} . $tail
                : $kind eq 'prepend' ? $tail . $kv{$k}
                : $kind eq 'cas' ? 'c' x $big : 'r' x $big;
    }
    note(join ', ', map { (my $o = $_) =~ s/\r\n//; "$o x$outcome{$_}" }
                    sort keys %outcome);
    cmp_ok(scalar(grep { $_ ne "STORED\r\n" } keys %outcome), '>', 0,
        'full: some updates found no room');
    my ($lost, $wrong) = (0, 0);
    for my $k (@keys) {
        my $r = send_recv($s, "get $k\r\n", timeout => 10);
        if ($r eq "END\r\n") {
            $lost++;
        }
        elsif ($r ne "VALUE $k 0 " . length($kv{$k}) . "\r\n$kv{$k}\r\nEND\r\n") {
            $wrong++;
        }
    }
    is($lost, 0, 'full: no key lost by a failed append/prepend/replace/cas');
    is($wrong, 0, 'full: every key holds its last acknowledged value');
    # a same-class replace needs no room: N versions take their
    # predecessor's chunk
    my $same_ok = 0;
    for my $k (@keys[0 .. 99]) {
        my $v = 's' x $len;
        $same_ok++ if send_recv($s, "replace $k 0 0 $len\r\n$v\r\n")
            eq "STORED\r\n";
        $kv{$k} = $v;
    }
    cmp_ok($same_ok, '>=', 1, "full: same-size replaces stored ($same_ok/100)");
    ok($srv->alive, 'full: server alive');
}

# ---- 5. -C with sync promotion: touch keeps its TTL ----
{
    my $srv = new_memcached('-m 64 -t 1 -C -o nvm_size=16m,tier_policy=tlc,'
        . 'tier_placement=nvm,tier_promote=sync');
    my $s = $srv->sock;
    reply_is(send_recv($s, "set k 0 0 2\r\nhi\r\n"), "STORED\r\n",
        '-C sync: set k (N-zone first)');
    reply_is(send_recv($s, "touch k 1000\r\n"), "TOUCHED\r\n",
        '-C sync: touch k 1000 (the hit promotes it)');
    my $r = send_recv($s, "mg k t\r\n");
    like($r, qr/^HD t(99\d|1000)\r\n\z/, '-C sync: the TTL stayed set');
    reply_is(send_recv($s, "gat 2000 k\r\n"), "VALUE k 0 2\r\nhi\r\nEND\r\n",
        '-C sync: gat');
    like(send_recv($s, "mg k t\r\n"), qr/^HD t(199\d|2000)\r\n\z/,
        '-C sync: gat set its TTL too');
    like(send_recv($s, "mg k c\r\n"), qr/^HD c0\r\n\z/,
        '-C: clients still see cas 0');
}

# ---- 6. ma's TTL write never lands on a newer version ----
for my $opt ('', '-C') {
    my $srv = new_memcached("-m 64 -t 4 $opt -o nvm_size=16m,tier_policy=nvm");
    my ($a, $b, $chk) = map { $srv->sock } 1 .. 3;
    my $bad = 0;
    my $rounds = 0;
    my $deadline = time + 3;
    my $word = 'x' x 8;
    while (time < $deadline) {
        $rounds++;
        send_recv($chk, "set k 0 0 8\r\n00000001\r\n");
        # a's increments set a TTL after dropping the item lock; b's sets
        # of a non-number (no TTL) race them and cannot be incremented
        mc_send($a, "ma k T100\r\n" x 20);
        mc_send($b, "set k 0 0 8\r\n$word\r\n" x 20);
        read_reply($a, 10) for 1 .. 20;
        read_reply($b, 10) for 1 .. 20;
        my $r = send_recv($chk, "mg k t v\r\n");
        $bad++ if $r =~ /^VA 8 t(\d+)\r\n\Q$word\E\r\n\z/;
    }
    is($bad, 0, "late TTL $opt: a value set without TTL never took ma's "
        . "($rounds rounds)");
    ok($srv->alive, "late TTL $opt: server alive");
}

done_testing();
