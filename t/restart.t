#!/usr/bin/perl
# restart.t: warm restarts from an nvm_path= N-zone (doc/restart.md).
#   - a graceful stop (SIGUSR1, `shutdown graceful`) with items in both
#     zones, then a restart: every item with its value, flags, cas and
#     remaining TTL; expired and deleted ones gone; D items written to N;
#   - SIGTERM: the N items come back, and D items only through their N
#     copies (hotter);
#   - kill -9 in the middle of pipelined writes, repeated: no wrong value,
#     no deleted key back, no version older than the acknowledged one;
#   - a changed -f/-I/-n/nvm_size or a foreign file: a cold
#     start that says why, or a refusal with nvm_restart=require;
#     nvm_restart=no starts cold;
#   - the zone's file truncated under the server: a clear message and
#     exit status 74.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use POSIX qw(WIFEXITED WEXITSTATUS);
use Test::More;
use MemcachedTest;

srand($ENV{RESTART_SEED} // 11);

# Start a server on $file; extra options appended to -o.
sub server_on {
    my ($file, $more, $args) = @_;
    my $o = "nvm_size=16m,nvm_path=$file,no_lru_crawler";
    $o .= ",$more" if $more;
    return new_memcached(($args // '-m 2 -I 64k -t 2') . " -o $o");
}

# Send a signal and wait for the exit; returns the exit code or undef.
sub signal_stop {
    my ($srv, $sig) = @_;
    kill $sig, $srv->pid;
    return undef unless $srv->wait_exit(20);
    my $st = $srv->exit_status;
    return WIFEXITED($st) ? WEXITSTATUS($st) : undef;
}

# key => [flags, value, cas] of every key in @keys that the server has
sub snapshot {
    my ($srv, @keys) = @_;
    my $s = $srv->sock;
    my %have;
    while (my @batch = splice @keys, 0, 100) {
        my $r = send_recv($s, "gets @batch\r\n");
        while ($r =~ /\GVALUE (\S+) (\d+) (\d+) (\d+)\r\n/gc) {
            my ($k, $f, $len, $cas) = ($1, $2, $3, $4);
            my $v = substr $r, pos($r), $len;
            pos($r) = pos($r) + $len + 2;
            $have{$k} = [$f, $v, $cas];
        }
    }
    return \%have;
}

sub ttl_of {
    my ($srv, $key) = @_;
    my $r = send_recv($srv->sock, "mg $key t\r\n");
    return $r =~ /^HD t(-?\d+)/ ? $1 : undef;
}

# ---- a graceful stop keeps both zones ----
for my $how ('SIGUSR1', 'shutdown graceful') {
    my $file = shm_file();
    my $srv = server_on($file, '', '-m 2 -I 64k -t 2 -A');
    my $s = $srv->sock;
    my (%want, $stored);
    for my $i (1 .. 2000) {
        my $v = random_bytes(1500 + ($i * 37) % 1000, 'abcdefgh');
        my $ttl = $i % 10 == 0 ? 5000 : 0;
        $stored += send_recv($s, "set k$i $i $ttl " . length($v)
                             . "\r\n$v\r\n") eq "STORED\r\n";
        $want{"k$i"} = $v;
    }
    is($stored, 2000, "$how: 2000 items stored");
    for my $i (1 .. 20) {
        send_recv($s, "delete k$i\r\n");
        delete $want{"k$i"};
    }
    my $short = 'short-lived';
    send_recv($s, "set $short 0 100 1\r\nx\r\n");
    my $t = $srv->tier_stats;
    cmp_ok($t->{d_items}, '>', 0, "$how: items in D before the stop");
    cmp_ok($t->{n_items}, '>', 0, "$how: items in N before the stop");
    my $before = snapshot($srv, keys %want);
    my $ttl_before = ttl_of($srv, 'k30');
    my $debug = $srv->has_debugtime;
    $srv->debugtime(200) if $debug;    # $short expires, k30 has 4800 left
    my $code;
    if ($how eq 'SIGUSR1') {
        $code = signal_stop($srv, 'USR1');
    } else {
        print $s "shutdown graceful\r\n";
        $code = $srv->wait_exit(20) && WIFEXITED($srv->exit_status)
            ? WEXITSTATUS($srv->exit_status) : undef;
    }
    is($code, 0, "$how: exit status 0");
    like($srv->log_text, qr/graceful stop: \d+ D-zone items written/,
         "$how: the log says what was saved");

    my $again = server_on($file);
    like($again->log_text, qr/stopped in order/, "$how: the restart is warm");
    my $after = snapshot($again, keys %want, map { "k$_" } 1 .. 20);
    is(scalar(keys %$after), scalar(keys %want),
       "$how: every stored key is back, no deleted one");
    my $bad = grep {
        !$after->{$_} || $after->{$_}[1] ne $want{$_}
            || $after->{$_}[0] ne $before->{$_}[0]
            || $after->{$_}[2] ne $before->{$_}[2]
    } keys %want;
    is($bad, 0, "$how: values, flags and cas unchanged");
    my $t2 = $again->tier_stats;
    is($t2->{restart_kind}, 'warm', "$how: stats tier restart_kind warm");
    is($t2->{restart_items_recovered}, scalar(keys %want)
       + ($debug ? 0 : 1), "$how: restart_items_recovered");
    is($again->stats->{curr_items}, scalar(keys %want) + ($debug ? 0 : 1),
       "$how: curr_items");
  SKIP: {
        skip 'needs the debug build (debugtime)', 2 unless $debug;
        is(send_recv($again->sock, "get $short\r\n"), "END\r\n",
           "$how: the item that expired while stopped is gone");
        my $ttl = ttl_of($again, 'k30');
        ok(defined $ttl && $ttl <= $ttl_before - 200 && $ttl > 4700,
           "$how: TTL keeps running across the restart ("
           . ($ttl // 'none') . " s left)");
    }
    my $cas_new = send_recv($again->sock, "set fresh 0 0 1\r\nz\r\n"
                            . "gets fresh\r\n", n => 2);
    my ($cas) = $cas_new =~ /VALUE fresh 0 1 (\d+)/;
    my $max = 0;
    $max < $_->[2] and $max = $_->[2] for values %$before;
    cmp_ok($cas // 0, '>', $max, "$how: new cas ids continue above the old");
    $again->stop;
}

# ---- SIGTERM: N items are kept, D items are not, but for N copies ----
# Under hmcached no D item has a copy in N; under hotter new keys stored
# while D had room, and promoted items, keep one, which comes back as the
# item.
for my $policy ('hmcached', 'hotter') {
    my $file = shm_file();
    my $srv = server_on($file, "tier_policy=$policy");
    my $s = $srv->sock;
    for my $i (1 .. 400) {
        my $v = "v$i" x 200;
        send_recv($s, "set t$i 0 0 " . length($v) . "\r\n$v\r\n");
    }
    my $t = $srv->tier_stats;
    cmp_ok($t->{d_items}, '>', 0, "SIGTERM, $policy: items in D");
    if ($policy eq 'hotter') {
        cmp_ok($t->{n_copies}, '>', 0,
            "SIGTERM, $policy: $t->{n_copies} of them with an N copy");
    }
    is(signal_stop($srv, 'TERM'), 0, "SIGTERM, $policy: exit status 0");
    unlike($srv->log_text, qr/graceful stop/,
        "SIGTERM, $policy: saves no D item");
    my $again = server_on($file, "tier_policy=$policy");
    my $have = snapshot($again, map { "t$_" } 1 .. 400);
    is(scalar(keys %$have), $t->{n_items} + $t->{n_copies},
       "SIGTERM, $policy: the N items and the N copies come back, "
       . "no other D item");
    my $bad = grep { $have->{$_}[1] ne ((my $n = $_) =~ s/^t/v/r) x 200 }
        keys %$have;
    is($bad, 0, "SIGTERM, $policy: their values are right");
    $again->stop;
}

# ---- flush_all and touch are kept too ----
{
    my $file = shm_file();
    my $srv = server_on($file, 'tier_policy=nvm');
    my $s = $srv->sock;
    send_sync($s, join '', map { "set old$_ 0 0 3\r\nold\r\n" } 1 .. 50);
    reply_is(send_recv($s, "flush_all\r\n"), "OK\r\n", 'flush_all');
    sleep 1.1;    # items stored in the flush's second are kept by cas
    send_sync($s, "set new 0 0 3\r\nnew\r\nset short 0 0 1\r\ns\r\n");
    reply_is(send_recv($s, "touch short 9000\r\n"), "TOUCHED\r\n",
             'touch short 9000');
    is(signal_stop($srv, 'KILL') // 'killed', 'killed', 'kill -9');
    my $again = server_on($file, 'tier_policy=nvm');
    is(send_recv($again->sock, "get old1 old50\r\n"), "END\r\n",
       'items flushed before the crash stay gone');
    mem_get_is($again->sock, 'new', 'new', 'the item stored after it is back');
    my $ttl = ttl_of($again, 'short');
    ok(defined $ttl && $ttl > 8000, 'the touched TTL was kept ('
       . ($ttl // 'none') . ')');
    is($again->tier_stats->{restart_items_flushed}, 50,
       'restart_items_flushed 50');
    $again->stop;
}

# ---- kill -9 in the middle of writes ----
{
    my $file = shm_file();
    my (%acked, %inflight, %deleted, %last_batch);
    my ($acked_n, $recovered_n) = (0, 0);
    my ($wrong, $older, $resurrected) = (0, 0, 0);
    my $seq = 0;
    for my $round (1 .. 5) {
        my $srv = server_on($file, 'tier_policy=nvm');
        my $s = $srv->sock;
        # what the last round left: everything must be as acknowledged
        my $have = snapshot($srv, keys %acked, keys %deleted);
        for my $k (keys %acked) {
            my $h = $have->{$k};
            my @ok = ($acked{$k}, @{ $inflight{$k} // [] });
            $acked_n++ unless $last_batch{$k};
            if (!defined $h) {
                next;
            }
            $recovered_n++ unless $last_batch{$k};
            if (!grep { $_ eq $h->[1] } @ok) {
                if ($h->[1] =~ /^(\d+):/ && $acked{$k} =~ /^(\d+):/
                        && $1 < (split /:/, $acked{$k})[0]) {
                    $older++;
                } else {
                    $wrong++;
                }
            }
        }
        for my $k (keys %deleted) {
            $resurrected++ if $have->{$k}
                && !grep { $_ eq $have->{$k}[1] } @{ $inflight{$k} // [] };
        }
        # adopt what the server has as the new truth
        %acked = map { $_ => $have->{$_}[1] } keys %$have;
        %deleted = map { $_ => 1 } grep { !$have->{$_} } keys %deleted;
        %inflight = ();
        %last_batch = ();
        my $batches = 5 + int rand 20;
        for my $b (1 .. $batches) {
            my (@cmds, @what);
            for (1 .. 40) {
                my $k = 'w' . int rand 300;
                $seq++;
                if (rand() < 0.15) {
                    push @cmds, "delete $k\r\n";
                    push @what, [$k, undef];
                } else {
                    my $v = "$seq:" . ('x' x (20 + int rand 600));
                    push @cmds, "set $k 0 0 " . length($v) . "\r\n$v\r\n";
                    push @what, [$k, $v];
                }
            }
            my $last = $b == $batches;
            if ($last) {
                # the final batch: the kill lands while it is processed
                for my $w (@what) {
                    push @{ $inflight{$w->[0]} }, $w->[1] if defined $w->[1];
                    $last_batch{$w->[0]} = 1;
                }
                mc_send($s, join '', @cmds);
                kill 'KILL', $srv->pid;
                last;
            }
            my $r = send_recv($s, join('', @cmds), n => scalar @cmds);
            my @replies = split /\r\n/, $r;
            for my $i (0 .. $#what) {
                my ($k, $v) = @{ $what[$i] };
                my $rep = $replies[$i] // '';
                if (defined $v && $rep eq 'STORED') {
                    $acked{$k} = $v;
                    delete $deleted{$k};
                } elsif (!defined $v && ($rep eq 'DELETED'
                                         || $rep eq 'NOT_FOUND')) {
                    delete $acked{$k};
                    $deleted{$k} = 1;
                }
            }
        }
        $srv->stop;
    }
    is($wrong, 0, 'kill -9: no wrong value after a restart');
    is($older, 0, 'kill -9: no version older than the acknowledged one');
    is($resurrected, 0, 'kill -9: no deleted key comes back');
    diag(sprintf 'kill -9: %d of %d acknowledged N items that the killed '
         . 'batch did not touch recovered (%.3f)',
         $recovered_n, $acked_n, $acked_n ? $recovered_n / $acked_n : 0);
}

# ---- incompatible layouts, foreign files, nvm_restart= ----
{
    my $file = shm_file();
    my $srv = server_on($file);
    send_recv($srv->sock, "set keep 0 0 4\r\nkept\r\n");
    is(signal_stop($srv, 'USR1'), 0, 'a zone to restart from');
    for my $case (['-f 1.5', qr/-f changed \(was 1\.25, now 1\.50\)/],
                  ['-I 32k', qr/-I changed/],
                  ['-n 64', qr/-n changed \(was 48, now 64\)/]) {
        my ($opt, $re) = @$case;
        my $args = $opt =~ /^-I/ ? "-m 2 -t 2 $opt" : "-m 2 -I 64k -t 2 $opt";
        my $o = "nvm_size=16m,nvm_path=$file,nvm_restart=require";
        my $r = eval { new_memcached("$args -o $o"); 1 } ? '' : $@;
        like($r, qr/nvm_restart=require: cannot restart warm.*$re/s,
             "$opt with nvm_restart=require: refused, saying why");
    }
    my $again = server_on($file, '', '-m 2 -I 64k -t 2 -f 1.5');
    like($again->log_text, qr/-f changed .*starting with a clean N-zone/,
         '-f changed: a cold start that says why');
    is(send_recv($again->sock, "get keep\r\n"), "END\r\n",
       '-f changed: the cold zone is empty');
    is($again->tier_stats->{restart_kind}, 'cold', 'restart_kind cold');
    $again->stop;

    my $no = server_on($file, 'nvm_restart=no');
    like($no->log_text, qr/nvm_restart=no; starting with a clean N-zone/,
         'nvm_restart=no: a cold start that says so');
    $no->stop;

    my $size = eval { new_memcached("-m 2 -I 64k -t 2 -o nvm_size=32m,"
        . "nvm_path=$file,nvm_restart=require"); 1 } ? '' : $@;
    like($size, qr/nvm_size changed/, 'a changed nvm_size is named');

    my $foreign = shm_file();
    open my $fh, '>', $foreign or die $!;
    print $fh random_bytes(2 * 1024 * 1024);
    close $fh;
    my $f = server_on($foreign);
    like($f->log_text, qr/not a tiercached N-zone.*starting with a clean/,
         'a file from another program: a cold start that says why');
    reply_is(send_recv($f->sock, "set a 0 0 1\r\nb\r\n"), "STORED\r\n",
             'and the server serves');
    $f->stop;
}

# ---- the zone's file truncated under the server ----
{
    my $file = shm_file();
    my $srv = server_on($file, 'tier_policy=nvm');
    my $s = $srv->sock;
    send_recv($s, "set gone 0 0 5\r\nvalue\r\n");
    truncate $file, 0 or die "truncate: $!";
    print $s "get gone\r\n";
    ok($srv->wait_exit(20), 'truncated N-zone: the server exits');
    my $st = $srv->exit_status // 0;
    ok(WIFEXITED($st) && WEXITSTATUS($st) == 74,
       'exit status 74 (EX_IOERR), not a signal');
    like($srv->log_text, qr/N-zone fault: .*SIGBUS/,
         'the log says what happened');
}

done_testing();
