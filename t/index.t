#!/usr/bin/perl
# index.t: the index over the wire (doc/tiering.md "Index and
# descriptors").  A table that starts at 2^12 buckets grows a bucket at a
# time while 150,000 keys stream in, so its buckets cost at most 16 bytes
# per entry at every size (hash_bytes / curr_items after each batch) and
# the whole index, overflow pool included, at most 16 at the end (with an
# N-zone, `stats tier` index_bytes_per_item; smaller tables pay for their
# stripes filling unevenly, see the doc); every key stays readable with
# its value while the table grows, and deletes and overwrites keep the
# count right.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $KEYS = 150_000;
my $BATCH = 500;

sub value_of { my ($i) = @_; return "v$i-" . ('x' x ($i % 23)) }

# Store keys [$from, $to) with noreply, in pipelined batches; then read
# hash_bytes / curr_items.  Returns the largest ratio seen after each
# batch past the first power of two.
sub fill {
    my ($srv, $sock, $from, $to) = @_;
    my $worst = 0;
    for (my $i = $from; $i < $to; $i += $BATCH) {
        my $cmds = '';
        for my $k ($i .. ($i + $BATCH < $to ? $i + $BATCH : $to) - 1) {
            my $v = value_of($k);
            $cmds .= "set k$k 0 0 " . length($v) . " noreply\r\n$v\r\n";
        }
        my $r = send_sync($sock, $cmds, timeout => 30);
        return "store failed: " . escape_bytes($r) unless $r eq '';
        my $st = $srv->stats;
        next if $st->{curr_items} < 4 * 4096;    # the first table's size
        my $per = $st->{hash_bytes} / $st->{curr_items};
        $worst = $per if $per > $worst;
    }
    return $worst;
}

# Every key of [$from, $to) read back with multigets: how many are wrong.
sub wrong_values {
    my ($sock, $from, $to) = @_;
    my $wrong = 0;
    for (my $i = $from; $i < $to; $i += 100) {
        my @ks = ($i .. ($i + 100 < $to ? $i + 100 : $to) - 1);
        my $r = send_recv($sock, "get " . join(' ', map { "k$_" } @ks)
            . "\r\n");
        my %got;
        while ($r =~ /\GVALUE (\S+) 0 (\d+)\r\n/gc) {
            my ($key, $len) = ($1, $2);
            $got{$key} = substr($r, pos($r), $len);
            pos($r) += $len + 2;
        }
        $wrong += grep { ($got{"k$_"} // '') ne value_of($_) } @ks;
    }
    return $wrong;
}

{
    my $srv = new_memcached('-m 64 -t 2 -o hashpower=12');
    my $sock = $srv->sock;
    my $worst = fill($srv, $sock, 0, $KEYS);
    my $st = $srv->stats;
    cmp_ok($st->{hash_bytes}, '>', 4096 * 64,
        "the table grew ($st->{hash_bytes} bytes)");
    is($st->{hash_power_level}, 17, 'hash_power_level is memcached\'s: '
       . 'its table doubles past 1.5 items per bucket');
    ok($worst =~ /^[\d.]+$/ && $worst <= 16,
        "hash_bytes per item stayed <= 16 while growing (worst $worst)");
    is($st->{curr_items}, $KEYS, "$KEYS items");
    is(wrong_values($sock, 0, $KEYS), 0, 'every value read back intact');

    my $del = join '', map { "delete k$_ noreply\r\n" }
        grep { $_ % 3 == 0 } 0 .. $KEYS - 1;
    is(send_sync($sock, $del, timeout => 30), '', 'a third deleted');
    my $over = '';
    for my $k (grep { $_ % 3 == 1 } 0 .. $KEYS - 1) {
        my $v = value_of($k);
        $over .= "set k$k 0 0 " . length($v) . " noreply\r\n$v\r\n";
    }
    is(send_sync($sock, $over, timeout => 30), '', 'a third overwritten');
    my $gone = 0;
    for (my $i = 0; $i < $KEYS; $i += 300) {
        $gone++ if send_recv($sock, "get k$i\r\n") ne "END\r\n";
    }
    is($gone, 0, 'deleted keys are gone');
    my @left = grep { $_ % 3 != 0 } 0 .. $KEYS - 1;
    is($srv->stats->{curr_items}, scalar @left, 'the count follows');
    is(wrong_values($sock, 0, $KEYS) - ($KEYS - @left), 0,
        'the rest read back intact');
    $srv->stop;
}

# With an N-zone the items spread over both zones; the figure `stats tier`
# reports is the whole index (overflow pool included) per item.
{
    my $path = shm_file();
    my $srv = new_memcached("-m 2 -t 2 -o hashpower=12,nvm_path=$path,"
        . 'nvm_size=64m');
    my $sock = $srv->sock;
    fill($srv, $sock, 0, $KEYS);
    my $t = $srv->tier_stats;
    cmp_ok($t->{n_items}, '>', $KEYS / 2, "most items in the N-zone "
        . "($t->{n_items})");
    cmp_ok($t->{index_bytes_per_item}, '<=', 16,
        "stats tier: index_bytes_per_item $t->{index_bytes_per_item}");
    is(wrong_values($sock, 0, $KEYS), 0, 'every value read back intact, '
        . 'both zones');
    $srv->stop;
}

done_testing();
