#!/usr/bin/env perl
# watch.t: memcached's live logs.  The same wire checks run against
# tiercached and Debian's memcached 1.6.18: `watch`'s replies (streams it
# knows, the default stream, noreply, the limit of 20 watchers), the lines
# that a connection's requests (ASCII, meta, binary), its opening and
# closing and evictions produce, with their keys and statuses; a watcher
# that does not read loses lines, counted, while the workers go on; a
# closed watcher is gone.  Then tiercached's own stream, `watch tier`.
# Every wait reads with a deadline (doc/monitoring.md "Live logs").
use strict;
use warnings;
use FindBin qw($Bin);
use lib "$Bin/lib";
use Test::More;
use MemcachedTest;
use IO::Select;
use Time::HiRes qw(time);

my $LINE_RE = qr/^ts=\d+\.\d+ gid=\d+ type=\S+( \S+=\S*)*\n\z/;

# Deadlines for things that must happen, stretched as wait_until's are.
sub deadline { return time + $_[0] * slowdown() * load_factor() }

# Lines of watcher $w until $done->(\@lines) is true or $secs pass;
# $poke, if given, runs first and then whenever half a second brings no
# bytes (to make an event the stream should show).  Reads big chunks and
# splits them here: a backlog of megabytes is read in seconds.
sub watch_until {
    my ($w, $secs, $done, $poke) = @_;
    my @lines;
    my $end = deadline($secs);
    my $sel = IO::Select->new($w);
    my $buf = \${ *$w }{mct_rbuf};    # what MemcachedTest read ahead
    $$buf //= '';
    $poke->() if $poke;
    while (1) {
        pos($$buf) = 0;
        while ($$buf =~ /\G([^\n]*\n)/gc) {
            push @lines, $1;
            if ($done->(\@lines)) {
                $$buf = substr($$buf, pos($$buf));
                return \@lines;
            }
        }
        $$buf = substr($$buf, pos($$buf) // 0);
        my $left = $end - time;
        last if $left <= 0;
        if ($sel->can_read($poke && $left > 0.5 ? 0.5 : $left)) {
            my $got = sysread($w, my $chunk, 1 << 20);
            last unless $got;
            $$buf .= $chunk;
        } elsif ($poke) {
            $poke->();
        }
    }
    return \@lines;
}

# Until the server counts no watcher: memcached notices a closed one when
# it has a line for it, so each try sets and gets a key.
sub watchers_gone {
    my ($srv, $sock) = @_;
    return wait_until(10, sub {
        send_recv($sock, "set gone 0 0 1\r\n1\r\n");
        send_recv($sock, "get gone\r\n");
        return (stat_of($srv, 'log_watchers') // -1) == 0;
    }, 0.1);
}

# Lines of the connection from $port, from its conn_new to its
# conn_close.
sub lines_of {
    my ($lines, $port) = @_;
    my @mine;
    for (@$lines) {
        push @mine, $_ if @mine || /type=conn_new .*rport=$port /;
        last if /type=conn_close .*rport=$port /;
    }
    return \@mine;
}

sub has_line {
    my ($lines, $re) = @_;
    return scalar grep { $_ =~ $re } @$lines;
}

sub watcher {
    my ($srv, $streams) = @_;
    my $w = $srv->new_sock;
    my $r = send_recv($w, "watch $streams\r\n");
    return ($w, $r);
}

# The connection's own lines, as "type=... key=... status=..." without the
# time, id and what differs between the servers (classes, times).
sub normalise {
    my ($lines, $cfd) = @_;
    my @out;
    for (@$lines) {
        next unless / cfd=$cfd(?: |\n)/;
        my $l = $_;
        $l =~ s/^ts=\S+ gid=\d+ //;
        $l =~ s/ clsid=[1-9]\d*/ clsid=C/;
        $l =~ s/ rport=\d+/ rport=P/;
        $l =~ s/\n\z//;
        push @out, $l;
    }
    return \@out;
}

sub bin_request {
    my ($op, $key, $extras, $value) = @_;
    my $body = $extras . $key . $value;
    return pack('CCnCCnNNQ>', 0x80, $op, length $key, length $extras, 0, 0,
                length $body, 0, 0) . $body;
}

# Send many requests and an mn; true once every reply up to MN is read
# (raw reads: parsing 2000 replies one by one costs more than serving
# them).
sub bulk {
    my ($sock, $data) = @_;
    return 0 unless mc_send($sock, $data . "mn\r\n", 20);
    my $end = deadline(20);
    my $sel = IO::Select->new($sock);
    my $tail = '';
    while ((my $left = $end - time) > 0) {
        next unless $sel->can_read($left);
        my $got = sysread($sock, my $chunk, 1 << 20);
        return 0 unless $got;
        $tail = substr($tail . $chunk, -4);
        return 1 if $tail eq "MN\r\n";
    }
    return 0;
}

sub stat_of {
    my ($srv, $name) = @_;
    return mem_stats($srv->new_sock)->{$name};
}

for my $s (servers_with_stock('-t 1 -m 2')) {
    my ($n, $srv, $sock) = ($s->{name}, $s->{srv}, $s->{sock});

    # ---- replies ----
    reply_is(send_recv($srv->new_sock, "watch bogus\r\n"), "ERROR\r\n",
        "$n: an unknown stream is an error");
    reply_is(send_recv($srv->new_sock, "watch fetchers deletions\r\n"),
        "ERROR\r\n", "$n: 1.6.18 has no deletions stream");
    reply_is(send_sync($srv->new_sock, "watch fetchers noreply\r\n"), '',
        "$n: noreply hides the error of its own word; no watcher");
    reply_is(send_recv($srv->new_sock, "get a\r\nwatch\r\n", n => 2),
        "END\r\nOK\r\n", "$n: replies before watch come first");
    ok(watchers_gone($srv, $sock), "$n: a closed watcher is gone");
    my @many;
    for my $i (1 .. 20) {
        my ($w, $r) = watcher($srv, 'mutations');
        push @many, $w if $r eq "OK\r\n";
    }
    is(scalar @many, 20, "$n: 20 watchers at once");
    my ($extra, $r21) = watcher($srv, 'fetchers');
    reply_is($r21, "WATCHER_TOO_MANY log watcher limit reached\r\n",
        "$n: the 21st is refused");
    close $_ for @many;
    ok(watchers_gone($srv, $sock), "$n: closed watchers are gone");

    # ---- the default stream: fetchers ----
    {
        my ($w, $r) = watcher($srv, '');
        reply_is($r, "OK\r\n", "$n: watch with no stream answers OK");
        send_recv($sock, "set dflt 0 0 1\r\nx\r\n");
        send_recv($sock, "get dflt\r\n");
        my $lines = watch_until($w, 10,
            sub { has_line($_[0], qr/key=dflt status=found/) });
        ok(has_line($lines, qr/type=item_get key=dflt status=found/),
            "$n: the default stream has fetches");
        ok(!has_line($lines, qr/type=item_store/),
            "$n: and no stores");
        close $w;
        ok(watchers_gone($srv, $sock), "$n: closed, it is gone");
    }

    # ---- a client's requests, its connection ----
    my ($w, $ok) = watcher($srv, 'fetchers mutations evictions connevents');
    reply_is($ok, "OK\r\n", "$n: watch of four streams answers OK");
    my $c = $srv->new_sock;
    my $cport = $c->sockport;
    send_sync($c, "set foo 5 0 3\r\nbar\r\nget foo\r\nset t 0 100 1\r\nx\r\n"
        . "add foo 0 0 1\r\nx\r\ncas foo 0 0 1 99999\r\nx\r\n"
        . "delete foo\r\ndelete foo\r\nset a%b,c 0 0 1\r\nx\r\nincr t 1\r\n"
        . "touch t 10\r\nms mk 2\r\nhi\r\nmg mk v\r\nmd mk\r\n"
        . "ms AQJiaW4= 2 b\r\nhi\r\n");
    my $big = 'B' x (2 * 1024 * 1024);
    send_recv($c, "set big 0 0 " . length($big) . "\r\n$big\r\n");
    print $c "quit\r\n";
    ok(wait_closed($c, 10), "$n: the client quit");
    my $lines = watch_until($w, 10,
        sub { has_line($_[0], qr/type=conn_close .*rport=$cport /) });
    is_deeply([grep { $_ !~ $LINE_RE } @$lines], [],
        "$n: every line is ts=... gid=... type=... key=value...");
    my ($open) = grep { /type=conn_new .*rport=$cport / } @$lines;
    my ($cfd) = ($open // '') =~ / cfd=(\d+)/;
    like($open // '',
        qr/ rip=127\.0\.0\.1 rport=$cport transport=tcp cfd=\d+\n/,
        "$n: conn_new: the client's address, tcp, its fd");
    my @want = (
        "type=conn_new rip=127.0.0.1 rport=P transport=tcp cfd=$cfd",
        "type=item_get key=foo status=not_found clsid=0 cfd=$cfd size=0",
        "type=item_store key=foo status=stored cmd=set ttl=0 clsid=C cfd=$cfd size=3",
        "type=item_get key=foo status=found clsid=C cfd=$cfd size=3",
        "type=item_get key=t status=not_found clsid=0 cfd=$cfd size=0",
        "type=item_store key=t status=stored cmd=set ttl=100 clsid=C cfd=$cfd size=1",
        "type=item_get key=foo status=found clsid=C cfd=$cfd size=3",
        "type=item_store key=foo status=not_stored cmd=add ttl=0 clsid=C cfd=$cfd size=1",
        "type=item_get key=foo status=found clsid=C cfd=$cfd size=3",
        "type=item_store key=foo status=exists cmd=cas ttl=0 clsid=C cfd=$cfd size=1",
        "type=item_get key=foo status=found clsid=C cfd=$cfd size=3",
        "type=item_get key=foo status=not_found clsid=0 cfd=$cfd size=0",
        "type=item_get key=a%25b%2Cc status=not_found clsid=0 cfd=$cfd size=0",
        "type=item_store key=a%25b%2Cc status=stored cmd=set ttl=0 clsid=C cfd=$cfd size=1",
        "type=item_get key=t status=found clsid=C cfd=$cfd size=1",
        "type=item_get key=t status=found clsid=C cfd=$cfd size=1",
        "type=item_get key=mk status=not_found clsid=0 cfd=$cfd size=0",
        "type=item_store key=mk status=stored cmd=set ttl=0 clsid=C cfd=$cfd size=2",
        "type=item_get key=mk status=found clsid=C cfd=$cfd size=2",
        "type=item_get key=mk status=found clsid=C cfd=$cfd size=2",
        "type=item_get key=%01%02bin status=not_found clsid=0 cfd=$cfd size=0",
        "type=item_store key=%01%02bin status=stored cmd=set ttl=0 clsid=C cfd=$cfd size=2",
        "type=item_get key=big status=not_found clsid=0 cfd=$cfd size=0",
        "type=conn_close rip=127.0.0.1 rport=P transport=tcp reason=normal cfd=$cfd",
    );
    # checked below: memcached 1.6.18 shifts its fields (clsid=<fd>,
    # cfd=garbage)
    my $got = [grep { !/status=too_large/ }
               @{ normalise(lines_of($lines, $cport), $cfd // -1) }];
    # a clock tick between the set and its line shortens the ttl by one
    s/ ttl=99 / ttl=100 / for @$got;
    is_deeply($got, \@want, "$n: the client's lines, in order")
        or diag(join "\n", @$got);
    ok(has_line($lines,
            qr/type=item_store key=big status=too_large cmd=set ttl=0 /),
        "$n: a value too large: item_store status=too_large");

    # the binary protocol
    my $b = $srv->new_sock;
    my $bport = $b->sockport;
    mc_send($b, bin_request(0x01, 'bk', pack('NN', 0, 0), 'v'));
    read_bytes($b, 24);
    mc_send($b, bin_request(0x00, 'bk', '', ''));
    read_bytes($b, 24 + 4 + 1);
    close $b;
    $lines = watch_until($w, 10,
        sub { has_line($_[0], qr/type=conn_close .*rport=$bport /) });
    ($open) = grep { /type=conn_new .*rport=$bport / } @$lines;
    ($cfd) = ($open // '') =~ / cfd=(\d+)/;
    is_deeply(normalise(lines_of($lines, $bport), $cfd // -1), [
        "type=conn_new rip=127.0.0.1 rport=P transport=tcp cfd=$cfd",
        "type=item_get key=bk status=not_found clsid=0 cfd=$cfd size=0",
        "type=item_store key=bk status=stored cmd=set ttl=0 clsid=C cfd=$cfd size=1",
        "type=item_get key=bk status=found clsid=C cfd=$cfd size=1",
        "type=conn_close rip=127.0.0.1 rport=P transport=tcp reason=normal cfd=$cfd",
    ], "$n: binary set and get, and the close");

    # evictions: 2 MB of memory, 100 values of 50000 bytes
    my $value = 'e' x 50000;
    for my $k (1 .. 100) {
        mc_send($sock, "set ev$k 0 0 50000 noreply\r\n$value\r\n");
    }
    send_sync($sock, '');
    my $evicted = stat_of($srv, 'evictions');
    cmp_ok($evicted, '>', 0, "$n: values were evicted");
    $lines = watch_until($w, 10, sub {
        has_line($_[0], qr/type=eviction /) >= $evicted });
    my @ev = grep { /type=eviction / } @$lines;
    is(scalar @ev, $evicted, "$n: one eviction line per eviction");
    my $evre = ' type=eviction key=ev\d+ fetch=no ttl=-1 la=\d+ clsid=\d+ '
        . 'size=50000\n\z';
    like($ev[0] // '', qr/$evre/,
        "$n: eviction: key, fetch, ttl, la, clsid, size");
    close $w;

    # ---- a watcher that does not read ----
    my $slow = $srv->new_sock;
    reply_is(send_recv($slow, "watch fetchers\r\n"), "OK\r\n",
        "$n: a watcher that will not read");
    my $t0 = time;
    my $batch = join '', map { "get slow_watcher_key_$_\r\n" } 1 .. 2000;
    my $served = 0;
    for (1 .. 40) {
        $served += bulk($sock, $batch);
    }
    is($served, 40, "$n: 80000 gets served while the watcher does not read");
    my $st = mem_stats($srv->new_sock);
    cmp_ok($st->{log_worker_dropped} + $st->{log_watcher_skipped}, '>', 0,
        "$n: lines were lost, and counted");
    cmp_ok($st->{log_worker_written}, '>', 0, "$n: log_worker_written");
    cmp_ok($st->{log_watcher_sent}, '>', 0, "$n: log_watcher_sent");
    # the stream goes on: what was kept, then a marker
    my $mark = 0;
    $lines = watch_until($slow, 120, sub { $_[0][-1] =~ /key=marker/ },
        sub { mc_send($sock, "get marker" . $mark++ . "\r\n") });
    ok($lines->[-1] =~ /key=marker/, "$n: the watcher catches up");
    if ($st->{log_watcher_skipped} > 0) {
        ok(has_line($lines, qr/^skipped=\d+\n\z/),
            "$n: its stream says how many lines it lost");
    }
    close $slow;
    drain($sock, 0.5);
    ok(watchers_gone($srv, $sock), "$n: closing the watcher ends it");
    reply_is(send_recv($sock, "stats reset\r\n"), "RESET\r\n",
        "$n: stats reset");
    is(stat_of($srv, 'log_worker_written'), 0,
        "$n: stats reset clears the log counters");
    $srv->stop;
}

# ---- tiercached only ----
SKIP: {
    skip 'memcached 1.6.18 reads worker_logbuf_size as slab_chunk_max', 5
        if server_is_stock();
    # a ring of 1 MB loses no line of the worker: all of them reach the
    # watcher, more than the socket's buffers and 1 KB hold
    my $srv = new_memcached('-t 1 -m 2 -o '
        . 'watcher_logbuf_size=1,worker_logbuf_size=1024');
    my $sock = $srv->sock;
    my $set = send_recv($sock, "stats settings\r\n");
    like($set, qr/^STAT watcher_logbuf_size 1024\r$/m,
        'stats settings: watcher_logbuf_size in bytes');
    like($set, qr/^STAT worker_logbuf_size 1048576\r$/m,
        'stats settings: worker_logbuf_size in bytes');
    my ($w, $r) = watcher($srv, 'fetchers');
    reply_is($r, "OK\r\n", 'watcher_logbuf_size=1: a watcher');
    # 200000 lines, 25 MB: more than the socket's buffers hold while the
    # client does not read (a few MB)
    my $batch = join '', map { "get key_of_a_watched_request_$_\r\n" }
        1 .. 2000;
    bulk($sock, $batch) for 1 .. 100;
    cmp_ok(stat_of($srv, 'log_watcher_skipped'), '>', 0,
        'a 1 KB watcher buffer skips lines');
    my $mark = 0;
    my $lines = watch_until($w, 120, sub { $_[0][-1] =~ /key=marker/ },
        sub { mc_send($sock, "get marker" . $mark++ . "\r\n") });
    ok(has_line($lines, qr/^skipped=\d+\n\z/),
        'the watcher is told how many lines it lost');
    $srv->stop;
}

SKIP: {
    skip 'the tier stream is tiercached\'s', 8 if server_is_stock();
    # hmcached with synchronous promotion: 1500 values of 5000 bytes fill
    # D and a 4 MB N-zone, reading the last 40 six times promotes them
    # (a ring of 1 MB keeps every line of the stores' burst of evictions)
    my $srv = new_memcached('-t 1 -m 2 -I 64k -o nvm_size=4m,'
        . 'tier_policy=hmcached,tier_promote=sync,worker_logbuf_size=1024');
    my $sock = $srv->sock;
    my ($w, $r) = watcher($srv, 'tier');
    reply_is($r, "OK\r\n", 'watch tier answers OK');
    my ($we) = watcher($srv, 'evictions');
    my $value = 't' x 5000;
    for my $k (0 .. 1499) {
        mc_send($sock, "set key:$k 0 0 5000 noreply\r\n$value\r\n");
    }
    send_sync($sock, '');
    bulk($sock, join '', map { "get key:$_\r\n" } 1460 .. 1499) for 1 .. 6;
    # promotions that found no free D chunk wait for the tier thread:
    # until the counts stop moving
    my $t = $srv->tier_stats;
    my $moves = sub { join ' ', map { $_[0]{$_} // 0 }
                      qw(promotions demotions n_evictions) };
    wait_until(10, sub {
        my $now = $srv->tier_stats;
        my $still = $moves->($now) eq $moves->($t) && $now->{promotions};
        $t = $now;
        return $still;
    }, 0.3);
    cmp_ok($t->{promotions} // 0, '>', 0, 'N items were promoted');
    cmp_ok($t->{n_evictions} // 0, '>', 0, 'N items were evicted');
    my $count = sub { my ($l, $re) = @_; scalar grep { $_ =~ $re } @$l };
    my $lines = watch_until($w, 10, sub {
        $count->($_[0], qr/type=tier_promote /) >= $t->{promotions}
        && $count->($_[0], qr/type=tier_demote /) >= $t->{demotions}
        && $count->($_[0], qr/type=tier_evict /) >= $t->{n_evictions} });
    is(scalar(grep { /type=tier_promote / } @$lines), $t->{promotions},
        'a tier_promote line per promotion');
    is(scalar(grep { /type=tier_demote / } @$lines), $t->{demotions},
        'a tier_demote line per demotion');
    is(scalar(grep { /type=tier_evict zone=n / } @$lines), $t->{n_evictions},
        'a tier_evict zone=n line per N eviction');
    my $promre = ' type=tier_promote key=key%3A14[6-9]\d clsid=\d+ '
        . 'size=5000 counter=\d+\n\z';
    like((grep { /tier_promote/ } @$lines)[0] // '', qr/$promre/,
        'tier_promote: key, class, size, counter');
    my $ev = watch_until($we, 10,
        sub { @{ $_[0] } >= $t->{n_evictions} });
    is(scalar(grep { / type=eviction key=key%3A\d+ fetch=no ttl=-1 / } @$ev),
        $t->{n_evictions}, 'N evictions are evictions to memcached\'s stream');
    $srv->stop;
}

done_testing();
