#!/usr/bin/perl
# differential.t: sends the same request scripts to the server under test
# and to Debian's stock memcached 1.6.18 (both freshly started with the
# same flags) and compares the replies byte for byte, after masking what
# legitimately differs: cas values are replaced by their order of first
# appearance (so the *pattern* is compared), TTLs are rounded to 10 s (a
# TTL already passed, near 2^32, is "PAST"), `me`'s exp keeps its sign,
# other times, slab classes and item sizes in `me`/metadump are masked.
# Each script is a list of steps; a step may hold many pipelined commands
# and is terminated by an `mn` so that noreply/quiet commands are covered;
# a binary step goes over a second connection and ends with a noop.
# When MEMCACHED_BIN is the stock binary the test is a self-comparison.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;
use BinaryFrames;

my $big = 'B' x (1024 * 1024 + 100);
my $mid = join '', map { chr(33 + $_ % 90) } 1 .. 300_000;
my $k251 = 'k' x 251;
my $o33 = 'O' . ('x' x 33);
# the largest values -I 1m takes for key "a": memcached's item header
# holds non-zero client flags in 4 more bytes
my $fits = 'v' x 1048516;
my $fits_flagged = 'v' x 1048512;

# [ name, flags, [ steps... ] ]: a step is a string (sent, then read up to
# the mn reply), { raw => bytes } (sent alone, replies drained),
# { bin => frames } (sent on the script's binary connection, then read up
# to the reply of a noop), or undef (record whether the server has closed
# the connection)
my @scripts = (
    ['basic set/get', '', ["set a 0 0 1\r\n1\r\n", "get a\r\n", "get a b a\r\n", "gets a\r\n"]],
    ['flags and empty', '', ["set a 4294967295 0 0\r\n\r\nget a\r\n", "set b 1 0 3\r\nxyz\r\ngets a b\r\n"]],
    ['binary value', '', ["set b 0 0 6\r\n\0\r\n\xff\r\n\r\nget b\r\n"]],
    ['mid value', '', ["set m 0 0 " . length($mid) . "\r\n$mid\r\n", "get m\r\n"]],
    ['too large', '', ["set a 0 0 1\r\nx\r\n", "set a 0 0 " . length($big) . "\r\n$big\r\n", "get a\r\n"]],
    ['add/replace', '', ["add a 0 0 1\r\n1\r\nadd a 0 0 1\r\n2\r\nreplace a 5 0 1\r\n3\r\nreplace b 0 0 1\r\n4\r\nget a b\r\n"]],
    ['append/prepend', '', ["append a 0 0 1\r\nx\r\nset a 0 0 1\r\nm\r\nappend a 9 0 2\r\n>>\r\nprepend a 9 0 2\r\n<<\r\nget a\r\ngets a\r\n"]],
    ['cas', '', ["cas a 0 0 1 1\r\nx\r\nset a 0 0 1\r\nx\r\ngets a\r\n", "cas a 0 0 1 999999\r\ny\r\ngets a\r\n"]],
    ['cas errors', '', ["cas a 0 0 1\r\n", "cas a 0 0 1 abc\r\nx\r\n", "cas a 0 0 1 -1\r\nx\r\n"]],
    ['incr/decr', '', ["incr n 1\r\nset n 0 0 1\r\n9\r\nincr n 1\r\ndecr n 3\r\nget n\r\ndecr n 100\r\nincr n 18446744073709551615\r\nincr n 1\r\nget n\r\n"]],
    ['incr errors', '', ["set t 0 0 2\r\nab\r\nincr t 1\r\nincr t x\r\nincr t -5\r\nincr t\r\nincr\r\ndecr t 18446744073709551616\r\n"]],
    ['incr length change', '', ["set n 3 0 3\r\n100\r\ndecr n 91\r\nget n\r\nincr n 991\r\nget n\r\n"]],
    ['delete', '', ["delete a\r\nset a 0 0 1\r\n1\r\ndelete a\r\ndelete a\r\nset a 0 0 1\r\n1\r\ndelete a 0\r\ndelete a 5\r\ndelete\r\ndelete a b c\r\n"]],
    ['delete noreply', '', ["set a 0 0 1\r\n1\r\ndelete a noreply\r\ndelete a noreply\r\ndelete a 0 noreply\r\nget a\r\n"]],
    ['touch/gat', '', ["touch a 10\r\nset a 0 0 1\r\n1\r\ntouch a 100\r\nmg a t\r\ngat 0 a\r\nmg a t\r\ngats 50 a b\r\ntouch a abc\r\ngat abc a\r\ngat 1\r\ntouch a\r\n"]],
    ['expired items', '', ["set a 0 -1 1\r\n1\r\nget a\r\nset b 0 " . (time - 100) . " 1\r\n2\r\nget b\r\nadd a 0 0 1\r\n3\r\nget a\r\n"]],
    ['flush_all', '', ["set a 0 0 1\r\n1\r\nflush_all\r\nget a\r\nset b 0 0 1\r\n2\r\nflush_all 0\r\nflush_all noreply\r\nflush_all abc\r\nflush_all 1 2 3\r\nget b\r\n"]],
    ['flush_all -F', '-F', ["set a 0 0 1\r\n1\r\nflush_all\r\nflush_all noreply\r\nget a\r\n"]],
    ['noreply storage', '', ["set a 0 0 1 noreply\r\n1\r\nadd a 0 0 1 noreply\r\n2\r\nreplace a 0 0 1 noreply\r\n3\r\nappend a 0 0 1 noreply\r\n4\r\nprepend a 0 0 1 noreply\r\n5\r\nget a\r\n"]],
    ['noreply arith', '', ["set n 0 0 1\r\n5\r\nincr n 2 noreply\r\ndecr n 1 noreply\r\nincr x 1 noreply\r\nget n\r\n"]],
    ['garbage', '', ["foo\r\n\r\nGET a\r\nset\r\nget\r\n\x01\x02\xff\r\nverbosity\r\nverbosity 1\r\nverbosity 1 noreply\r\nversion\r\n"]],
    ['bad command lines', '', ["set a 0 0 -1\r\nset a x 0 1\r\nset a 0 x 1\r\nset a 0 0 1x\r\nset a 0 0\r\nset a 0 0 1 2 3 4\r\n"]],
    ['bad data chunk', '', ["set a 0 0 1\r\nxyz\r\n", "set a 0 0 3\r\nx\r\n\r\nget a\r\n", "set a 0 0 2\r\nab\n\r\n"]],
    ['long keys', '', ["get $k251\r\n", "set $k251 0 0 1\r\nx\r\n", "get a $k251\r\n", "delete $k251\r\n", "incr $k251 1\r\n", "mg $k251 v\r\n"]],
    ['long line closes', '', [{ raw => 'x' x 3000 }, undef]],
    ['HTTP closes', '', ["GET / HTTP/1.1\r\n", undef]],
    ['long multiget', '', ["set a 0 0 1\r\n1\r\nget " . join(' ', ('a') x 1000) . "\r\n"]],
    ['pipelined mix', '', ["set p1 0 0 1\r\na\r\nbogus\r\nget p1\r\nincr p1 x\r\nmg p1 v zz\r\nmg p1 v s f\r\nms p2 1 q\r\nb\r\nmg p2 v q\r\nmg p3 v q\r\nmd p2 q\r\nmd p2 q\r\n"]],
    ['meta get flags', '', ["ms k 2 F5 T0\r\nhi\r\nmg k\r\nmg k v\r\nmg k k v f s t c O123\r\nmg k O1 c t s f v k h l\r\nmg miss v\r\nmg miss v k O7\r\nmg miss v q\r\n"]],
    ['meta hit/last access', '', ["ms k 1\r\n1\r\nmg k h l\r\nmg k h l\r\nmg k u h\r\n"]],
    ['meta base64', '', ["ms YWJj 3 b\r\nxyz\r\nmg YWJj b k v\r\nget abc\r\nmg abc k v\r\nmg !!! b v\r\nmd YWJj b k\r\nmg YWJj b v\r\n", "ms a 1 b\r\nx\r\n"]],
    ['meta vivify', '', ["mg v N30 s t v c\r\nmg v N30 s t v\r\nmg v v\r\nms v 3 T30\r\nnew\r\nmg v N30 v t\r\n"]],
    ['meta recache', '', ["ms r 1 T100\r\n1\r\nmg r R30 v t\r\nmg r R200 v t\r\nmg r R200 v t\r\n"]],
    ['meta invalidate', '', ["ms s 3 c\r\nabc\r\nmd s I T30\r\nmg s v c t\r\nmg s v c\r\nms s 3 C1\r\nnew\r\nmg s v\r\n", "ms x 1 c\r\n1\r\nmd x I\r\nmg x c v\r\nms x 1 C1 I\r\n2\r\nmg x v c\r\n"]],
    ['meta set modes', '', ["ms m 1 ME\r\n1\r\nms m 1 ME\r\n2\r\nms m 1 MA\r\n3\r\nms m 1 MP\r\n0\r\nmg m v\r\nms n 1 MR\r\n1\r\nms n 1 MA\r\n1\r\nms n 1 MP\r\n1\r\nms n 1 MS\r\n1\r\nms n 1 MX\r\n1\r\nms n 1 Ms\r\n1\r\nmg n v\r\n"]],
    ['meta set flags', '', ["ms a 1 c k O9 F7 T0\r\n1\r\nmg a f\r\nms a 1 q\r\n2\r\nms a 1 q MR k O1\r\n3\r\nms b 1 q MR k O1\r\n4\r\nms a 1 I\r\n5\r\nms a 1 C0\r\n6\r\nms nx 1 C5\r\n7\r\n"]],
    ['meta set cas', '', ["ms a 1 c\r\n1\r\nmg a c\r\nms a 1 C1\r\n2\r\nms a 1 C2\r\n3\r\nmg a c v\r\n"]],
    ['meta delete', '', ["md nx\r\nmd nx q\r\nms m 1\r\n1\r\nmd m q\r\nmd m\r\nms m 1 c\r\n5\r\nmd m C1\r\nmd m k O5\r\nmd m\r\n"]],
    ['meta arithmetic', '', ["ma c\r\nma c N0 J10 v\r\nma c v\r\nma c MD D100 v t c\r\nma c M- v\r\nma c M+ D18446744073709551615 v\r\nma c MI D2 v\r\nma c Dabc\r\nma c MZ\r\nma c Md\r\nma c q\r\nma nx q\r\nma c C1 v\r\nma c T100 t v\r\nms txt 2\r\nab\r\nma txt\r\nmg c v\r\n"]],
    ['meta arithmetic base64', '', ["ma Y250 b N0 J5 v\r\nmg Y250 b k v\r\nma cnt b\r\nget cnt\r\n"]],
    ['meta debug', '', ["me nx\r\nms d 5\r\nhello\r\nme d\r\nmg d v\r\nme d\r\n"]],
    ['meta errors', '', ["mg\r\nms\r\nms a\r\nms a b\r\nms a 1 X\r\n1\r\nmg a v v\r\nmg a zz\r\nmg a O123456789012345678901234567890123\r\nmg a Oab\r\nmg a P L\r\nmx\r\n", "ms a 2\r\nabc\r\n", "ms a 2 S2\r\nab\r\n"]],
    ['meta many flags', '', ["mg a " . join(' ', ('q') x 30) . "\r\n", "mg a k v c f t s h l O1 Pfoo Lbar q u\r\n"]],
    ['meta too large', '', ["ms a 1\r\n1\r\nms a " . length($big) . "\r\n$big\r\nmg a v\r\n"]],
    ['mn', '', ["mn\r\nmn\r\n"]],
    ['stats errors', '', ["stats nonsense\r\nstats detail\r\nstats detail on\r\nstats detail dump\r\nstats detail off\r\nstats cachedump\r\nstats cachedump 99 0\r\nstats reset\r\n"]],
    ['stats detail', '', ["stats detail on\r\nget a:1\r\nset a:2 0 0 1\r\n1\r\nget a:2\r\ndelete a:2\r\nstats detail dump\r\n"]],
    ['admin commands', '', ["lru_crawler crawl 99\r\nlru_crawler bogus\r\nlru_crawler sleep 10\r\nlru_crawler tocrawl 0\r\nlru_crawler\r\nslabs reassign 99 1\r\nslabs reassign 1 1\r\nslabs reassign\r\nslabs automove 3\r\nslabs automove 1\r\nslabs bogus\r\ncache_memlimit 0\r\ncache_memlimit abc\r\ncache_memlimit 100\r\n"]],
    ['shutdown disabled', '', ["shutdown\r\nshutdown graceful\r\n"]],
    ['shutdown bad mode', '-A', ["shutdown foo\r\n"]],
    ['cas disabled', '-C', ["set a 0 0 1\r\n1\r\ngets a\r\nmg a c\r\ncas a 0 0 1 0\r\n2\r\nget a\r\n"]],
    ['version', '', ["version\r\n"]],
    ['quit', '', ["set a 0 0 1\r\n1\r\n", "quit\r\n", undef]],
    ['misc', '', ["verbosity 0\r\nverbosity\r\nverbosity a\r\nmisbehave\r\n"]],
    # with -W both refuse `watch`; t/watch.t compares the streams
    ['watch -W', '-W', [{ raw => "watch\r\n" }]],
    ['metadump', '', ["set md 0 0 1\r\n1\r\n", "lru_crawler metadump 99\r\n"]],
    # memcached refuses a metadump read behind commands whose replies are
    # still queued; get, gets, gat, gats and mn have theirs written first.
    # (BADCLASS, not the refusal, shows a metadump was accepted.)  A
    # successful dump is a raw step: memcached drops what is pipelined
    # after it (the mn of a normal step), which is not copied here.
    ['metadump pipelined', '', ["set a 0 0 1\r\n1\r\n", { raw => "lru_crawler metadump all\r\n" },
        "version\r\nlru_crawler metadump all\r\n", { raw => "get a\r\nlru_crawler metadump all\r\n" },
        "gets a\r\nget a b\r\nlru_crawler metadump 99\r\n", "gat 0 a\r\nlru_crawler metadump 99\r\n",
        "gats 0 a\r\nlru_crawler metadump 99\r\n", "version\r\nget a\r\nlru_crawler metadump 99\r\n",
        "mn\r\nlru_crawler metadump 99\r\n",
        "get a\r\nversion\r\nlru_crawler metadump 99\r\n", "set b 0 0 1\r\n2\r\nlru_crawler metadump all\r\n",
        "set c 0 0 5\r\nget a\r\nlru_crawler metadump 99\r\n", "set c 0 0 5 noreply\r\nget a\r\nlru_crawler metadump 99\r\n",
        "\r\nlru_crawler metadump 99\r\n", "ms d 2 q\r\nhi\r\nlru_crawler metadump 99\r\n",
        "mg a v q\r\nlru_crawler metadump 99\r\n", "delete zz noreply\r\nlru_crawler metadump 99\r\n",
        "version\nlru_crawler metadump 99\r\n", "version\r\n  lru_crawler metadump 99\r\n"]],
    ['metadump pipelined, crawler off', '-o no_lru_crawler', ["version\r\nlru_crawler metadump all\r\n"]],
    ['metadump pipelined, -X', '-X', ["version\r\nlru_crawler metadump all\r\n"]],
    # what scripts/difffuzz found (doc/protocol.md "Differential fuzzing")
    # memcached reads exptimes and lengths with strtol and keeps 32 bits
    ['32-bit numbers wrap', '', ["set k 0 0 1\r\nx\r\ntouch k 2147483648\r\nget k\r\n",
        "set j 0 4294967396 1\r\nx\r\nmg j t\r\nset j 0 0 4294967297\r\nx\r\nget j\r\n",
        "set l 0 0 2147483648\r\nx\r\nset l 0 2147483648 1\r\nx\r\nget l\r\n",
        "set l 0 0 1\r\nx\r\ngat 4294967396 l\r\nmg l t\r\ngat 2147483648 l\r\nget l\r\n",
        "ms m 4294967297 T4294967396\r\ny\r\nmg m t v\r\nmg m T2147483648\r\nmg m v\r\n",
        "ms m 2147483649\r\nz\r\nmg n N4294967396 t\r\nset o 0 99999999999999999999 1\r\nx\r\n"]],
    # a store refused as too large unlinks the old value for set, and for
    # ms in every mode and with a cas
    ['too large drops the old value', '', [map({ "set a 0 0 3\r\nold\r\n$_\r\n$big\r\nmg a v\r\n" }
        'set a 0 0 ' . length($big), 'add a 0 0 ' . length($big), 'replace a 0 0 ' . length($big),
        'append a 0 0 ' . length($big), 'prepend a 0 0 ' . length($big), 'cas a 0 0 ' . length($big) . ' 1',
        map({ 'ms a ' . length($big) . " $_" } 'MS', 'ME', 'MA', 'MP', 'MR', 'C1', 'C999999', 'I', 'q', 'MA C999'))]],
    ['binary too large drops the old value', '', [map({ ("set a 0 0 3\r\nold\r\n", { bin => $_ }, "get a\r\n") }
        bin_req('set', key => 'a', ext => store_ext(0, 0), value => $big, cas => 1),
        bin_req('setq', key => 'a', ext => store_ext(0, 0), value => $big, cas => 999),
        bin_req('set', key => 'a', ext => store_ext(0, 0), value => $big),
        bin_req('add', key => 'a', ext => store_ext(0, 0), value => $big, cas => 1),
        bin_req('replace', key => 'a', ext => store_ext(0, 0), value => $big, cas => 1),
        bin_req('append', key => 'a', value => $big, cas => 1))]],
    ['value size limit and client flags', '', ["set a 0 0 " . length($fits) . "\r\n$fits\r\n",
        "set a 1 0 " . length($fits) . "\r\n$fits\r\n", "set a 1 0 " . length($fits_flagged) . "\r\n$fits_flagged\r\n",
        "ms a " . length($fits) . " F7\r\n$fits\r\nmg a s f\r\n",
        { bin => bin_req('set', key => 'a', ext => store_ext(9, 0), value => $fits) }, "mg a s f\r\n"]],
    # a cas (even C0) makes ms's set and replace modes a cas store
    ['ms cas with modes', '', ["ms k 1 MR C0\r\n1\r\nms k 1 C0\r\n1\r\nms k 1 MR C5\r\n1\r\nmg k v\r\n",
        "set k 0 0 1\r\n1\r\nms k 1 MR C0 I\r\n2\r\nms k 1 MR C0\r\n3\r\nmg k v\r\n",
        "ms k 1 MA C0\r\n4\r\nms k 1 ME C0\r\n5\r\nmg k v\r\n"]],
    # memcached prints a remaining TTL as an unsigned 32-bit number, and
    # N gives a vivified item its TTL in the flags' order
    ['meta TTLs already passed', '', ["mg v N-1 s t v c\r\nma x N-1 t v\r\nset y 0 0 1\r\n1\r\nmg y T-1 t\r\n",
        "mg z N100 T-1 t v\r\nmg a t N30\r\nmg a t\r\nmg b N30 t\r\nmg c v s t c N30 f\r\n"]],
    ['me output', '', ["set a 0 100 1\r\n1\r\nme a\r\nset b 0 0 1\r\n1\r\nme b\r\n",
        "set c 0 0 1\r\n1\r\nme Yw== b\r\nms AGJpbg== 1 b\r\n2\r\nme AGJpbg== b\r\n"]],
    # mg and ma act before they meet an overlong opaque, ms checks its
    # mode first, md checks before it acts
    ['meta opaque too long', '', ["set x 0 0 1\r\n1\r\nmg x $o33 v\r\nmg x h\r\nmg zz N30 $o33 q\r\nmg zz v t\r\n",
        "mg w $o33 N100\r\nmg w t\r\nset a 0 0 1\r\n1\r\nmg a T100 $o33\r\nmg a t\r\nmg a $o33 T200\r\nmg a t\r\n",
        "ma n N0 J5 $o33 v\r\nmg n v\r\nma x $o33 q\r\nmg x v\r\nma b N0 T50 $o33\r\nmg b t v\r\n",
        "ma nx $o33\r\nma n Md $o33\r\nms n 1 Mz $o33\r\n1\r\nmd x $o33\r\nmg x v\r\nms x 1 $o33\r\n7\r\nmg x v\r\n"]],
    # an empty value is not a number before its cas is compared
    ['incr of an empty value with a cas', '', ["ms e 0\r\n\r\nma e C999 v\r\nma e v\r\n",
        { bin => bin_req('incr', key => 'e', ext => incr_ext(1, 0, 0), cas => 999) }]],
    # the same over keys in the N-zone (the fourth field: flags for the
    # server under test alone): an add over a key is a use, not a fetch,
    # and a decr memcached does in place keeps the item's fetched flag
    ['add over an N key, then mg h', '', ["ms n 3 T0\r\nabc\r\n", "add n 0 0 1\r\nx\r\n",
        "mg n v h\r\nmg n h\r\n"], '-o nvm_size=64m,tier_placement=nvm'],
    ['decr of a fetched N key, then mg h', '', ["ms a 2 T0\r\n20\r\n", "mg a c\r\n",
        "decr a 6\r\nmg a h s c\r\n", "incr a 100\r\nmg a h s v\r\n"],
        '-o nvm_size=64m,tier_placement=nvm'],
);

# mask values that legitimately differ
sub mask {
    my ($text) = @_;
    my %cas;
    my $next = 0;
    my $cas_id = sub { my $c = shift; return $c eq '0' ? 'CAS0' : ($cas{$c} //= 'CAS' . ++$next) };
    my @out;
    for my $line (split /(?<=\n)/, $text) {
        if ($line =~ /^VALUE \S+ \d+ \d+ (\d+)\r\n$/) {
            my $c = $1;
            $line =~ s/ \d+\r\n$/ ' ' . $cas_id->($c) . "\r\n"/e;
        }
        elsif ($line =~ /^(?:VA \d+|HD|EN|NS|EX|NF)(?: |\r\n)/) {
            $line =~ s/(?<= )c(\d+)(?=[ \r])/'c' . $cas_id->($1)/ge;
            $line =~ s/(?<= )t(\d+)(?=[ \r])/'t' . ($1 >= 2**31 ? 'PAST' : int(($1 + 5) \/ 10) * 10)/ge;
            $line =~ s/(?<= )l(\d+)(?=[ \r])/l*/g;
        }
        elsif ($line =~ /^ME /) {
            $line =~ s/ cas=(\d+)/' cas=' . $cas_id->($1)/e;
            $line =~ s/ exp=(-?)(\d+)/" exp=$1" . ("$1$2" eq '-1' ? 1 : int(($2 + 5) \/ 10) * 10)/e;
            $line =~ s/ (la|cls|size)=-?\d+/ $1=*/g;
        }
        elsif ($line =~ /^key=/) {
            $line =~ s/ (la|exp|cls|size)=-?\d+/ $1=*/g;
            $line =~ s/ cas=(\d+)/' cas=' . $cas_id->($1)/e;
        }
        push @out, $line;
    }
    return join '', @out;
}

# the replies of a binary step, one line each, cas values numbered
sub bin_step {
    my ($server, $bsock, $frames, $cas) = @_;
    $$bsock //= $server->sock;
    my $replies = bin_sync($$bsock, $frames, 3);
    return '<CLOSED OR TIMEOUT>' unless $replies;
    return join '', map { bin_desc($_, $cas) . "\n" } @$replies;
}

sub run_script {
    my ($server, $steps) = @_;
    my $sock = $server->sock;
    my ($bsock, %bin_cas);
    my @replies;
    for my $step (@$steps) {
        if (ref $step && exists $step->{bin}) {
            push @replies, bin_step($server, \$bsock, $step->{bin}, \%bin_cas);
            next;
        }
        if (ref $step) {
            # raw bytes, no mn after them: collect whatever comes back
            mc_send($sock, $step->{raw});
            push @replies, drain($sock, 0.5);
            next;
        }
        if (!defined $step) {
            push @replies, wait_closed($sock, 3) ? '<CLOSED>' : '<OPEN>';
            last;
        }
        push @replies, send_sync($sock, $step, timeout => 3);
        last if $replies[-1] =~ /<EOF>\z/;
    }
    close $sock;
    close $bsock if $bsock;
    return join "--step--\n", @replies;
}

diag('self-comparison: the server under test is the stock binary') if server_is_stock();
for my $s (@scripts) {
    my ($name, $flags, $steps, $ours_only) = @$s;
    # fresh servers per script keep cas patterns and state independent
    my $ours = new_memcached(join ' ', grep { $_ ne '' } $flags,
        server_is_stock() ? '' : $ours_only // '');
    my $stock = stock_memcached($flags);
    my $a = mask(run_script($ours, $steps));
    my $b = mask(run_script($stock, $steps));
    reply_is($a, $b, "same replies: $name");
    diag("$name: " . escape_bytes($a)) if $ENV{DIFF_DEBUG} && $a =~ /TIMEOUT/;
    ok($ours->alive, "server under test alive after: $name");
    $ours->stop;
    $stock->stop;
}

done_testing();
