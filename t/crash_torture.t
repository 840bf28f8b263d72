#!/usr/bin/perl
# crash_torture.t: acknowledged means kept across kill -9 (doc/restart.md
# "What survives").
#
# Several client processes, each owning its own keys, run streams of set,
# append, incr, delete and touch against a server on an nvm_path= N-zone
# and record every reply; one of them sends kill -9 to the server after a
# random number of its own requests, so the kill lands in the middle of
# everybody's work.  The server is restarted on the same zone and every
# key is read back (value and TTL, `mg KEY v t`), then the next cycle
# starts from what the server holds.  A key's value after the restart must
# be its last acknowledged state or the state its unacknowledged request
# would have made; then:
#   - tier_policy=nvm (every item in the N-zone): an acknowledged key is
#     never missing, no value is older than the acknowledged one, no
#     deleted key comes back, no value was never stored;
#   - the default policy, whose D items do not survive a crash unless they
#     hold an N copy: keys may be missing, but nothing else;
#   - -e (the memory file, DRAM only), and -e beside an N-zone under the
#     default policy: the D items are sealed in the file, so an
#     acknowledged key is never missing either (doc/restart.md "Crash
#     recovery of the memory file").
# TORTURE_CYCLES (default 4 per configuration) sets the number of kills,
# TORTURE_CONFIGS which configurations run (all four by default: nvm
# default memfile memfile+nzone); scripts/crash-torture runs many and
# prints the figures.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use POSIX ();
use Test::More;
use MemcachedTest;

my $CYCLES = $ENV{TORTURE_CYCLES} // 4;
my $CLIENTS = $ENV{TORTURE_CLIENTS} // 6;
my $KEYS_PER_CLIENT = 40;
my $LONG_TTL = 100000;
srand($ENV{TORTURE_SEED} // 21);

# The configurations: how each starts its server on the files of
# $files ({zone, memfile}).
my %CONFIGS = (
    # the paper's write latency widens the window a kill can land in
    nvm => sub {
        "-m 4 -t 2 -o nvm_size=256m,nvm_path=$_[0]{zone},no_lru_crawler,"
            . 'nvm_emulate=224:924,tier_policy=nvm';
    },
    default => sub {
        "-m 4 -t 2 -o nvm_size=256m,nvm_path=$_[0]{zone},no_lru_crawler,"
            . 'nvm_emulate=224:924';
    },
    # room for every key in D: no eviction takes an acknowledged one
    memfile => sub { "-m 64 -t 2 -e $_[0]{memfile} -o no_lru_crawler" },
    # D holds a part of them; the rest is demoted to the N-zone
    'memfile+nzone' => sub {
        "-m 4 -t 2 -e $_[0]{memfile} -o nvm_size=256m,"
            . "nvm_path=$_[0]{zone},no_lru_crawler";
    },
);

sub server_on {
    my ($files, $config) = @_;
    return new_memcached($CONFIGS{$config}->($files));
}

# A value for key $k, unique by $tag.  Each key keeps about one size, so
# that most stores over it stay in its slab class (where a version could
# be written over its predecessor's chunk), and a quarter of the keys hold
# tens of kilobytes, so that the kill often lands inside an item's write.
sub random_value {
    my ($k, $tag) = @_;
    my ($i) = $k =~ /(\d+)$/;
    my $base = $i % 4 == 3 ? 60000 + 1000 * ($i % 7)
             : $i % 4 == 2 ? 4000 + 100 * ($i % 9)
             : 100 + 10 * ($i % 13);
    my $len = $base + int rand($base / 50);
    my $v = "$tag:";
    return $v . ('v' x ($len - length $v));
}

# ---- the client process ----

# One request on $k given its state $st ({value, ttl} or undef for absent):
# the command and the state it makes when it succeeds.
sub next_request {
    my ($k, $st, $tag) = @_;
    my $counter = $k =~ /^n/;
    if (!defined $st) {
        my $v = $counter ? 1000 + int rand 1000 : random_value($k, $tag);
        return ("set $k 0 0 " . length($v) . "\r\n$v\r\n", 'STORED',
                { value => $v, ttl => 'never' });
    }
    my $r = rand;
    if ($r < 0.12) {
        return ("delete $k\r\n", 'DELETED', undef);
    }
    if ($r < 0.27) {
        my $ttl = $st->{ttl} eq 'never' ? 'long' : 'never';
        my $exp = $ttl eq 'long' ? $LONG_TTL : 0;
        return ("touch $k $exp\r\n", 'TOUCHED',
                { value => $st->{value}, ttl => $ttl });
    }
    if ($counter) {
        my $d = 1 + int rand 9;
        return ("incr $k $d\r\n", $st->{value} + $d,
                { value => $st->{value} + $d, ttl => $st->{ttl} });
    }
    if ($r < 0.35 && length($st->{value}) < 120000) {
        my $add = "+$tag;" . ('a' x int rand 300);
        return ("append $k 0 0 " . length($add) . "\r\n$add\r\n", 'STORED',
                { value => $st->{value} . $add, ttl => $st->{ttl} });
    }
    my $v = random_value($k, $tag);
    return ("set $k 0 0 " . length($v) . "\r\n$v\r\n", 'STORED',
            { value => $v, ttl => 'never' });
}

# Run batches of requests, each over distinct keys and pipelined (so
# that the server is busy when the kill lands), until the connection
# breaks; then write to $out one line per key: its acknowledged state, and
# the state of its request that got no reply (in flight when the server
# died).  A reply other than the expected one leaves the key unknown (its
# check is skipped).
sub client_run {
    my ($srv, $s, $id, $cycle, $start, $out, $kill_after) = @_;
    my %state = %$start;
    my (%inflight, %unknown);
    my $n = 0;
    my @keys = sort keys %state;
    my $alive = 1;
    while ($alive) {
        my %seen;
        my @batch = grep { !$seen{$_}++ } map { $keys[int rand @keys] } 1 .. 8;
        my @reqs = map { [$_, next_request($_, $state{$_}, "c$id.$cycle."
                                                          . $n++)] } @batch;
        my $sent = mc_send($s, join('', map { $_->[1] } @reqs), 10);
        kill 'KILL', $srv->pid if defined $kill_after && $n >= $kill_after;
        for my $r (@reqs) {
            my ($k, $cmd, $want, $after) = @$r;
            my $reply = $sent && $alive ? read_line($s, 30) : undef;
            if (!defined $reply) {
                $inflight{$k} = [$after];
                $alive = 0;
                next;
            }
            $reply =~ s/\r\n$//;
            if ($reply eq $want) {
                $state{$k} = $after;
            } elsif ($reply eq 'NOT_FOUND'
                     && $cmd =~ /^(?:delete|touch|incr)/) {
                $state{$k} = undef;
            } else {
                $unknown{$k} = $reply;
            }
        }
    }
    open my $fh, '>', $out or POSIX::_exit(2);
    for my $k (@keys) {
        print $fh join("\t", $k, encode_state($state{$k}),
                       map { encode_state($_) } @{ $inflight{$k} // [] }),
                  "\n" unless exists $unknown{$k};
        print $fh "$k\tunknown\n" if exists $unknown{$k};
    }
    close $fh;
}

sub encode_state {
    my ($st) = @_;
    return 'absent' unless defined $st;
    return "$st->{ttl}=$st->{value}";
}

sub decode_state {
    my ($s) = @_;
    return undef if $s eq 'absent';
    my ($ttl, $v) = split /=/, $s, 2;
    return { value => $v, ttl => $ttl };
}

# ---- the checker ----

# What the server holds for @keys: key => {value, ttl} (absent: no entry).
sub read_back {
    my ($srv, @keys) = @_;
    my $s = $srv->sock;
    my %have;
    for my $k (@keys) {
        my $line = send_recv($s, "mg $k v t\r\n");
        next if $line =~ /^EN\r\n/;
        if ($line =~ /^VA (\d+) t(-?\d+)\r\n/) {
            my ($len, $t) = ($1, $2);
            my $v = substr $line, length($&), $len;
            $have{$k} = { value => $v,
                          ttl => $t < 0 ? 'never'
                               : $t > $LONG_TTL / 2 ? 'long' : "t$t" };
        } else {
            $have{$k} = { value => "<unreadable: $line>", ttl => '?' };
        }
    }
    return \%have;
}

sub same_state {
    my ($a, $b) = @_;
    return !defined $a && !defined $b if !defined $a || !defined $b;
    return $a->{value} eq $b->{value} && $a->{ttl} eq $b->{ttl};
}

# Judge one key: 'ok', 'lost' (acknowledged, missing), 'resurrected' (a
# deleted key back), or 'wrong' (a state no acknowledged or pending
# request made: older, torn or never stored).
sub judge_key {
    my ($have, $acked, @pending) = @_;
    for my $ok ($acked, @pending) {
        return 'ok' if same_state($have, $ok);
    }
    return 'lost' if !defined $have;
    return 'resurrected' if !defined $acked;
    return 'wrong';
}

sub torture {
    my ($label, $strict) = @_;
    my $files = { zone => shm_file(), memfile => shm_file() };
    my %state;
    my @owner_keys;
    for my $c (0 .. $CLIENTS - 1) {
        $owner_keys[$c] = [map { ($_ % 8 == 0 ? 'n' : 'k') . "$c.$_" }
                           1 .. $KEYS_PER_CLIENT];
        $state{$_} = undef for @{ $owner_keys[$c] };
    }
    my %count = (checked => 0, lost => 0, resurrected => 0, wrong => 0,
                 unknown => 0, missing_allowed => 0);
    my $srv = server_on($files, $label);
    for my $cycle (1 .. $CYCLES) {
        my $kill_after = 100 + int rand 1500;
        my @pids;
        my $dir = $srv->dir;
        # every client is connected before the one that kills starts
        my @socks = map { $srv->sock } 0 .. $CLIENTS - 1;
        for my $c (0 .. $CLIENTS - 1) {
            my %start = map { ($_ => $state{$_}) } @{ $owner_keys[$c] };
            my $pid = fork();
            die "fork: $!" unless defined $pid;
            if ($pid == 0) {
                srand($$ ^ ($cycle << 8));
                client_run($srv, $socks[$c], $c, $cycle, \%start,
                           "$dir/client$c", $c == 0 ? $kill_after : undef);
                POSIX::_exit(0);
            }
            push @pids, $pid;
        }
        close $_ for @socks;
        waitpid($_, 0) for @pids;
        $srv->wait_exit(20);
        my (%acked, %pending);
        for my $c (0 .. $CLIENTS - 1) {
            open my $fh, '<', "$dir/client$c" or die "client $c: $!";
            while (my $line = <$fh>) {
                chomp $line;
                my ($k, $a, @p) = split /\t/, $line;
                if ($a eq 'unknown') {
                    $count{unknown}++;
                    next;
                }
                $acked{$k} = decode_state($a);
                $pending{$k} = [map { decode_state($_) } @p];
            }
        }
        $srv = server_on($files, $label);
        my $have = read_back($srv, sort keys %state);
        for my $k (sort keys %acked) {
            $count{checked}++;
            my $verdict = judge_key($have->{$k}, $acked{$k},
                                    @{ $pending{$k} });
            if ($verdict eq 'lost' && !$strict) {
                $count{missing_allowed}++;
            } elsif ($verdict ne 'ok') {
                $count{$verdict}++;
                diag("$label cycle $cycle: $k $verdict: have "
                     . substr(encode_state($have->{$k}), 0, 60)
                     . ', acked ' . substr(encode_state($acked{$k}), 0, 60));
            }
        }
        # the next cycle starts from what the server holds
        %state = map { ($_ => $have->{$_}) } keys %state;
    }
    $srv->stop;
    is($count{wrong}, 0, "$label: no value older than acknowledged, torn or "
       . 'never stored');
    is($count{resurrected}, 0, "$label: no deleted key comes back");
    is($count{lost}, 0, "$label: no acknowledged key lost") if $strict;
    diag(sprintf '%s: %d cycles, %d key checks, %d lost, %d resurrected, '
         . '%d wrong, %d missing where allowed, %d unknown',
         $label, $CYCLES, @count{qw(checked lost resurrected wrong
                                    missing_allowed unknown)});
    return \%count;
}

# TORTURE_CONFIGS picks some of them (scripts/crash-torture)
my %strict = (nvm => 1, default => 0, memfile => 1, 'memfile+nzone' => 1);
my @configs = split ' ',
    ($ENV{TORTURE_CONFIGS} // 'nvm default memfile memfile+nzone');
for my $config (@configs) {
    die "unknown configuration $config\n" unless exists $strict{$config};
    torture($config, $strict{$config});
}
done_testing();
