#!/usr/bin/perl
# tier_commands.t: every command behaves the same whichever zone holds the
# key (doc/tiering.md "Stores": the protocol is zone-agnostic).  The same
# request scripts run, in lock step, against
#   plain   - no N-zone (plain memcached behaviour, the reference)
#   dram    - an N-zone with tier_policy=dram (keys in D)
#   nvm     - tier_policy=nvm (every key in N)
#   place_n - hmcached, tier_placement=nvm, threshold 2^Q (keys stay in N)
#   promote - hmcached, tier_placement=nvm, threshold 1, sync promotion
#             (keys move N->D in the middle of the scripts)
#   dlru_n  - duallru, tier_placement=nvm (keys start in N; a key read
#             three times gets Fogcached's Promote flag and the tier
#             thread moves it N->D while the scripts run)
#   dlru_d  - duallru, keys in D (the D-zone's segmented LRU)
#   hotter  - tier_policy=hotter, tier_placement=nvm, sync promotion (a key
#             read twice outranks D's coldest item and moves N->D)
#   tlc     - tier_policy=tlc, tier_placement=nvm, sync promotion (every
#             N hit moves N->D)
#   hmhc    - tier_policy=hmhc, tier_placement=nvm, threshold 1, sync
#             promotion (D's victims chosen by hyperbolic caching)
# and the replies must be identical after masking what legitimately
# differs: cas values are replaced by their order of first appearance,
# remaining TTLs are rounded to 50 s, last-access times and `me` sizes and
# classes are hidden.  Covered: get/gets, incr/decr (length changes,
# wrap), append/prepend (class changes), cas (good, bad, missing),
# add/replace, touch, gat/gats, mg (v f t c k s h l O q, N vivify,
# R recache, T), ms (modes E A P R S, I invalidate, C, F, T, q), md (q, C,
# I), ma (modes, N J D, C, T, q), delete, noreply, flush_all (now and
# delayed) and expiry via the debug build's `debugtime`.  The zone each
# server really used is checked through `stats tier`.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

srand($ENV{TIER_SEED} // 42);

my %configs = (
    plain   => '-m 64 -t 1',
    dram    => '-m 64 -t 1 -o nvm_size=64m,tier_policy=dram',
    nvm     => '-m 64 -t 1 -o nvm_size=64m,tier_policy=nvm',
    place_n => '-m 64 -t 1 -o nvm_size=64m,tier_policy=hmcached,'
        . 'tier_placement=nvm,tier_threshold=256,tier_promote=sync',
    promote => '-m 64 -t 1 -o nvm_size=64m,tier_policy=hmcached,'
        . 'tier_placement=nvm,tier_threshold=1,tier_promote=sync',
    dlru_n  => '-m 64 -t 1 -o nvm_size=64m,tier_policy=duallru,'
        . 'tier_placement=nvm',
    dlru_d  => '-m 64 -t 1 -o nvm_size=64m,tier_policy=duallru',
    hotter  => '-m 64 -t 1 -o nvm_size=64m,tier_policy=hotter,'
        . 'tier_placement=nvm,tier_promote=sync',
    tlc     => '-m 64 -t 1 -o nvm_size=64m,tier_policy=tlc,'
        . 'tier_placement=nvm,tier_promote=sync',
    hmhc    => '-m 64 -t 1 -o nvm_size=64m,tier_policy=hmhc,'
        . 'tier_placement=nvm,tier_threshold=1,tier_promote=sync',
);
my @names = qw(plain dram nvm place_n promote dlru_n dlru_d hotter tlc hmhc);

my $v3k = random_bytes(3000, join '', map { chr } 32 .. 126);
my $v5k = random_bytes(5000);
my $v60k = random_bytes(60000);
my $v100 = random_bytes(100, 'abcdefghij');

# [ name, [ steps ] ]: a step is a string (sent, read up to the mn reply)
# or { debugtime => seconds } (the clock of every server moves on)
my @scripts = (
    ['get/gets', [
        "set a 123 0 3000\r\n$v3k\r\n",
        "get a\r\ngets a\r\nget a a b\r\ngets b a\r\n",
        "set b 4294967295 0 5000\r\n$v5k\r\nget a b\r\n",
        "set e 0 0 0\r\n\r\nget e\r\nmg e v s f\r\n",
    ]],
    ['incr/decr', [
        "set n 5 0 1\r\n9\r\nincr n 1\r\nget n\r\n",
        "incr n 90\r\nincr n 900\r\nget n\r\ndecr n 991\r\nget n\r\n",
        "set m 0 0 3\r\n100\r\ndecr m 91\r\nget m\r\nmg m v s\r\n",
        "set w 0 0 20\r\n18446744073709551615\r\nincr w 1\r\nget w\r\n",
        "decr w 5\r\nincr nx 1\r\nset t 0 0 2\r\nab\r\nincr t 1\r\n",
        "set big 0 0 3000\r\n$v3k\r\nincr big 1\r\n",
        "incr n 7 noreply\r\ndecr n 2 noreply\r\nget n\r\n",
    ]],
    ['append/prepend', [
        "append a 0 0 1\r\nx\r\nprepend a 0 0 1\r\nx\r\n",
        "set a 7 0 100\r\n$v100\r\nappend a 0 0 3\r\n>>>\r\n"
            . "prepend a 0 0 3\r\n<<<\r\nget a\r\n",
        "append a 0 0 5000\r\n$v5k\r\nget a\r\nmg a s f\r\n",
        "prepend a 0 0 3000\r\n$v3k\r\nget a\r\n",
        "set s 1 0 1\r\nm\r\nappend s 0 0 1 noreply\r\n+\r\n"
            . "prepend s 0 0 1 noreply\r\n-\r\nget s\r\n",
        "set z 0 0 60000\r\n$v60k\r\nappend z 0 0 5000\r\n$v5k\r\nget z\r\n",
    ]],
    ['cas', [
        "cas a 0 0 1 999999999\r\nx\r\n",
        "set a 1 0 3000\r\n$v3k\r\ngets a\r\n",
        "\@cas a 2 0 1\r\nx\r\ngets a\r\n",
        "\@cas a 3 0 1\r\ny\r\n",
        "cas a 4 0 1 999999999\r\nz\r\ncas a 0 0 1 abc\r\nx\r\nget a\r\n",
        "touch a 100\r\n\@cas a 5 0 5000\r\n$v5k\r\nget a\r\n",
        "delete a\r\n\@cas a 6 0 1\r\nq\r\n",
    ]],
    ['add/replace', [
        "add a 1 0 3000\r\n$v3k\r\nadd a 2 0 1\r\nx\r\nget a\r\n",
        "replace a 3 0 100\r\n$v100\r\nget a\r\nreplace b 0 0 1\r\nx\r\n",
        "delete a\r\nadd a 4 0 1\r\ny\r\nreplace a 5 0 5000\r\n$v5k\r\n"
            . "get a\r\n",
        "add a 6 0 1 noreply\r\nz\r\nreplace a 7 0 1 noreply\r\nw\r\n"
            . "get a\r\n",
    ]],
    ['touch/gat', [
        "touch a 10\r\nset a 3 0 3000\r\n$v3k\r\ntouch a 100\r\nmg a t\r\n",
        "gat 0 a\r\nmg a t\r\ngats 50 a b\r\nmg a t v\r\n",
        "gat 1000 a b\r\ntouch a abc\r\ngat abc a\r\ngat 1\r\n",
        "touch b 10 noreply\r\ntouch a 20 noreply\r\nmg a t\r\n",
    ]],
    ['meta get flags', [
        "ms k 3000 F5 T0\r\n$v3k\r\n",
        "mg k\r\nmg k v\r\nmg k k v f s t c O123\r\n",
        "mg k O1 c t s f k h l\r\nmg k h l\r\nmg k u h\r\n",
        "mg miss v\r\nmg miss v k O7\r\nmg miss v q\r\nmg k q\r\n"
            . "mg k v q k\r\n",
        "ms j 5000 c\r\n$v5k\r\nmg j s v\r\n",
    ]],
    ['meta vivify/recache/T', [
        "mg v N30 s t v c\r\nmg v N30 s t v\r\nmg v v\r\n",
        "ms v 3 T30\r\nnew\r\nmg v N30 v t\r\n",
        "ms r 3000 T100\r\n$v3k\r\nmg r R30 t s\r\nmg r R200 t s\r\n"
            . "mg r R200 t s\r\n",
        "mg r T500 t\r\nmg r t\r\nmg r T0 t\r\nmg r t\r\n",
    ]],
    ['meta set', [
        "ms m 1 ME\r\n1\r\nms m 1 ME\r\n2\r\nms m 1 MA\r\n3\r\n"
            . "ms m 1 MP\r\n0\r\nmg m v\r\n",
        "ms n 1 MR\r\n1\r\nms n 1 MA\r\n1\r\nms n 1 MP\r\n1\r\n"
            . "ms n 1 MS\r\n1\r\nms n 1 MX\r\n1\r\nmg n v\r\n",
        "ms a 3000 c k O9 F7 T0\r\n$v3k\r\nmg a f s\r\n",
        "ms a 1 q\r\n2\r\nms a 1 q MR k O1\r\n3\r\nms b 1 q MR k O1\r\n4\r\n",
        "ms a 1 I\r\n5\r\nms a 1 C0\r\n6\r\nms nx 1 C5\r\n7\r\nmg a v c\r\n",
        "ms p 5000 MA\r\n$v5k\r\nms p 5000\r\n$v5k\r\n"
            . "ms p 100 MA\r\n$v100\r\nms p 100 MP\r\n$v100\r\nmg p v s\r\n",
    ]],
    ['meta set cas/invalidate', [
        "ms a 3000 c\r\n$v3k\r\nmg a c\r\n",
        "ms a 1 C999999999\r\n2\r\nmg a c s\r\n",
        "\@ms a 1 C\r\n3\r\nmg a c v\r\n",
        "ms s 3 c\r\nabc\r\nmd s I T30\r\nmg s v c t\r\nmg s v c\r\n",
        "ms s 3 C999999999\r\nnew\r\nmg s v\r\n",
        "ms x 1 c\r\n1\r\nmd x I\r\nmg x c v\r\n",
        "\@ms x 1 I C\r\n2\r\nmg x v c\r\n",
    ]],
    ['meta delete', [
        "md nx\r\nmd nx q\r\nms m 3000\r\n$v3k\r\nmd m q\r\nmd m\r\n",
        "ms m 1 c\r\n5\r\nmd m C999999999\r\nmd m k O5\r\nmd m\r\n",
        "ms m 5000 c\r\n$v5k\r\n",
        "\@md m C\r\nmg m v\r\n",
        "ms i 100\r\n$v100\r\nmd i I T30\r\nmg i v t c\r\nmg i v\r\n"
            . "md i I\r\nmd i\r\nmg i v\r\n",
    ]],
    ['meta arithmetic', [
        "ma c\r\nma c N0 J10 v\r\nma c v\r\nma c MD D100 v t c\r\n",
        "ma c M- v\r\nma c M+ D18446744073709551615 v\r\nma c MI D2 v\r\n",
        "ma c Dabc\r\nma c MZ\r\nma c q\r\nma nx q\r\nma c C999999999 v\r\n",
        "ma c T100 t v\r\nms txt 2\r\nab\r\nma txt\r\nmg c v\r\n",
        "\@ma c C v\r\nma c N0 J7 v\r\n",
        "set c 0 0 3000\r\n$v3k\r\nma c v\r\n",
    ]],
    ['delete', [
        "delete a\r\nset a 0 0 3000\r\n$v3k\r\ndelete a\r\ndelete a\r\n",
        "set a 0 0 1\r\n1\r\ndelete a 0\r\ndelete a 5\r\ndelete\r\n",
        "set a 0 0 5000\r\n$v5k\r\ndelete a noreply\r\ndelete a noreply\r\n"
            . "get a\r\n",
    ]],
    ['flush_all', [
        "set a 0 0 3000\r\n$v3k\r\nset b 0 0 1\r\n1\r\nflush_all\r\n"
            . "get a b\r\nmg a v\r\n",
        "set c 0 0 5000\r\n$v5k\r\nadd c 0 0 1\r\nx\r\nflush_all 0\r\n"
            . "incr c 1\r\nappend c 0 0 1\r\ny\r\n",
        "set d 0 0 100\r\n$v100\r\nflush_all 2\r\nget d\r\n",
        { debugtime => 3 },
        "get d\r\nadd d 0 0 1\r\nz\r\nget d\r\n",
    ]],
    # short TTLs of 20 s, not 2: the servers answer each step one after
    # another, seconds apart under a sanitizer on a busy machine, and a
    # TTL must not run out between two steps in real time
    ['expiry', [
        "set a 0 20 3000\r\n$v3k\r\nset b 0 100 1\r\nb\r\nms c 100 T20\r\n"
            . "$v100\r\nset d 0 20 1\r\nd\r\nget a b\r\nmg c v t\r\n",
        "touch d 100\r\ngat 100 b\r\n",
        { debugtime => 40 },
        "get a b c d\r\nmg a v\r\nadd a 0 0 1\r\nA\r\nincr c 1\r\n"
            . "append a 0 0 1\r\n+\r\nget a\r\nmg b t v\r\nmg d t\r\n",
        "ms s 100 T20\r\n$v100\r\nmd s I T20\r\n",
        { debugtime => 40 },
        "mg s v c\r\n",
    ]],
    ['many keys', [
        join('', map { "set k$_ $_ 0 " . (1 + $_ * 37) . "\r\n"
            . ('x' x (1 + $_ * 37)) . "\r\n" } 1 .. 60),
        'get ' . join(' ', map { "k$_" } 1 .. 60) . "\r\n",
        join('', map { "incr k$_ 1\r\nappend k$_ 0 0 1\r\n.\r\n" } 1 .. 60),
        'gets ' . join(' ', map { "k$_" } reverse 1 .. 60) . "\r\n",
        join('', map { "delete k$_\r\n" } grep { $_ % 3 == 0 } 1 .. 60),
        'get ' . join(' ', map { "k$_" } 1 .. 60) . "\r\n",
    ]],
);

# a step whose text starts with '@' uses the cas seen last on that
# server: "@cas k F T L\r\n" gets "cas k F T L <cas>", "@ms k L C" gets
# "C<cas>", "@md k C" / "@ma k C" likewise
sub fill_cas {
    my ($step, $last) = @_;
    return $step unless $step =~ /^\@/m;
    $last //= 0;
    $step =~ s/^\@(cas .*?)\r\n/$1 $last\r\n/mg;
    $step =~ s/^\@((?:ms|md|ma) .*?) C(?= |\r\n)/$1 C$last/mg;
    return $step;
}

# the last cas value a reply showed (gets, mg/ms c)
sub last_cas {
    my ($reply, $prev) = @_;
    my $c = $prev;
    for my $l (split /\n/, $reply) {
        if ($l =~ /^VALUE \S+ \d+ \d+ (\d+)\r$/) {
            $c = $1;
        }
        elsif ($l =~ /^(?:VA \d+|HD|EN|NS|EX|NF)\b.* c(\d+)\b/) {
            $c = $1;
        }
    }
    return $c;
}

# hide what legitimately differs between servers (see the top comment)
sub mask {
    my ($text) = @_;
    my %seen;
    my $n = 0;
    my $id = sub {
        my ($c) = @_;
        return 'C0' if $c eq '0';
        $seen{$c} = 'C' . ++$n unless exists $seen{$c};
        return $seen{$c};
    };
    my $out = '';
    for my $l (split /(?<=\n)/, $text) {
        if ($l =~ /^VALUE (\S+ \d+ \d+) (\d+)\r\n\z/) {
            $l = "VALUE $1 " . $id->($2) . "\r\n";
        }
        elsif ($l =~ /^(?:VA \d+|HD|EN|NS|EX|NF)(?: |\r\n)/) {
            $l =~ s/ c(\d+)(?=[ \r])/' c' . $id->($1)/ge;
            # the servers answer one after another, seconds apart on a
            # busy machine: 50 s still tells 60 from 20 and from none
            $l =~ s/ t(\d+)(?=[ \r])/' t' . 50 * int(($1 + 25) \/ 50)/ge;
            $l =~ s/ l\d+(?=[ \r])/ l*/g;
        }
        elsif ($l =~ /^ME /) {
            $l =~ s/ (cas)=(\d+)/" $1=" . $id->($2)/ge;
            $l =~ s/ (la|exp|cls|size)=-?\d+/ $1=*/g;
        }
        $out .= $l;
    }
    return $out;
}

my $has_debugtime;
my %hits;    # name => { d => , n => } summed over scripts
for my $sc (@scripts) {
    my ($title, $steps) = @$sc;
    my %srv = map { $_ => new_memcached($configs{$_}) } @names;
    if (!defined $has_debugtime) {
        $has_debugtime = $srv{plain}->has_debugtime;
        diag('no debugtime command (not a debug build): scripts with '
            . 'clock steps are skipped') unless $has_debugtime;
    }
    if (!$has_debugtime && grep { ref $_ } @$steps) {
        SKIP: { skip "$title: needs debugtime (debug build)", 1 }
        $_->stop for values %srv;
        next;
    }
    my %sock = map { $_ => $srv{$_}->sock } @names;
    my %before = map { $_ => $srv{$_}->tier_stats } @names;
    my %reply = map { $_ => '' } @names;
    my %cas;
    my $i = 0;
    for my $step (@$steps) {
        $i++;
        if (ref $step) {
            # move every clock, then wait once for the timers to tick
            for my $n (@names) {
                my $r = send_recv($sock{$n}, "debugtime $step->{debugtime}\r\n");
                diag("$n: debugtime: " . escape_bytes($r))
                    unless $r eq "OK\r\n";
            }
            sleep 1.2;
            next;
        }
        for my $n (@names) {
            my $text = fill_cas($step, $cas{$n});
            my $r = send_sync($sock{$n}, $text, timeout => 5);
            $cas{$n} = last_cas($r, $cas{$n});
            $reply{$n} .= "--step $i--\n$r";
        }
    }
    diag("$title (plain):\n" . escape_bytes($reply{plain}, 3000))
        if ($ENV{TIER_DEBUG} // 0) > 1;
    my $ref = mask($reply{plain});
    unlike($reply{plain}, qr/<(?:TIMEOUT|EOF)>/,
        "$title: reference server answered everything");
    for my $n (grep { $_ ne 'plain' } @names) {
        reply_is(mask($reply{$n}), $ref, "$title: $n replies = plain");
    }
    for my $n (@names) {
        ok($srv{$n}->alive, "$title: $n alive");
        my $t = $srv{$n}->tier_stats;
        diag("$title: $n: d_items=" . ($t->{d_items} // '?') . ' n_items='
            . ($t->{n_items} // '?') . ' d_hits=' . ($t->{d_hits} // '?')
            . ' n_hits=' . ($t->{n_hits} // '?') . ' promotions='
            . ($t->{promotions} // '?')) if $ENV{TIER_DEBUG};
        $hits{$n}{answered}++ if defined $t->{d_hits} && defined $t->{n_hits}
            && defined $before{$n}{d_hits};
        for my $z (qw(d n)) {
            $hits{$n}{$z} += ($t->{"${z}_hits"} // 0)
                - ($before{$n}{"${z}_hits"} // 0);
        }
        $hits{$n}{promotions} += $t->{promotions} // 0;
        for my $z (qw(d_items n_items)) {
            next unless defined $t->{$z};
            $hits{$n}{"max_$z"} = $t->{$z}
                if $t->{$z} > ($hits{$n}{"max_$z"} // -1);
        }
        $srv{$n}->stop;
    }
}

# the zones really used (otherwise the comparisons above prove nothing)
for my $n (@names) {
    is($hits{$n}{answered} // 0, scalar @scripts,
        "$n: stats tier answered d_hits/n_hits after every script");
}
is($hits{dram}{n} // -1, 0, 'dram: no request served by the N-zone');
cmp_ok($hits{dram}{d} // 0, '>', 100, 'dram: requests served by the D-zone');
is($hits{dram}{max_n_items} // -1, 0, 'dram: n_items stayed 0');
is($hits{nvm}{d} // -1, 0, 'nvm: no request served by the D-zone');
cmp_ok($hits{nvm}{n} // 0, '>', 100, 'nvm: requests served by the N-zone');
is($hits{nvm}{max_d_items} // -1, 0, 'nvm: d_items stayed 0');
cmp_ok($hits{place_n}{n} // 0, '>', 100,
    'place_n: requests served by the N-zone');
is($hits{place_n}{promotions} // -1, 0, 'place_n: no promotion');
cmp_ok($hits{promote}{promotions} // 0, '>', 10,
    'promote: keys were promoted during the scripts');
cmp_ok($hits{promote}{n} // 0, '>', 10,
    'promote: requests served by the N-zone');
cmp_ok($hits{promote}{d} // 0, '>', 10,
    'promote: requests served by the D-zone');
cmp_ok($hits{dlru_n}{n} // 0, '>', 100,
    'dlru_n: requests served by the N-zone');
cmp_ok($hits{dlru_n}{promotions} // 0, '>', 0,
    'dlru_n: keys were promoted through Move to D during the scripts');
for my $n (qw(hotter tlc hmhc)) {
    cmp_ok($hits{$n}{promotions} // 0, '>', 10,
        "$n: keys were promoted during the scripts");
    cmp_ok($hits{$n}{n} // 0, '>', 10, "$n: requests served by the N-zone");
    cmp_ok($hits{$n}{d} // 0, '>', 10, "$n: requests served by the D-zone");
}
is($hits{dlru_d}{n} // -1, 0, 'dlru_d: no request served by the N-zone');
cmp_ok($hits{dlru_d}{d} // 0, '>', 100,
    'dlru_d: requests served by the D-zone');

done_testing();
