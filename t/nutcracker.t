#!/usr/bin/perl
# nutcracker.t: the scale-out recipe of doc/scale-out.md. Three servers with
# a small D-zone and an N-zone each, behind nutcracker (twemproxy, Debian's
# package) with ketama and auto_eject_hosts: false. Every value stored
# through the proxy reads back the same; the keys spread over all three
# servers and both zones of each; while one server is down its keys fail
# with an error and the others are served; once it is back (empty) no key
# reads a wrong value, and its keys take new values again.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;
use File::Temp qw(tempdir);
use POSIX qw(:sys_wait_h);

my ($nutcracker) = grep { -x } map { "$_/nutcracker" }
    split(/:/, $ENV{PATH} // ''), '/usr/sbin', '/usr/local/sbin';
plan skip_all => 'nutcracker is not installed (Debian package nutcracker)'
    unless $nutcracker;

# A D-zone of 2 MB, so each server's third of the data (about 3 MB, in two
# or three slab classes) also fills part of its 32 MB N-zone
my $SERVER_OPTS = '-m 2 -t 1 -o nvm_size=32m';
my $KEYS = 3000;
my $BATCH = 100;

my $dir = tempdir('nutcracker-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my @names = qw(a b c);
my %port = map { $_ => free_port() } @names;
my %server = map { $_ => start_server($_) } @names;

sub start_server {
    my ($name) = @_;
    return new_memcached("-p $port{$name} $SERVER_OPTS");
}

# ---- nutcracker: the pool as doc/scale-out.md shows it
my $proxy_port = free_port();
my $stats_port = free_port();
my $conf = "$dir/nutcracker.yml";
open my $fh, '>', $conf or die "$conf: $!";
print $fh <<"YAML";
tiercached:
  listen: 127.0.0.1:$proxy_port
  hash: fnv1a_64
  distribution: ketama
  timeout: 2000
  auto_eject_hosts: false
  servers:
YAML
print $fh "   - 127.0.0.1:$port{$_}:1 $_\n" for @names;
close $fh;

my $proxy_pid = fork();
die "fork: $!" unless defined $proxy_pid;
if ($proxy_pid == 0) {
    open STDIN, '<', '/dev/null';
    open STDOUT, '>', "$dir/nutcracker.out";
    open STDERR, '>&', \*STDOUT;
    {
        no warnings 'exec';
        exec $nutcracker, '-c', $conf, '-s', $stats_port, '-a', '127.0.0.1',
            '-o', "$dir/nutcracker.log";
    }
    POSIX::_exit(127);
}
END {
    local $?;
    if ($proxy_pid) {
        kill 'KILL', $proxy_pid;
        waitpid($proxy_pid, 0);
    }
}

sub proxy_log {
    local $/;
    my $text = '';
    for my $f ("$dir/nutcracker.out", "$dir/nutcracker.log") {
        open my $in, '<', $f or next;
        $text .= <$in> // '';
    }
    return $text;
}

my $proxy = wait_until(10, sub {
    return undef if waitpid($proxy_pid, WNOHANG) == $proxy_pid;
    return IO::Socket::INET->new(PeerAddr => '127.0.0.1',
        PeerPort => $proxy_port, Proto => 'tcp', Timeout => 1);
});
ok($proxy, 'nutcracker accepts connections') or do {
    diag(proxy_log());
    done_testing();
    exit;
};
$proxy->autoflush(1);
binmode $proxy;

# ---- helpers: pipelined sets and multi-gets on one connection
my @keys = map { "key:$_" } 1 .. $KEYS;

sub value_of {
    my ($key, $round) = @_;
    my ($n) = $key =~ /(\d+)$/;
    my $len = 2500 + ($n * 7919) % 1000;
    my $head = "$round:$key:";
    return $head . substr(('0123456789abcdef' x 400), 0, $len - length $head);
}

# Stores every key's value for $round; returns how many replies were not
# STORED.
sub store_all {
    my ($sock, $round, @list) = @_;
    my $bad = 0;
    while (my @batch = splice(@list, 0, $BATCH)) {
        my $req = join '', map {
            my $v = value_of($_, $round);
            "set $_ 0 0 " . length($v) . "\r\n$v\r\n";
        } @batch;
        mc_send($sock, $req, 10) or return scalar(@batch) + $bad;
        for (@batch) {
            my $line = read_line($sock, 10) // '<none>';
            $bad++ if $line ne "STORED\r\n";
        }
    }
    return $bad;
}

# { key => value } for the keys a multi-get returns, or undef with the
# offending line when the reply is not VALUE...END (an error).
sub get_many {
    my ($sock, @list) = @_;
    my %got;
    while (my @batch = splice(@list, 0, $BATCH)) {
        mc_send($sock, "get @batch\r\n", 10) or return (undef, '<send>');
        while (1) {
            my $line = read_line($sock, 10) // return (undef, '<timeout>');
            last if $line eq "END\r\n";
            return (undef, $line) unless $line =~ /^VALUE (\S+) \d+ (\d+)\r\n/;
            my ($key, $len) = ($1, $2);
            my $data = read_bytes($sock, $len + 2, 10)
                // return (undef, '<timeout>');
            $got{$key} = substr($data, 0, $len);
        }
    }
    return \%got;
}

# (wrong, missing) among @list for the values of $round in $got
sub compare {
    my ($got, $round, @list) = @_;
    my ($wrong, $missing) = (0, 0);
    for my $k (@list) {
        if (!exists $got->{$k}) {
            $missing++;
        } elsif ($got->{$k} ne value_of($k, $round)) {
            $wrong++;
        }
    }
    return ($wrong, $missing);
}

# ---- every value through the proxy
is(store_all($proxy, 1, @keys), 0, "$KEYS sets through nutcracker: STORED");
my ($got, $err) = get_many($proxy, @keys);
ok($got, 'multi-gets through nutcracker answer') or diag($err);
my ($wrong, $missing) = compare($got || {}, 1, @keys);
is($wrong, 0, 'every value read back through nutcracker is the one stored');
is($missing, 0, 'no key missing');

# ---- the keys spread over the three servers and both zones of each
my %owned;
my $sum = 0;
for my $name (@names) {
    my $sock = $server{$name}->sock;
    my ($on) = get_many($sock, @keys);
    $owned{$name} = [sort keys %{ $on || {} }];
    my $n = @{ $owned{$name} };
    $sum += $n;
    cmp_ok($n, '>=', $KEYS / 6, "server $name holds its share ($n keys)");
    my $tier = $server{$name}->tier_stats;
    ok($tier->{d_items} > 0 && $tier->{n_items} > 0,
        "server $name: items in both zones (d_items $tier->{d_items}, "
        . "n_items $tier->{n_items})");
}
is($sum, $KEYS, 'each key is on exactly one server');

# ---- one server down: its keys fail, the others' are served
my ($victim, @others) = @names;
my @victim_keys = @{ $owned{$victim} };
my @other_keys = map { @{ $owned{$_} } } @others;
$server{$victim}->stop;
my $probe = $victim_keys[0];
mc_send($proxy, "get $probe\r\n");
my $reply = read_reply($proxy, 10);
like($reply, qr/^SERVER_ERROR /,
    "server $victim down: its key gets an error, not a value");
($got, $err) = get_many($proxy, @other_keys);
($wrong, $missing) = compare($got || {}, 1, @other_keys);
ok($got && !$wrong && !$missing,
    'server down: the other servers\' keys all read correctly')
    or diag($err // "wrong $wrong, missing $missing");

# ---- restarted (empty) on the same port: misses, never a wrong value
$server{$victim} = start_server($victim);
my $back = wait_until(10, sub {
    mc_send($proxy, "get $probe\r\n");
    my $r = read_reply($proxy, 5);
    return $r eq "END\r\n";
}, 0.1);
ok($back, "restarted server $victim answers through nutcracker");
($got, $err) = get_many($proxy, @keys);
ok($got, 'multi-gets after the restart answer') or diag($err);
$got ||= {};
# the restarted server's keys may miss (its anonymous N-zone starts empty)
($wrong) = compare($got, 1, @keys);
is($wrong, 0, 'after the restart: no wrong value');
(undef, $missing) = compare($got, 1, @other_keys);
is($missing, 0, 'the other servers\' keys all still hit');

# ---- the restarted server takes its keys again
is(store_all($proxy, 2, @victim_keys), 0,
    "new values for server $victim\'s keys: STORED");
($got, $err) = get_many($proxy, @victim_keys);
($wrong, $missing) = compare($got || {}, 2, @victim_keys);
ok($got && !$wrong && !$missing, 'and they read back through nutcracker')
    or diag($err // "wrong $wrong, missing $missing");
my ($direct) = get_many($server{$victim}->sock, @victim_keys);
is(scalar keys %{ $direct || {} }, scalar @victim_keys,
    'they are on the restarted server again (ketama keeps the ring)');

done_testing();
