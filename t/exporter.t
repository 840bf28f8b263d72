#!/usr/bin/perl
# exporter.t: scripts/tiercached-exporter (doc/monitoring.md) against a
# running server with items in both zones.  Its /metrics, scraped over
# HTTP, has tiercached_up 1, the build and tier info, and per zone and
# per class the figures of `stats tier` and `stats tier classes` with the
# values the server gives (counters typed as counters); a scrape after
# more sets follows the server; with the server gone tiercached_up is 0
# and the exporter still answers; SIGTERM stops it cleanly.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;
use HTTP::Tiny;
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep);

my $EXPORTER = repo_root() . '/scripts/tiercached-exporter';
plan skip_all => 'python3 cannot import prometheus_client (install-deps)'
    if system('python3 -c "import prometheus_client" 2>/dev/null') != 0;

my $srv = new_memcached('-m 2 -t 2 -o nvm_size=16m');
my $s = $srv->sock;

sub store {
    my ($from, $to) = @_;
    my $batch = '';
    for my $i ($from .. $to) {
        my $len = $i % 3 ? 3000 : 200;
        $batch .= "set e$i 0 0 $len\r\n" . ('e' x $len) . "\r\n";
    }
    my $r = send_sync($s, $batch, timeout => 20);
    return () = $r =~ /^STORED\r$/mg;
}
is(store(1, 1500), 1500, '1500 sets stored');
send_recv($s, "get e$_\r\n") for 1 .. 30;
my $t = $srv->tier_stats;
cmp_ok($t->{n_items}, '>', 0, 'items in the N-zone');
cmp_ok($t->{d_items}, '>', 0, 'items in the D-zone');

my $dir = $srv->dir;
my ($pid, $port);

# Start the exporter on a free port; retried when another process took
# the port between free_port and the bind.
sub start_exporter {
    for my $try (1 .. 3) {
        $port = free_port();
        $pid = fork();
        die "fork: $!" unless defined $pid;
        if ($pid == 0) {
            open STDIN, '<', '/dev/null';
            open STDOUT, '>', "$dir/exporter.log" or POSIX::_exit(127);
            open STDERR, '>&', \*STDOUT or POSIX::_exit(127);
            {
                no warnings 'exec';
                exec $EXPORTER, '--server', '127.0.0.1:' . $srv->port,
                    '--listen', "127.0.0.1:$port", '--timeout', '5';
            }
            POSIX::_exit(127);
        }
        my $up = wait_until(20, sub {
            return 'exited' if waitpid($pid, WNOHANG) == $pid;
            return HTTP::Tiny->new(timeout => 5)
                ->get("http://127.0.0.1:$port/metrics")->{success};
        }, 0.1);
        return 1 if $up && $up ne 'exited';
        kill 'KILL', $pid if $up ne 'exited';
        waitpid($pid, 0);
        $pid = undef;
    }
    return 0;
}

# /metrics as { 'name{k="v",...}' => value } (labels sorted) plus the
# TYPE of each family under 'TYPE name'.
sub scrape {
    my $r = HTTP::Tiny->new(timeout => 10)
        ->get("http://127.0.0.1:$port/metrics");
    return undef unless $r->{success};
    my %m;
    for my $line (split /\n/, $r->{content}) {
        if ($line =~ /^# TYPE (\S+) (\S+)$/) {
            $m{"TYPE $1"} = $2;
        }
        elsif ($line =~ /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/) {
            my ($name, $labels, $v) = ($1, $2 // '', $3);
            my @l = sort $labels =~ /(\w+="[^"]*")/g;
            $m{@l ? "$name\{" . join(',', @l) . '}' : $name} = $v;
        }
    }
    return \%m;
}

# A scrape taken while the server's tier figures stand still, with the
# `stats tier` and `stats tier classes` of that moment.
sub steady_scrape {
    my ($m, $tier, $classes);
    wait_until(10, sub {
        $tier = $srv->tier_stats;
        $classes = $srv->tier_classes;
        $m = scrape();
        my $after = $srv->tier_stats;
        return $m && !grep { $tier->{$_} ne $after->{$_} }
            grep { $_ ne '_raw' && $tier->{$_} =~ /^\d+$/ } keys %$tier;
    }, 0.2);
    return ($m, $tier, $classes);
}

ok(start_exporter(), 'the exporter serves /metrics')
    or diag(`cat $dir/exporter.log 2>/dev/null`);
my ($m, $tier, $cl) = steady_scrape();
cmp_ok($m->{tiercached_up} // -1, '==', 1, 'tiercached_up 1');
is($m->{'tiercached_build_info{memcached_version="1.6.18",'
        . 'server="tiercached",version="' . $srv->stats->{tiercached_version}
        . '"}'}, '1.0', 'tiercached_build_info names the server and versions');
ok((grep { /^tiercached_tier_info\{.*policy="hotter"/ } keys %$m),
    'tiercached_tier_info carries the policy');

my %ZONED = (
    tiercached_zone_limit_bytes => ['gauge', '%s_zone_limit'],
    tiercached_zone_used_bytes => ['gauge', '%s_zone_used'],
    tiercached_zone_items => ['gauge', '%s_items'],
    tiercached_zone_item_bytes => ['gauge', '%s_bytes'],
    tiercached_zone_hits_total => ['counter', '%s_hits'],
    tiercached_zone_evictions_total => ['counter', '%s_evictions'],
);
my @bad;
for my $name (sort keys %ZONED) {
    my ($type, $stat) = @{ $ZONED{$name} };
    (my $family = $name) =~ s/_total$//;
    push @bad, "TYPE $name" unless ($m->{"TYPE $family"} // '') eq $type
        || ($m->{"TYPE $name"} // '') eq $type;
    for my $z (qw(d n)) {
        my $got = $m->{"$name\{zone=\"$z\"}"};
        my $want = $tier->{sprintf $stat, $z};
        push @bad, "$name\{zone=$z\}: " . ($got // 'undef') . " != $want"
            unless defined $got && $got == $want;
    }
}
is_deeply(\@bad, [], 'per-zone metrics equal stats tier, typed');
for my $stat (qw(demotions promotions nvm_lines_written n_fallbacks
                  clock_probation_evictions)) {
    cmp_ok($m->{"tiercached_${stat}_total"} // -1, '==', $tier->{$stat},
        "tiercached_${stat}_total = stats tier $stat");
}
cmp_ok($m->{tiercached_index_bytes} // -1, '==', $tier->{index_bytes},
    'tiercached_index_bytes = stats tier index_bytes');

my @classes = grep { /^\d+$/ } keys %$cl;
ok(@classes >= 2, 'several classes in use');
@bad = ();
for my $c (@classes) {
    for my $z (qw(d n)) {
        for my $f (qw(pages items used_chunks free_chunks bytes hits)) {
            my $name = $f eq 'bytes' ? 'item_bytes' : $f;
            $name .= '_total' if $f eq 'hits';
            my $got = $m->{"tiercached_class_$name\{class=\"$c\","
                . "zone=\"$z\"}"};
            my $want = $cl->{$c}{"${z}_$f"};
            push @bad, "class $c $z $f: " . ($got // 'undef') . " != $want"
                unless defined $got && $got == $want;
        }
    }
    my $thr = $m->{"tiercached_class_threshold{class=\"$c\"}"};
    push @bad, "class $c threshold" unless defined $thr
        && $thr == $cl->{$c}{threshold};
}
is_deeply(\@bad, [], 'per-class metrics equal stats tier classes');

# each scrape reads the server anew
is(store(1501, 1800), 300, '300 more sets');
my ($m2, $tier2) = steady_scrape();
isnt($tier2->{n_items} + $tier2->{d_items},
    $tier->{n_items} + $tier->{d_items}, 'the cache changed');
cmp_ok($m2->{'tiercached_zone_items{zone="n"}'} // -1, '==',
    $tier2->{n_items},
    'a later scrape has the new n_items');
cmp_ok($m2->{'tiercached_zone_items{zone="d"}'} // -1, '==',
    $tier2->{d_items},
    'and the new d_items');

$srv->stop;
my $m3 = scrape();
cmp_ok($m3 ? $m3->{tiercached_up} // -1 : -1, '==', 0,
    'server gone: tiercached_up 0');
ok($m3 && !exists $m3->{'tiercached_zone_items{zone="d"}'},
    'server gone: no stale figures');

kill 'TERM', $pid;
my $done = wait_until(10, sub { waitpid($pid, WNOHANG) == $pid });
ok($done, 'SIGTERM stops the exporter');
is($? >> 8, 0, 'it exits 0') if $done;
$pid = undef if $done;

END {
    if ($pid) {
        kill 'KILL', $pid;
        waitpid($pid, 0);
    }
}

done_testing();
