#!/usr/bin/perl
# restart_corrupt.t: N items carry a checksum in their seal, and the zone's
# run state is kept twice with a checksum each (doc/restart.md "Items and
# their seal", "The N-zone on disk").  The zone's file is changed behind
# the server's back, as a failing medium would:
#   - after a graceful stop: value bytes, client-flag bytes and nbytes one
#     to three off (shorter and longer) in 40 of 100 items; the restart
#     serves none of them (each is a miss), every other item exactly, in
#     one pipelined reply that stays in sync, and restart_items_corrupt
#     counts the 40;
#   - one copy of the run state lost: the restart is still warm, and an
#     acknowledged flush_all stays in force; both lost: a cold start that
#     says why;
#   - a zone of layout version 1: a cold start that says so;
#   - items a cold format left in the pages (two layouts back): stale,
#     not corrupt, and never served;
#   - while the server runs: with nvm_verify=read a changed item is a miss
#     and n_items_corrupt counts it; with the default the same change is
#     served (the file's writes reach the server's shared mapping).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use POSIX qw(WIFEXITED WEXITSTATUS);
use Test::More;
use MemcachedTest;

srand($ENV{RESTART_SEED} // 21);

# nitem.h's nitem_hdr, host order (x86: little-endian): offsets of the
# fields changed below
my $HDR = 40;
my $OFF_NBYTES = 16;
my $OFF_NKEY = 20;
my $OFF_CLIENT_FLAGS = 32;
my $OFF_SEAL = 36;
# nzone.c: the two copies of the run state, one line each
my @RUN_COPY = (1024, 1088);

sub server_on {
    my ($file, $more) = @_;
    my $o = "nvm_size=16m,nvm_path=$file,tier_policy=nvm,no_lru_crawler";
    $o .= ",$more" if $more;
    return new_memcached("-m 2 -t 2 -o $o");
}

sub graceful_stop {
    my ($srv, $what) = @_;
    ok($srv->stop_graceful, "$what: graceful stop");
}

# Write $bytes at $off of $file in place (the server may have it mapped).
sub poke {
    my ($file, $off, $bytes) = @_;
    open my $fh, '+<:raw', $file or die "$file: $!";
    sysseek($fh, $off, 0) or die "seek: $!";
    syswrite($fh, $bytes) == length($bytes) or die "write: $!";
    close $fh;
}

# The offset of the sealed N item of $key with a value of $len bytes in
# the zone's bytes $data (found by its key and NUL), or undef.
sub find_item {
    my ($data, $key, $len) = @_;
    my $at = index $data, "$key\0";
    return undef if $at < $HDR || index($data, "$key\0", $at + 1) >= 0;
    my $off = $at - $HDR;
    my ($nbytes) = unpack 'L<', substr($data, $off + $OFF_NBYTES, 4);
    my $nkey = ord substr($data, $off + $OFF_NKEY, 1);
    my ($seal) = unpack 'L<', substr($data, $off + $OFF_SEAL, 4);
    return undef unless $nkey == length($key) && $nbytes == $len + 2
        && $seal != 0;
    return $off;
}

sub value_for {
    my ($key) = @_;
    return "value-of-$key-"
        . random_bytes(10 + int rand 300, join '', 'a' .. 'z');
}

# The exact reply to `get @keys` when %$have holds [flags, value].
sub expected_reply {
    my ($have, @keys) = @_;
    my $r = '';
    for my $k (@keys) {
        my $h = $have->{$k} or next;
        $r .= "VALUE $k $h->[0] " . length($h->[1]) . "\r\n$h->[1]\r\n";
    }
    return $r . "END\r\n";
}

# ---- corrupt items after a graceful stop ----
{
    my $file = shm_file();
    my $srv = server_on($file);
    my $s = $srv->sock;
    my (%want, @keys);
    my $stored = 0;
    for my $i (1 .. 100) {
        my $k = sprintf 'ck%05d', $i;
        my $v = value_for($k);
        my $flags = 0x01010101 * (1 + $i % 200);
        $stored += send_recv($s, "set $k $flags 0 " . length($v)
                             . "\r\n$v\r\n") eq "STORED\r\n";
        $want{$k} = [$flags, $v];
        push @keys, $k;
    }
    is($stored, 100, '100 items stored');
    is($srv->tier_stats->{n_items}, 100, 'all of them N items');
    graceful_stop($srv, 'items');

    my $data = read_file($file);
    my @found = grep { defined find_item($data, $_, length $want{$_}[1]) }
        @keys;
    is(scalar @found, 100, 'each item found in the file by its key');
    # 40 items changed, 8 of each kind
    my @kinds = (
        ['a value byte flipped', sub {
            my ($off, $len) = @_;
            my $at = $off + $HDR + 8 + int rand $len;
            return ($at, chr(ord(substr $data, $at, 1) ^ (1 << int rand 8)));
        }],
        ['a client-flag byte changed', sub {
            my ($off) = @_;
            my $at = $off + $OFF_CLIENT_FLAGS + int rand 4;
            return ($at, chr(ord(substr $data, $at, 1) ^ 0x10));
        }],
        ['nbytes 1 to 3 shorter', sub {
            my ($off, $len) = @_;
            return ($off + $OFF_NBYTES,
                    pack 'L<', $len + 2 - (1 + int rand 3));
        }],
        ['nbytes 1 to 3 longer', sub {
            my ($off, $len) = @_;
            return ($off + $OFF_NBYTES,
                    pack 'L<', $len + 2 + (1 + int rand 3));
        }],
        ['the value end (\r\n) changed', sub {
            my ($off, $len) = @_;
            return ($off + $HDR + 8 + $len, "\n\r");
        }],
    );
    my %corrupt;
    my @order = @keys;
    for my $kind (@kinds) {
        for (1 .. 8) {
            my $k = splice @order, int rand @order, 1;
            my $off = find_item($data, $k, length $want{$k}[1]);
            my ($at, $bytes) = $kind->[1]->($off, length $want{$k}[1]);
            poke($file, $at, $bytes);
            $corrupt{$k} = $kind->[0];
        }
    }
    my %intact = map { $_ => $want{$_} } grep { !$corrupt{$_} } @keys;

    my $again = server_on($file);
    like($again->log_text, qr/stopped in order/, 'the restart is warm');
    my $t = $again->tier_stats;
    is($t->{restart_items_corrupt}, 40, 'restart_items_corrupt 40');
    is($t->{restart_items_recovered}, 60, 'restart_items_recovered 60');
    is($t->{restart_items_stale}, 0, 'restart_items_stale 0');
    my $as = $again->sock;
    for my $kind (map { $_->[0] } @kinds) {
        my @ks = grep { $corrupt{$_} eq $kind } sort keys %corrupt;
        is(send_recv($as, "get @ks\r\n"), "END\r\n",
           "$kind: each of 8 items is a miss");
    }
    my $reply = send_recv($as, "get @keys\r\n");
    ok($reply eq expected_reply(\%intact, @keys),
       'one get of all 100 keys: the 60 intact items exactly, the 40 '
       . 'changed ones missing, nothing else');
    like(send_recv($as, "version\r\n"), qr/^VERSION \S+\r\n\z/,
         'the connection is in sync after it');
    is($again->stats->{curr_items}, 60, 'curr_items 60');
    $again->stop;
}

# ---- the run state: one copy lost, both lost ----
{
    my $file = shm_file();
    my $srv = server_on($file);
    my $s = $srv->sock;
    send_sync($s, join '', map { "set old$_ 0 0 3\r\nold\r\n" } 1 .. 20);
    reply_is(send_recv($s, "flush_all\r\n"), "OK\r\n", 'flush_all');
    # kept after the flush by its cas, in the flush's second or later
    reply_is(send_recv($s, "set new 0 0 3\r\nnew\r\n"), "STORED\r\n",
             'a set after the flush');
    kill 'KILL', $srv->pid;
    $srv->wait_exit(20);
    for my $copy (0, 1) {
        my $f2 = shm_file();
        poke($f2, 0, read_file($file));
        poke($f2, $RUN_COPY[$copy] + 8, 'XXXXXXXX');
        my $again = server_on($f2);
        like($again->log_text, qr/not stopped in order/,
             "run state copy $copy lost: a crash recovery, warm");
        my $as = $again->sock;
        is(send_recv($as, "get old1 old20\r\n"), "END\r\n",
           "run state copy $copy lost: the flushed items stay gone");
        mem_get_is($as, 'new', 'new',
                   "run state copy $copy lost: the later item is back");
        is($again->tier_stats->{restart_items_flushed}, 20,
           "run state copy $copy lost: restart_items_flushed 20");
        $again->stop;
    }
    poke($file, $RUN_COPY[0] + 8, 'XXXXXXXX');
    poke($file, $RUN_COPY[1] + 8, 'XXXXXXXX');
    my $cold = server_on($file);
    like($cold->log_text, qr/its run state is corrupt \(checksum\); (?x)
                              starting\ with\ a\ clean\ N-zone/,
         'both copies lost: a cold start that says why');
    is(send_recv($cold->sock, "get new old1\r\n"), "END\r\n",
       'both copies lost: nothing is served');
    is($cold->tier_stats->{restart_kind}, 'cold', 'restart_kind cold');
    $cold->stop;
}

# ---- a zone of layout version 1 ----
{
    my $file = shm_file();
    my $srv = server_on($file);
    send_recv($srv->sock, "set v1 0 0 2\r\nv1\r\n");
    graceful_stop($srv, 'version 1');
    poke($file, 8, pack 'L<', 1);
    my $again = server_on($file);
    like($again->log_text, qr/its layout version is 1; this build reads 2; (?x)
                               starting\ with\ a\ clean\ N-zone/,
         'a version 1 zone: a cold start that says why');
    is(send_recv($again->sock, "get v1\r\n"), "END\r\n",
       'a version 1 zone: its item is not served');
    $again->stop;
}

# ---- what cold formats leave in the pages is stale, not corrupt ----
{
    my $file = shm_file();
    my $srv = server_on($file);
    my $s = $srv->sock;
    send_sync($s, join '', map { "set layoutA$_ 0 0 20\r\n"
                                 . ('A' x 20) . "\r\n" } 1 .. 50);
    graceful_stop($srv, 'layout A');
    # two cold formats: B stores nothing, C stores 10 items of A's size
    my $b = server_on($file, 'nvm_restart=no');
    graceful_stop($b, 'layout B');
    my $c = server_on($file, 'nvm_restart=no');
    send_sync($c->sock, join '', map { "set layoutC$_ 0 0 20\r\n"
                                       . ('C' x 20) . "\r\n" } 1 .. 10);
    graceful_stop($c, 'layout C');
    my $again = server_on($file);
    my $t = $again->tier_stats;
    is($t->{restart_items_recovered}, 10, 'layout C: its 10 items back');
    is($t->{restart_items_corrupt}, 0,
       "layout A's remnants: none counted corrupt");
    ok($t->{restart_items_stale} >= 40 && $t->{restart_items_stale} <= 50,
       "layout A's remnants: counted stale ($t->{restart_items_stale})");
    is(send_recv($again->sock, "get layoutA1 layoutA25 layoutA50\r\n"),
       "END\r\n", "layout A's items are not served");
    $again->stop;
}

# ---- changes while the server runs ----
for my $verify ('read', 'recovery') {
    my $file = shm_file();
    my $srv = server_on($file, "nvm_verify=$verify");
    my $s = $srv->sock;
    is($srv->stats('settings')->{nvm_verify}, $verify,
       "stats settings nvm_verify $verify");
    my %want;
    for my $i (1 .. 8) {
        my $k = "live$i";
        $want{$k} = value_for($k);
        send_recv($s, "set $k 7 0 " . length($want{$k}) . "\r\n$want{$k}\r\n");
    }
    my $data = read_file($file);
    my %off = map { $_ => find_item($data, $_, length $want{$_}) } keys %want;
    is(scalar(grep { defined } values %off), 8,
       "nvm_verify=$verify: each item found in the mapped file");
    # live1: a value byte; live2: a flag byte; live3: nbytes shorter;
    # live4: a value byte, then looked up without its value (mg ... f)
    my $flip = sub {
        my ($k, $at) = @_;
        poke($file, $at, chr(ord(substr $data, $at, 1) ^ 0x20));
    };
    $flip->('live1', $off{live1} + $HDR + 6 + 5);
    $flip->('live2', $off{live2} + $OFF_CLIENT_FLAGS);
    poke($file, $off{live3} + $OFF_NBYTES,
         pack 'L<', length($want{live3}) + 2 - 2);
    $flip->('live4', $off{live4} + $HDR + 6 + 9);
    if ($verify eq 'read') {
        is(send_recv($s, "get live1\r\n"), "END\r\n",
           'nvm_verify=read: a changed value byte: a miss');
        is(send_recv($s, "get live2\r\n"), "END\r\n",
           'nvm_verify=read: a changed flag byte: a miss');
        is(send_recv($s, "get live3\r\n"), "END\r\n",
           'nvm_verify=read: a shorter nbytes: a miss');
        is(send_recv($s, "mg live4 f\r\n"), "EN\r\n",
           'nvm_verify=read: a lookup without the value checks it too');
        my %rest = map { $_ => [7, $want{$_}] } map { "live$_" } 5 .. 8;
        is(send_recv($s, "get live1 live5 live6 live7 live8\r\n"),
           expected_reply(\%rest, map { "live$_" } 1, 5 .. 8),
           'nvm_verify=read: the intact items exactly, the dropped one '
           . 'still a miss');
        my $t = $srv->tier_stats;
        is($t->{n_items_corrupt}, 4, 'nvm_verify=read: n_items_corrupt 4');
        is($t->{n_items}, 4, 'nvm_verify=read: the 4 corrupt items dropped');
    } else {
        my $v = $want{live1};
        substr($v, 5, 1) = chr(ord(substr $v, 5, 1) ^ 0x20);
        is(send_recv($s, "get live1\r\n"),
           "VALUE live1 7 " . length($v) . "\r\n$v\r\nEND\r\n",
           'nvm_verify=recovery: the changed value is served as it is '
           . 'now (the write reached the mapping)');
        is($srv->tier_stats->{n_items_corrupt}, 0,
           'nvm_verify=recovery: n_items_corrupt 0');
    }
    $srv->stop;
}

done_testing();
