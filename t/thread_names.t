#!/usr/bin/perl
# t/thread_names.t: the server's threads carry memcached's names
# (mc-worker, mc-lrumaint, mc-itemcrawler, mc-slabmaint, mc-assocmaint,
# mc-log), so `top -H`, `ps -L` and per-thread monitoring read the same
# as with Debian's memcached; the tier thread is mc-tier
# (doc/protocol.md "Threads").
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

plan skip_all => 'needs /proc/PID/task' unless -d "/proc/$$/task";

# { name => count } of the server's threads once `want` threads run.
sub thread_names {
    my ($srv, $want) = @_;
    my %names;
    my $started = wait_until(10, sub {
        %names = ();
        for my $comm (glob('/proc/' . $srv->pid . '/task/*/comm')) {
            open(my $fh, '<', $comm) or next;
            my $name = <$fh>;
            next unless defined $name;
            chomp $name;
            $names{$name}++;
        }
        my $n = 0;
        $n += $_ for values %names;
        return $n >= $want;
    });
    ok($started, "$want threads started");
    return \%names;
}

my @MEMCACHED = qw(mc-worker mc-lrumaint mc-itemcrawler mc-slabmaint
                   mc-assocmaint mc-log);

my $ours = thread_names(new_memcached('-t 3'), 9);
is($ours->{'mc-worker'}, 3, 'one mc-worker per -t');
for my $name (@MEMCACHED[1 .. $#MEMCACHED]) {
    is($ours->{$name}, 1, "one $name");
}
ok(!exists $ours->{'mc-tier'}, 'no tier thread without an N-zone');

SKIP: {
    skip stock_bin() . ' not installed', 1 unless -x stock_bin();
    skip 'the stock memcached is the server under test', 1
        if server_is_stock();
    my $stock = thread_names(stock_memcached('-t 3'), 9);
    my %theirs = map { $_ => 1 } grep { /^mc-/ } keys %$stock;
    my %mine = map { $_ => 1 } grep { /^mc-/ } keys %$ours;
    is_deeply(\%mine, \%theirs, 'the same names as Debian\'s memcached')
        or diag('memcached: ' . join(' ', sort keys %theirs) . '; ours: '
                . join(' ', sort keys %mine));
}

SKIP: {
    skip 'the stock memcached has no N-zone', 1 if server_is_stock();
    my $tiered = thread_names(new_memcached('-m 8 -o nvm_size=16m'), 8);
    is($tiered->{'mc-tier'}, 1, 'the tier thread is mc-tier');
}

done_testing;
