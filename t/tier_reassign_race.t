#!/usr/bin/perl
# tier_reassign_race.t: a D page move never loses or corrupts an item that
# clients are reading or writing (doc/tiering.md "Reassignment": a page
# move demotes its items to the N-zone the way an MQ victim is demoted).
#
# Four client processes hammer sets and gets on keys of one slab class,
# the hammered class (200-byte values; each process owns every 16th key
# from its own offset, a quarter of the keys in all, spread over all the
# class's pages, and writes versions of them; every value spells its key
# and version) while pages of that class move:
#   part 1 - a fifth process loops `slabs reassign` between the hammered
#            class and another one (1000-byte values), so pages of the
#            hammered class are emptied again and again;
#   part 2 - tier_reassign=dp moves them by itself: the hammered class
#            holds the D-zone when the clients start, but three quarters
#            of its keys are never touched again, while the clients also
#            keep reading the other class, which holds one D page: the
#            optimum gives the other class pages of the hammered one.
# Checked: every value any client reads is well formed (the key and a
# version of it, padding intact); a writer reading its own key back gets
# exactly the version it was last acknowledged, or a miss; at the end every
# key holds its last acknowledged version, and the only keys missing are
# accounted for by counted evictions (none here: the N-zone has room for
# everything).  Run against the TSan build by scripts/test.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use MemcachedTest;

my $CLIENTS = 4;
my $KEYS = 12000;            # hammered class: 200-byte values
my $OTHER = 1500;            # the other class: 1000-byte values
my $SECONDS = $ENV{RACE_SECONDS} // 5;   # hammering, at least
my $LIMIT = 60;              # ... and at most, waiting for page moves
my $STOP;                    # a file whose existence stops the clients

sub stopped { return -e $STOP }

sub value_of {
    my ($key, $ver, $len) = @_;
    my $unit = "k=$key v=$ver ";
    return substr($unit x (1 + int($len / length $unit)), 0, $len);
}

# A value read back: its key and version if well formed, else ().
sub parse_value {
    my ($v, $len) = @_;
    return () unless length($v) == $len && $v =~ /^k=(\S+) v=(\d+) /;
    return () unless $v eq value_of($1, $2, $len);
    return ($1, $2);
}

sub store_keys {
    my ($s, $prefix, $n, $len) = @_;
    my $ok = 0;
    for (my $i = 1; $i <= $n; $i += 100) {
        my @keys = map { "$prefix$_" } $i .. ($i + 99 > $n ? $n : $i + 99);
        my $req = join '', map {
            "set $_ 0 0 $len\r\n" . value_of($_, 0, $len) . "\r\n"
        } @keys;
        my $r = send_recv($s, $req, n => scalar @keys, timeout => 30);
        $ok += () = $r =~ /^STORED\r\n/mg;
    }
    return $ok;
}

# A client: writes and reads its own keys (index % $CLIENTS == $me), reads
# others' keys and, lightly, the other class.  Prints "ack KEY VER" for its
# keys and "err ..." lines to $out.
sub client {
    my ($srv, $me, $out, $other_reads) = @_;
    my $s = $srv->new_sock;
    my @mine = grep { $_ % 16 == $me } 1 .. $KEYS;
    my @hammered = grep { $_ % 16 < $CLIENTS } 1 .. $KEYS;
    my %ack = map { ("h$_" => 0) } @mine;
    my ($errors, $ops, $misses) = (0, 0, 0);
    my $err = sub { $errors++; print $out "err $_[0]\n" if $errors <= 5 };
    while (!($ops % 20 == 0 && stopped())) {
        my $k = 'h' . $mine[int rand @mine];
        my $v = $ack{$k} + 1;
        my $r = send_recv($s, "set $k 0 0 200\r\n" . value_of($k, $v, 200)
            . "\r\n", timeout => 30);
        if ($r eq "STORED\r\n") {
            $ack{$k} = $v;
        } elsif ($r !~ /^SERVER_ERROR out of memory/) {
            $err->("set $k: " . escape_bytes($r, 80));
        }
        $r = send_recv($s, "get $k\r\n", timeout => 30);
        if ($r eq "END\r\n") {
            $misses++;
        } elsif ($r =~ /\AVALUE \Q$k\E 0 200\r\n(.{200})\r\nEND\r\n\z/s) {
            my ($gk, $gv) = parse_value($1, 200);
            $err->("own $k: want v=$ack{$k}, got " . escape_bytes($1, 60))
                unless defined $gk && $gk eq $k && $gv == $ack{$k};
        } else {
            $err->("get $k: " . escape_bytes($r, 80));
        }
        # a multi-get of others' keys: well formed, the right key
        my @others = map { 'h' . $hammered[int rand @hammered] } 1 .. 10;
        push @others, map { 'o' . (1 + int rand $OTHER) } 1 .. $other_reads;
        $r = send_recv($s, 'get ' . join(' ', @others) . "\r\n",
            timeout => 30);
        while ($r =~ /VALUE (\S+) 0 (\d+)\r\n/g) {
            my ($gk, $len) = ($1, $2);
            my $data = substr($r, pos($r), $len);
            my ($pk) = parse_value($data, $len);
            $err->("other $gk: " . escape_bytes($data, 60))
                unless defined $pk && $pk eq $gk;
        }
        $ops++;
    }
    print $out "ack $_ $ack{$_}\n" for sort keys %ack;
    print $out "done $ops $errors $misses\n";
}

# Runs the clients (and $mover, a code ref run in one more process, if
# given) for $SECONDS and then until $enough->() says enough pages moved
# (or $LIMIT seconds passed); returns (ops, errors, own-key misses, error
# lines, acks).
sub hammer {
    my ($srv, $mover, $other_reads, $enough) = @_;
    my (@pids, @fhs);
    $STOP = $srv->dir . '/stop-clients';
    unlink $STOP;
    for my $me (0 .. $CLIENTS - 1) {
        pipe(my $rd, my $wr) or die "pipe: $!";
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            close $rd;
            client($srv, $me, $wr, $other_reads);
            close $wr;
            POSIX::_exit(0);
        }
        close $wr;
        push @pids, $pid;
        push @fhs, $rd;
    }
    my $mover_pid;
    if ($mover) {
        $mover_pid = fork // die "fork: $!";
        if ($mover_pid == 0) {
            $mover->();
            POSIX::_exit(0);
        }
    }
    my $start = time;
    sleep 0.2 while time < $start + $SECONDS
        || (time < $start + $LIMIT && !$enough->());
    open my $flag, '>', $STOP or die "create $STOP: $!";
    close $flag;
    my ($ops, $errors, $misses, @lines, %ack) = (0, 0, 0);
    for my $fh (@fhs) {
        while (my $line = <$fh>) {
            chomp $line;
            if ($line =~ /^ack (\S+) (\d+)$/) {
                $ack{$1} = $2;
            } elsif ($line =~ /^done (\d+) (\d+) (\d+)$/) {
                $ops += $1;
                $errors += $2;
                $misses += $3;
            } else {
                push @lines, $line;
            }
        }
    }
    waitpid($_, 0) for @pids;
    waitpid($mover_pid, 0) if $mover_pid;
    return ($ops, $errors, $misses, \@lines, \%ack);
}

# Every key of the hammered class against its last acknowledged version
# (0, the first store, for the keys no client owns).
sub final_check {
    my ($srv, $ack) = @_;
    my $s = $srv->sock;
    $ack->{"h$_"} //= 0 for 1 .. $KEYS;
    my @keys = sort keys %$ack;
    my ($wrong, $missing) = (0, 0);
    while (my @chunk = splice(@keys, 0, 50)) {
        my $r = send_recv($s, 'get ' . join(' ', @chunk) . "\r\n",
            timeout => 30);
        my %got;
        while ($r =~ /VALUE (\S+) 0 200\r\n/g) {
            $got{$1} = substr($r, pos($r), 200);
        }
        for my $k (@chunk) {
            if (!exists $got{$k}) {
                $missing++;
            } elsif ($got{$k} ne value_of($k, $ack->{$k}, 200)) {
                $wrong++;
                diag("final $k: want v=$ack->{$k}, got "
                    . escape_bytes($got{$k}, 60)) if $wrong <= 5;
            }
        }
    }
    return ($wrong, $missing);
}

sub class_of {
    my ($srv, $len) = @_;
    my $slabs = $srv->stats('slabs');
    my ($best, $size);
    for my $k (keys %$slabs) {
        next unless $k =~ /^(\d+):chunk_size$/;
        next unless $slabs->{$k} >= $len;
        ($best, $size) = ($1, $slabs->{$k})
            if !defined $size || $slabs->{$k} < $size;
    }
    return $best;
}

sub report {
    my ($what, $srv, $ops, $errors, $misses, $lines, $ack) = @_;
    my $t = $srv->tier_stats;
    my $st = $srv->stats;
    cmp_ok($ops, '>', 100, "$what: clients ran ($ops rounds)");
    is($errors, 0, "$what: every value read was well formed and current")
        or diag(join "\n", @$lines);
    my ($wrong, $missing) = final_check($srv, $ack);
    is($wrong, 0, "$what: every key holds its last acknowledged version");
    my $evicted = ($t->{d_evictions} // 0) + ($t->{n_evictions} // 0)
        + ($t->{reassign_page_evictions} // 0);
    cmp_ok($missing + $misses, '<=', $evicted,
        "$what: keys missing ($missing at the end, $misses in flight) "
        . "<= counted evictions ($evicted)");
    cmp_ok($t->{reassign_page_demotions}, '>', 0,
        "$what: page moves demoted their items");
    is($t->{reassign_notes_rejected}, 0, "$what: no histogram note rejected");
    diag(sprintf '%s: %d rounds, slabs_moved %d, reassign_moves %d, '
        . 'periods %d, benefit %s -> %s, page demotions %d, '
        . 'page evictions %d', $what, $ops, $st->{slabs_moved},
        $t->{reassign_moves}, $t->{reassign_periods},
        $t->{reassign_benefit_current}, $t->{reassign_benefit_optimal},
        $t->{reassign_page_demotions}, $t->{reassign_page_evictions});
    return $st->{slabs_moved};
}

require POSIX;

# ---------------------------------------------------------- part 1
{
    my $srv = new_memcached('-m 4 -t 4 -o nvm_size=64m,tier_reassign=none');
    my $s = $srv->sock;
    is(store_keys($s, 'h', $KEYS, 200), $KEYS, 'part 1: hammered class');
    is(store_keys($s, 'o', $OTHER, 1000), $OTHER, 'part 1: other class');
    my $hot = class_of($srv, 200 + 60);
    my $cold = class_of($srv, 1000 + 60);
    ok($hot && $cold && $hot != $cold, "part 1: classes $hot and $cold");
    my $mover = sub {
        my $ms = $srv->new_sock;
        my ($src, $dst) = ($hot, $cold);
        while (!stopped()) {
            my $r = send_recv($ms, "slabs reassign $src $dst\r\n");
            ($src, $dst) = ($dst, $src) if $r =~ /^(?:OK|NOSPARE)/;
            sleep 0.02;
        }
    };
    my $enough = sub { $srv->stats->{slabs_moved} >= 10 };
    my $moved = report('part 1', $srv, hammer($srv, $mover, 1, $enough));
    cmp_ok($moved, '>=', 10, 'part 1: pages moved back and forth');
    $srv->stop;
}

# ---------------------------------------------------------- part 2
{
    my $srv = new_memcached('-m 4 -t 4 -o nvm_size=64m,tier_reassign=dp,'
        . 'tier_reassign_period=2000,tier_reassign_rate=8,'
        . 'tier_decay_period=50000');
    my $s = $srv->sock;
    is(store_keys($s, 'h', $KEYS, 200), $KEYS, 'part 2: hammered class');
    is(store_keys($s, 'o', $OTHER, 1000), $OTHER, 'part 2: other class');
    my $enough = sub { $srv->tier_stats->{reassign_moves} >= 1 };
    report('part 2', $srv, hammer($srv, undef, 5, $enough));
    my $t = $srv->tier_stats;
    cmp_ok($t->{reassign_moves}, '>', 0, 'part 2: the reassigner moved pages');
    $srv->stop;
}

done_testing();
