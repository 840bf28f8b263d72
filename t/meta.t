#!/usr/bin/perl
# meta.t: the meta protocol of memcached 1.6.18 (mg, ms, md, ma, mn, me)
# with every flag the spec (protocol.txt) lists: return flags k/v/f/s/t/c/
# h/l/O/b, quiet mode q, u (no bump), vivify N with W/Z, recache R, TTL
# update T, stale items (md I, ms I) and X, ms modes E/A/P/R/S and C/I,
# ma modes and N/J/D/T/C, base64 keys, opaque tokens, pipelining with mn,
# and the error replies for bad flags, modes and lines.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $server = new_memcached();
my $sock = $server->sock;

sub req { return send_recv($sock, $_[0]) }
sub cas_of {
    my ($key) = @_;
    my ($c) = req("mg $key c\r\n") =~ /^HD c(\d+)\r\n/;
    return $c;
}

# ---- mn / basic mg and ms
reply_is(req("mn\r\n"), "MN\r\n", 'mn');
reply_is(req("mg nokey v\r\n"), "EN\r\n", 'mg miss');
reply_is(req("ms k 2\r\nhi\r\n"), "HD\r\n", 'ms');
reply_is(req("mg k\r\n"), "HD\r\n", 'mg hit without flags');
reply_is(req("mg k v\r\n"), "VA 2\r\nhi\r\n", 'mg v');
reply_is(req("get k\r\n"), "VALUE k 0 2\r\nhi\r\nEND\r\n", 'ms item visible to get');
send_recv($sock, "set t 77 0 3\r\nabc\r\n");
reply_is(req("mg t s f v k\r\n"), "VA 3 s3 f77 kt\r\nabc\r\n", 'mg s f k on a set item');

# ---- return flags in request order
reply_is(req("ms ord 3 F9 T0\r\nxyz\r\n"), "HD\r\n", 'ms F T');
my $c = cas_of('ord');
ok($c && $c > 0, 'mg c returns a cas');
my ($gets_cas) = mem_gets($sock, 'ord');
is($gets_cas, $c, 'mg c equals gets cas');
reply_is(req("mg ord k v f s t c O123\r\n"), "VA 3 kord f9 s3 t-1 c$c O123\r\nxyz\r\n",
    'flags returned in request order');
reply_is(req("mg ord O123 c t s f v k\r\n"), "VA 3 O123 c$c t-1 s3 f9 kord\r\nxyz\r\n",
    'reversed order');

# ---- h / l / u
reply_is(req("ms hl 1\r\n1\r\n"), "HD\r\n", 'ms hl');
reply_is(req("mg hl h l\r\n"), "HD h0 l0\r\n", 'h0 before first fetch');
reply_is(req("mg hl h\r\n"), "HD h1\r\n", 'h1 after a fetch');

# ---- ms c, F limits, invalid flags
like(req("ms cc 1 c\r\n1\r\n"), qr/^HD c\d+\r\n\z/, 'ms c returns the new cas');
reply_is(req("ms f32 1 F4294967295\r\n1\r\n"), "HD\r\n", 'ms F 2^32-1');
reply_is(req("mg f32 f\r\n"), "HD f4294967295\r\n", 'flags 2^32-1 via meta');

# ---- quiet mode
reply_is(send_sync($sock, "mg nokey v q\r\nmg nokey2 q k O9\r\n"), '', 'mg q: misses silent');
reply_is(send_sync($sock, "mg k v q\r\n"), "VA 2\r\nhi\r\n", 'mg q: hits still reply');
reply_is(send_sync($sock, "mg k q\r\n"), "HD\r\n", 'mg q: HD on hit still sent');
reply_is(send_sync($sock, "ms q1 1 q\r\n1\r\nms q1 1 q ME\r\n2\r\n"), "NS\r\n",
    'ms q: HD suppressed, NS sent');
reply_is(send_sync($sock, "md q1 q\r\nmd q1 q\r\n"), "NF\r\n", 'md q: HD suppressed, NF sent');
reply_is(send_sync($sock, "ma nokey q\r\n"), "NF\r\n", 'ma q: NF sent');

# ---- opaque and k
reply_is(req("mg nokey O5 k\r\n"), "EN O5 knokey\r\n", 'miss: EN carries O and k');
reply_is(req("mg k Oabcdefgh k\r\n"), "HD Oabcdefgh kk\r\n", 'opaque copied back');
reply_is(req("mg k O123456789012345678901234567890123\r\n"),
    "CLIENT_ERROR opaque token too long\r\n", 'opaque over 32 bytes');
reply_is(req("ms k 2 O77 k\r\nhi\r\n"), "HD O77 kk\r\n", 'ms O k');
reply_is(req("md nokey O78 k\r\n"), "NF O78 knokey\r\n", 'md miss with O k');

# ---- base64 keys
reply_is(req("ms YWJj 3 b\r\nxyz\r\n"), "HD\r\n", 'ms with base64 key (abc)');
reply_is(req("get abc\r\n"), "VALUE abc 0 3\r\nxyz\r\nEND\r\n", 'binary key decoded');
reply_is(req("mg YWJj b k v\r\n"), "VA 3 kYWJj b\r\nxyz\r\n", 'mg b k returns base64 key and b');
reply_is(req("mg !!!! b v\r\n"), "CLIENT_ERROR error decoding key\r\n", 'bad base64');
my $binkey = "\x00\xff\r\n key";
require MIME::Base64;
my $b64 = MIME::Base64::encode_base64($binkey, '');
reply_is(req("ms $b64 1 b\r\nQ\r\n"), "HD\r\n", 'binary key with NUL/CR/LF/space');
reply_is(req("mg $b64 b v\r\n"), "VA 1\r\nQ\r\n", 'binary key round trip');
reply_is(req("md $b64 b\r\n"), "HD\r\n", 'md with binary key');

# ---- T: TTL update, t: TTL
reply_is(req("ms ttl 1 T100\r\n1\r\n"), "HD\r\n", 'ms T100');
like(req("mg ttl t\r\n"), qr/^HD t(?:100|99)\r\n\z/, 'mg t');
like(req("mg ttl T300 t\r\n"), qr/^HD t(?:300|299)\r\n\z/, 'mg T updates TTL');
reply_is(req("mg ttl T0 t\r\n"), "HD t-1\r\n", 'mg T0 clears TTL');
reply_is(req("ms ttl 1 T-1\r\n1\r\n"), "HD\r\n", 'ms T-1');
reply_is(req("mg ttl v\r\n"), "EN\r\n", 'ms T-1 item expired');

# ---- vivify N, W and Z
reply_is(req("mg viv N30 s t v\r\n"), "VA 0 s0 t30 W\r\n\r\n", 'N: miss creates stub, W');
reply_is(req("mg viv N30 s t v\r\n"), "VA 0 s0 t30 Z\r\n\r\n", 'N: second client gets Z');
reply_is(req("mg viv v\r\n"), "VA 0 Z\r\n\r\n", 'stub shows Z without N too');
reply_is(req("ms viv 3 T30\r\nnew\r\n"), "HD\r\n", 'winner stores the real value');
reply_is(req("mg viv N30 v\r\n"), "VA 3\r\nnew\r\n", 'after recache: no flags');

# ---- recache R
reply_is(req("ms rc 1 T100\r\n1\r\n"), "HD\r\n", 'ms T100');
reply_is(req("mg rc R30 v\r\n"), "VA 1\r\n1\r\n", 'R30 with TTL 100: no win');
reply_is(req("mg rc R200 v\r\n"), "VA 1 W\r\n1\r\n", 'R200 with TTL 100: win');
reply_is(req("mg rc R200 v\r\n"), "VA 1 Z\r\n1\r\n", 'second R200: Z');

# ---- md I (invalidate), X, stale recache via ms I / C
reply_is(req("ms st 3\r\nabc\r\n"), "HD\r\n", 'ms st');
my $c0 = cas_of('st');
reply_is(req("md st I T30\r\n"), "HD\r\n", 'md I T30');
my $r = req("mg st v c t\r\n");
like($r, qr/^VA 3 c(\d+) t30 X W\r\nabc\r\n\z/, 'stale item: X and W on first fetch');
my ($c1) = $r =~ / c(\d+)/;
ok(defined $c1 && $c1 > $c0, 'md I bumped the cas');
like(req("mg st v c\r\n"), qr/^VA 3 c\d+ Z X\r\nabc\r\n\z/, 'stale item: Z X afterwards');
reply_is(req("ms st 3 C" . ($c1 + 1000) . "\r\nnew\r\n"), "EX\r\n", 'ms C mismatch: EX');
reply_is(req("ms st 3 C$c0 I\r\nnew\r\n"), "HD\r\n", 'ms C<older> I: accepted as stale');
like(req("mg st v\r\n"), qr/^VA 3 [^\r]*X[^\r]*\r\nnew\r\n\z/, 'value stored but marked X');
reply_is(req("ms st 3\r\nfin\r\n"), "HD\r\n", 'plain ms clears the stale state');
reply_is(req("mg st v\r\n"), "VA 3\r\nfin\r\n", 'no flags after a normal store');

# ---- ms modes
reply_is(req("ms m 1 ME\r\n1\r\n"), "HD\r\n", 'ME: add on missing');
reply_is(req("ms m 1 ME\r\n2\r\n"), "NS\r\n", 'ME: add on existing');
reply_is(req("ms m 1 MA\r\n3\r\n"), "HD\r\n", 'MA: append');
reply_is(req("ms m 1 MP\r\n0\r\n"), "HD\r\n", 'MP: prepend');
reply_is(req("mg m v\r\n"), "VA 3\r\n013\r\n", 'append/prepend result');
reply_is(req("ms m 1 MR\r\n9\r\n"), "HD\r\n", 'MR: replace existing');
reply_is(req("ms m2 1 MR\r\n9\r\n"), "NS\r\n", 'MR: replace missing');
reply_is(req("ms m2 1 MA\r\n9\r\n"), "NS\r\n", 'MA: append missing');
reply_is(req("ms m2 1 MP\r\n9\r\n"), "NS\r\n", 'MP: prepend missing');
reply_is(req("ms m2 1 MS\r\n8\r\n"), "HD\r\n", 'MS: set');
reply_is(send_sync($sock, "ms m2 1 Ms\r\n7\r\n"),
    "CLIENT_ERROR invalid mode for ms M token\r\n", 'Ms: modes are upper case only');
reply_is(send_sync($sock, "ms m2 1 MX\r\n1\r\n"), "CLIENT_ERROR invalid mode for ms M token\r\n",
    'invalid ms mode (data swallowed)');
my $cm = cas_of('m');
reply_is(req("ms m 1 MA C" . ($cm + 5) . "\r\nx\r\n"), "EX\r\n", 'append with wrong cas');
reply_is(req("ms m 1 MA C$cm\r\nx\r\n"), "HD\r\n", 'append with right cas');
reply_is(req("ms nocas 1 C5\r\nx\r\n"), "NF\r\n", 'ms C on missing key: NF');

# ---- md
reply_is(req("md nokey\r\n"), "NF\r\n", 'md miss');
reply_is(req("md m C1\r\n"), "EX\r\n", 'md C mismatch');
my $cm2 = cas_of('m');
reply_is(req("md m C$cm2\r\n"), "HD\r\n", 'md C match');
reply_is(req("mg m v\r\n"), "EN\r\n", 'deleted');

# ---- ma
reply_is(req("ma cnt\r\n"), "NF\r\n", 'ma miss');
reply_is(req("ma cnt N0 J10 v\r\n"), "VA 2\r\n10\r\n", 'ma N J: created with initial value');
reply_is(req("ma cnt v\r\n"), "VA 2\r\n11\r\n", 'ma default incr 1');
reply_is(req("ma cnt D9 v\r\n"), "VA 2\r\n20\r\n", 'ma D9');
reply_is(req("ma cnt MD D5 v\r\n"), "VA 2\r\n15\r\n", 'ma MD');
reply_is(req("ma cnt M- v\r\n"), "VA 2\r\n14\r\n", 'ma M-');
reply_is(req("ma cnt M+ v\r\n"), "VA 2\r\n15\r\n", 'ma M+');
reply_is(req("ma cnt MI v\r\n"), "VA 2\r\n16\r\n", 'ma MI');
reply_is(req("ma cnt Md v\r\n"), "CLIENT_ERROR invalid mode for ma M token\r\n",
    'ma modes are upper case (or + -)');
reply_is(req("ma cnt MD D100 v\r\n"), "VA 1\r\n0\r\n", 'ma decr floors at 0');
reply_is(req("ma cnt\r\n"), "HD\r\n", 'ma without v: HD');
reply_is(req("mg cnt v\r\n"), "VA 2\r\n1 \r\n", 'mg sees ma result (space padded like decr)');
reply_is(req("ma cnt MZ\r\n"), "CLIENT_ERROR invalid mode for ma M token\r\n", 'bad ma mode');
reply_is(req("ma cnt Dabc\r\n"), "CLIENT_ERROR invalid or duplicate flag\r\n",
    'bad delta');
reply_is(req("ma cnt T77 t v\r\n"), "VA 1 t77\r\n2\r\n", 'ma T t');
my $r2 = req("ma cnt c v\r\n");
like($r2, qr/^VA 1 c(\d+)\r\n3\r\n\z/, 'ma c returns the new cas');
my ($cc) = $r2 =~ / c(\d+)/;
reply_is(req("ma cnt C" . ($cc + 9) . " v\r\n"), "EX\r\n", 'ma C mismatch');
reply_is(req("ma cnt C$cc v\r\n"), "VA 1\r\n4\r\n", 'ma C match');
reply_is(req("ms wrap 20\r\n18446744073709551615\r\n"), "HD\r\n", 'ms 2^64-1');
reply_is(req("ma wrap v\r\n"), "VA 1\r\n0\r\n", 'ma wraps');
reply_is(req("ms txt 2\r\nab\r\n"), "HD\r\n", 'ms text');
reply_is(req("ma txt\r\n"),
    "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n", 'ma on text');
reply_is(send_sync($sock, "ma cnt q\r\nma cnt q D2\r\n"), '', 'ma q: success silent');
reply_is(req("mg cnt v\r\n"), "VA 2\r\n7 \r\n", 'ma q applied');

# ---- me
reply_is(req("me nokey\r\n"), "EN\r\n", 'me miss');
reply_is(req("ms dbg 5 T0\r\nhello\r\n"), "HD\r\n", 'ms dbg');
like(req("me dbg\r\n"),
    qr/^ME dbg exp=-1 la=\d+ cas=\d+ fetch=no cls=\d+ size=\d+\r\n\z/, 'me format');
req("mg dbg v\r\n");
like(req("me dbg\r\n"), qr/^ME dbg exp=-1 la=\d+ cas=\d+ fetch=yes cls=\d+ size=\d+\r\n\z/,
    'me fetch=yes after a fetch');

# ---- pipelining with opaques and mn
my $pipe = join '', map { "mg p$_ v q O$_\r\n" } 1 .. 5;
send_recv($sock, "ms p2 1\r\nB\r\n");
send_recv($sock, "ms p4 1\r\nD\r\n");
reply_is(send_recv($sock, $pipe . "mn\r\n", n => 3), "VA 1 O2\r\nB\r\nVA 1 O4\r\nD\r\nMN\r\n",
    'pipelined quiet gets: only hits, then MN');

# ---- P and L tokens are ignored
reply_is(req("mg k v P/foo Lbar\r\n"), "VA 2\r\nhi\r\n", 'P and L ignored');

# ---- errors
reply_is(req("mg\r\n"), "ERROR\r\n", 'mg without key');
reply_is(req("ms k\r\n"), "CLIENT_ERROR bad command line format\r\n", 'ms without length');
reply_is(send_sync($sock, "ms k abc\r\n"), "CLIENT_ERROR bad command line format\r\n",
    'ms bad length');
reply_is(req("mg k zz\r\n"), "CLIENT_ERROR invalid flag\r\n", 'unknown mg flag');
reply_is(req("mg k v v\r\n"), "CLIENT_ERROR duplicate flag\r\n", 'duplicate mg flag');
reply_is(send_sync($sock, "ms k 2 X\r\nab\r\n"), "CLIENT_ERROR invalid flag\r\n",
    'unknown ms flag: data swallowed');
my $long = 'x' x 251;
reply_is(req("mg $long v\r\n"), "CLIENT_ERROR bad command line format\r\n", 'key too long');
# the data block is read as 2 + 2 bytes ("abc\r"); the lone "\n" left over
# is an empty command line
reply_is(send_sync($sock, "ms k 2\r\nabc\r\n"), "CLIENT_ERROR bad data chunk\r\nERROR\r\n",
    'ms bad data chunk');
reply_is(req("mg k v\r\n"), "VA 2\r\nhi\r\n", 'still in sync after errors');

# too-large ms
my $big = 'z' x (1024 * 1024 + 10);
reply_is(req("ms huge " . length($big) . " T0\r\n$big\r\n"),
    "SERVER_ERROR object too large for cache\r\n", 'ms too large');
reply_is(req("mn\r\n"), "MN\r\n", 'in sync after too-large ms');

my $st = $server->stats;
cmp_ok($st->{cmd_meta} || 0, '>', 0, 'cmd_meta counted (' . ($st->{cmd_meta} // 'missing') . ')');

done_testing();
