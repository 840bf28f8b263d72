#!/usr/bin/perl
# tier_copies.t: N copies of promoted items under tier_policy=hotter
# (doc/tiering.md "N copies"), with a 2 MB D-zone and 8000-byte values:
#   - a promoted item keeps its N chunk as a copy: n_copies counts them,
#     the N-zone stays as used as before the promotions;
#   - a page move demotes the D items of a page onto their copies: no
#     value is written again (at most one line an item);
#   - a full N-zone's CLOCK takes copies before it evicts a live item,
#     even copies the hand would reach after live items (the copy hand);
#   - anything that changes a D item drops its copy (incr in place,
#     touch, meta invalidation, delete, overwrite, append), and neither a
#     graceful restart nor a crash (kill -9) brings back the value a copy
#     held once the D item changed; untouched items come back from their
#     copies with their values and cas;
#   - a new key stored into D while D has room writes a copy of its own
#     (copies_stored); stores into N, new keys once the D-zone is full and
#     new versions of a key write none;
#   - an N page that holds only copies goes to a class that would
#     otherwise evict, once the N-zone has no free page (n_pages_moved),
#     and a crash restart reads it as the new class's.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use POSIX qw(WIFEXITED WEXITSTATUS);
use Test::More;
use MemcachedTest;

my $VLEN = 8000;
my $BASE = '-m 2 -I 64k -t 1';
my $OPTS = 'tier_promote=sync,tier_policy=hotter,tier_placement=nvm';

sub value_of { my ($i) = @_; return chr(ord('a') + $i % 26) x $VLEN }

# Store keys $prefix$from..$to with value_of($i); returns how many stored.
sub store_range {
    my ($s, $prefix, $from, $to) = @_;
    my $ok = 0;
    for my $i ($from .. $to) {
        $ok++ if send_recv($s, "set $prefix$i $i 0 $VLEN\r\n"
                           . value_of($i) . "\r\n") eq "STORED\r\n";
    }
    return $ok;
}

# Keys whose value is not value_of($i) (a miss counts).
sub wrong_values {
    my ($s, $prefix, $from, $to) = @_;
    my $wrong = 0;
    for my $i ($from .. $to) {
        $wrong++ unless send_recv($s, "get $prefix$i\r\n")
            eq "VALUE $prefix$i $i $VLEN\r\n" . value_of($i) . "\r\nEND\r\n";
    }
    return $wrong;
}

sub read_twice {
    my ($s, $prefix, $from, $to) = @_;
    for (1 .. 2) {
        send_recv($s, "get $prefix$_\r\n") for $from .. $to;
    }
}

# The slab class the 8000-byte items live in.
sub item_class {
    my ($srv) = @_;
    my $sl = $srv->stats('slabs');
    my ($cls) = map { /^(\d+):chunk_size$/ ? $1 : () }
        grep { /:chunk_size$/ && $sl->{$_} >= $VLEN } sort keys %$sl;
    return $cls;
}

# ---- promotions keep copies; a page move demotes onto them ----
{
    my $srv = new_memcached("$BASE -o nvm_size=8m,$OPTS");
    my $s = $srv->sock;
    is(store_range($s, 'p', 1, 200), 200, 'copies: 200 keys stored in N');
    my $t0 = $srv->tier_stats;
    is($t0->{d_items}, 0, 'copies: nothing in D yet');
    read_twice($s, 'p', 1, 200);
    my $t1 = $srv->tier_stats;
    my $promoted = $t1->{promotions} - $t0->{promotions};
    cmp_ok($promoted, '>=', 127, "copies: two reads promoted $promoted keys");
    is($t1->{n_copies}, $promoted, 'copies: each promoted key kept a copy');
    is($t1->{n_zone_used}, $t0->{n_zone_used},
        'copies: the N-zone keeps their chunks');
    is($t1->{n_items}, 200 - $promoted, 'copies: n_items counts no copy');

    my $cls = item_class($srv);
    my $r = send_recv($s, "slabs reassign $cls 0\r\n");
    is($r, "OK\r\n", "copies: a page of class $cls moves");
    # slabs_moved counts the move once its page is empty: every item of
    # it demoted by then
    wait_until(10, sub { ($srv->stats->{slabs_moved} // 0) >= 1 });
    is($srv->stats->{slabs_moved}, 1, 'copies: the page moved');
    my $t2 = $srv->tier_stats;
    my $moved = $t2->{demotions} - $t1->{demotions};
    my $onto = $t2->{copy_demotions} - $t1->{copy_demotions};
    cmp_ok($moved, '>', 0, "copies: the move demoted $moved items");
    is($onto, $moved, 'copies: each onto its copy');
    my $lines = $t2->{nvm_lines_written} - $t1->{nvm_lines_written};
    cmp_ok($lines, '<=', $moved,
        "copies: $lines lines written for them (a value is 126)");
    is($t2->{n_copies}, $promoted - $moved, 'copies: those copies are items');
    is(wrong_values($s, 'p', 1, 200), 0, 'copies: every value exact');
    $srv->stop;
}

# ---- stores copy while D has room, and only then ----
{
    my $srv = new_memcached("$BASE -o nvm_size=8m,tier_promote=sync,"
                            . "tier_policy=hotter");
    my $s = $srv->sock;
    is(store_range($s, 'f', 1, 400), 400, 'fill: 400 keys stored');
    my $t1 = $srv->tier_stats;
    cmp_ok($t1->{d_items}, '>=', 100, "fill: $t1->{d_items} went to D");
    cmp_ok($t1->{n_items}, '>=', 100, "fill: $t1->{n_items} to N");
    cmp_ok($t1->{copies_stored}, '>=', $t1->{d_items} / 2,
        "fill: $t1->{copies_stored} D stores wrote a copy");
    cmp_ok($t1->{copies_stored}, '<=', $t1->{d_items},
        'fill: no N store did');
    is($t1->{n_copies}, $t1->{copies_stored}, 'fill: each copy kept');
    # D is full now: once the tier thread's tick has noted it (a probe
    # key stored without a copy shows it has), new keys, and new versions
    # of the keys the fill left in D, are stored without a copy
    my $probe = 0;
    ok(wait_until(10, sub {
        my $before = $srv->tier_stats->{copies_stored};
        $probe++;
        store_range($s, 'probe', $probe, $probe);
        return $srv->tier_stats->{copies_stored} == $before;
    }), "fill: the tick noted that D is full ($probe probes)");
    $t1 = $srv->tier_stats;
    is(store_range($s, 'f', 1, 20), 20, 'fill: 20 keys stored again');
    is(store_range($s, 'f', 401, 420), 20, 'fill: 20 new keys stored');
    my $t2 = $srv->tier_stats;
    is($t2->{copies_stored}, $t1->{copies_stored},
        'fill: no copy written once D is full');
    # promotions now displace items the fill left in D: onto their copies
    read_twice($s, 'f', 301, 400);
    # the tier thread demotes for the promotions it carries out
    wait_until(10, sub {
        $srv->tier_stats->{demotions} > $t2->{demotions}
    });
    my $t3 = $srv->tier_stats;
    my $demoted = $t3->{demotions} - $t2->{demotions};
    my $onto = $t3->{copy_demotions} - $t2->{copy_demotions};
    cmp_ok($demoted, '>', 0, "fill: promotions demoted $demoted items");
    cmp_ok($onto, '>=', $demoted / 2, "fill: $onto of them onto copies");
    is(wrong_values($s, 'f', 1, 420), 0, 'fill: every value exact');
    $srv->stop;
}

# ---- a full N-zone's CLOCK takes copies first ----
{
    my $srv = new_memcached("$BASE -o nvm_size=8m,$OPTS");
    my $s = $srv->sock;
    is(store_range($s, 'q', 1, 800), 800, 'clock: 800 keys stored in N');
    read_twice($s, 'q', 1, 200);
    my $t1 = $srv->tier_stats;
    is($t1->{n_copies}, 200, 'clock: 200 keys promoted, each with a copy');
    is($t1->{n_evictions}, 0, 'clock: nothing evicted yet');
    is(store_range($s, 'q', 801, 950), 150, 'clock: 150 more keys stored');
    my $t2 = $srv->tier_stats;
    my $taken = $t2->{copies_reclaimed} - $t1->{copies_reclaimed};
    cmp_ok($taken, '>', 0, "clock: the CLOCK took $taken copies");
    is($t2->{n_evictions}, 0, 'clock: and evicted no live item');
    is($t2->{n_copies}, 200 - $taken, 'clock: the other copies stay');
    is(wrong_values($s, 'q', 1, 950), 0, 'clock: every value exact');
    $srv->stop;
}

# ---- copies go before items the hand would meet first ----
# The promoted keys' copies lie after 600 items not read since their
# store (their reference bits clear): the CLOCK hand alone would evict
# those first; the copy hand takes the copies.
{
    my $srv = new_memcached("$BASE -o nvm_size=8m,$OPTS");
    my $s = $srv->sock;
    is(store_range($s, 'h', 1, 800), 800, 'copy hand: 800 keys stored in N');
    read_twice($s, 'h', 601, 800);
    my $t1 = $srv->tier_stats;
    is($t1->{n_copies}, 200, 'copy hand: the last 200 promoted, with copies');
    is(store_range($s, 'h', 801, 850), 50, 'copy hand: 50 more keys stored');
    my $t2 = $srv->tier_stats;
    cmp_ok($t2->{copies_reclaimed} - $t1->{copies_reclaimed}, '>', 0,
        'copy hand: the stores took copies (and free chunks)');
    is($t2->{n_evictions}, 0, 'copy hand: no item evicted');
    is(wrong_values($s, 'h', 1, 850), 0, 'copy hand: every value exact');
    $srv->stop;
}

# ---- changes drop copies; restarts never bring a dropped one back ----
my @CHANGES = (
    [incr => sub { "incr $_[0] 3\r\n" }, "11\r\n"],
    [touch => sub { "touch $_[0] 5000\r\n" }, "TOUCHED\r\n"],
    [invalidate => sub { "md $_[0] I\r\n" }, "HD\r\n"],
    [delete => sub { "delete $_[0]\r\n" }, "DELETED\r\n"],
    [set => sub { "set $_[0] 7 0 $VLEN\r\n" . ('s' x $VLEN) . "\r\n" },
        "STORED\r\n"],
    [append => sub { "append $_[0] 0 0 3\r\nabc\r\n" }, "STORED\r\n"],
);
my $COUNTER = '8' . (' ' x ($VLEN - 1));

for my $stop ('shutdown graceful', 'kill -9') {
    my $file = shm_file();
    my $o = "nvm_size=8m,nvm_path=$file,no_lru_crawler,$OPTS";
    my $srv = new_memcached("$BASE -A -o $o");
    my $s = $srv->sock;
    my @keys = map { "c$_" } 0 .. $#CHANGES + 2;
    my $stored = 0;
    for my $k (@keys) {
        $stored++ if send_recv($s, "set $k 5 0 $VLEN\r\n$COUNTER\r\n")
            eq "STORED\r\n";
    }
    is($stored, scalar @keys, "$stop: keys stored in N");
    for (1 .. 2) {
        send_recv($s, "get $_\r\n") for @keys;
    }
    my $t1 = $srv->tier_stats;
    is($t1->{n_copies}, scalar @keys, "$stop: each promoted with a copy");
    my %cas;
    for my $k (@keys) {
        ($cas{$k}) = send_recv($s, "gets $k\r\n") =~ /^VALUE \S+ \d+ \d+ (\d+)/;
    }
    for my $i (0 .. $#CHANGES) {
        my ($name, $cmd, $want) = @{ $CHANGES[$i] };
        is(send_recv($s, $cmd->("c$i")), $want, "$stop: $name c$i");
    }
    # D has room, but a new version of a key (set, append) writes no copy
    my $t2 = $srv->tier_stats;
    is($t2->{copies_stored}, $t1->{copies_stored},
        "$stop: no new version of a key wrote a copy");
    is($t2->{n_copies}, 2,
        "$stop: every change dropped its key's copy");
    my %after = map { $_ => send_recv($s, "gets $_\r\n") } @keys;
    if ($stop eq 'kill -9') {
        $srv->stop;
    }
    else {
        print $s "shutdown graceful\r\n";
        ok($srv->wait_exit(20) && WIFEXITED($srv->exit_status)
            && WEXITSTATUS($srv->exit_status) == 0, "$stop: clean exit");
    }
    $srv = new_memcached("$BASE -A -o $o");
    $s = $srv->sock;
    is($srv->tier_stats->{restart_kind}, $stop eq 'kill -9' ? 'crash_recovery' : 'warm',
        "$stop: restarted from the N-zone");
    # untouched keys come back from their copies, as they were
    for my $k (@keys[-2, -1]) {
        is(send_recv($s, "gets $k\r\n"),
            "VALUE $k 5 $VLEN $cas{$k}\r\n$COUNTER\r\nEND\r\n",
            "$stop: $k back with its value and cas");
    }
    if ($stop eq 'kill -9') {
        # the changed keys' D versions died with the process; no copy of
        # what they held before may stand in for them
        my @back = grep { send_recv($s, "get $_\r\n") ne "END\r\n" }
            map { "c$_" } 0 .. $#CHANGES;
        is("@back", '', "$stop: no changed key came back");
    }
    else {
        for my $i (0 .. $#CHANGES) {
            my $k = "c$i";
            my $name = $CHANGES[$i][0];
            my $now = send_recv($s, "gets $k\r\n");
            if ($name eq 'invalidate') {
                # gets hides nothing of a stale item; mg shows the flag
                like(send_recv($s, "mg $k v\r\n"), qr/^VA $VLEN .*X/,
                    "$stop: c$i still stale");
                $now =~ s/ \d+\r\n/\r\n/;
                $after{$k} =~ s/ \d+\r\n/\r\n/;
            }
            is(escape_bytes($now), escape_bytes($after{$k}),
                "$stop: $name c$i as acknowledged");
        }
        my ($ttl) = send_recv($s, "mg c1 t\r\n") =~ /^HD t(\d+)/;
        cmp_ok($ttl // 0, '>', 4000, "$stop: touch's TTL kept");
    }
    $srv->stop;
}

# ---- a page of nothing but copies goes to a class that would evict ----
# The small keys all fit in D, so their class's one N page holds only
# their copies (enough of them that the large class's seal words fall on
# their bytes); once the N-zone has no free page, that page goes to the
# large items' class before the CLOCK evicts anything, and a crash
# restart reads it as that class's free chunks.
{
    my $file = shm_file();
    my $o = "nvm_size=8m,nvm_path=$file,no_lru_crawler,tier_promote=sync,"
        . 'tier_policy=hotter';
    my $srv = new_memcached("$BASE -o $o");
    my $s = $srv->sock;
    my $small = 'x' x 100;
    my $stored = grep {
        send_recv($s, "set s$_ 0 0 100\r\n$small\r\n") eq "STORED\r\n"
    } 1 .. 3000;
    is($stored, 3000, 'page move: 3000 small keys stored');
    my $c1 = $srv->tier_classes;
    my ($sid) = grep { $_ ne '_raw' && $c1->{$_}{n_copies} == 3000 }
        keys %$c1;
    ok(defined $sid && $c1->{$sid}{n_pages} == 1
        && $c1->{$sid}{n_items} == 0,
        'page move: their class has one N page, of their copies only');
    my $large = 0;
    while ($large < 3000) {
        $large++;
        store_range($s, 'L', $large, $large);
        last if $srv->tier_stats->{n_pages_moved} > 0;
    }
    my $t = $srv->tier_stats;
    is($t->{n_pages_moved}, 1, "page move: moved after $large large keys");
    # the first try leaves the copies that share the storing key's item
    # lock stripe (one in 256), and the store evicts; the next takes them
    cmp_ok($t->{n_evictions}, '<=', 2,
        "page move: after $t->{n_evictions} N evictions (at most 2)");
    my $c2 = $srv->tier_classes;
    is($c2->{$sid}{n_pages} // 0, 0, 'page move: the small class has none');
    is($c2->{$sid}{n_copies} // 0, 0, 'page move: its copies given up');
    is(scalar(grep {
        send_recv($s, "get s$_\r\n") ne "VALUE s$_ 0 100\r\n$small\r\nEND\r\n"
    } 1 .. 3000), 0, 'page move: every small key still read from D');
    # a crash at once: the moved page's chunks still hold the copies'
    # bytes, but for the one the triggering store took
    $srv->stop;
    $srv = new_memcached("$BASE -o $o");
    $s = $srv->sock;
    $t = $srv->tier_stats;
    is($t->{restart_kind}, 'crash_recovery', 'page move: crash recovery');
    is($t->{restart_items_corrupt} + $t->{restart_items_stale}, 0,
        'page move: no chunk of the moved page read as corrupt or stale');
    cmp_ok($t->{restart_items_recovered}, '>', 0,
        "page move: $t->{restart_items_recovered} items recovered");
    my $wrong = grep {
        my $r = send_recv($s, "get L$_\r\n");
        $r ne "END\r\n" && $r ne "VALUE L$_ $_ $VLEN\r\n" . value_of($_)
            . "\r\nEND\r\n"
    } 1 .. $large;
    is($wrong, 0, 'page move: every recovered large key exact');
    $srv->stop;
}

done_testing();
