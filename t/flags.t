#!/usr/bin/perl
# flags.t: command-line flags.  Servers are started with each flag and
# checked over the wire (stats settings and behaviour): -p -U -s -a -l
# (repeated and comma lists) -d -P -m -M (out of memory reply) -c -t -R -C
# -b -B -I -f -n -v/-vv -A (shutdown) -F -X -k -L -D -o; and start-up
# failures: -h/-V output, unknown -o sub-option, invalid values, root
# without -u.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use Time::HiRes qw(sleep);
use MemcachedTest;

my $bin = server_bin();
my @user = $> == 0 ? ('-u', 'nobody') : ();

# ---- informational flags
my ($code, $out) = run_binary($bin, ['-V']);
is($code, 0, '-V exits 0');
# scripts parse the second word; a suffix naming the implementation is fine
like($out, qr/^memcached 1\.6\.18(?: \S.*)?\n\z/, '-V prints "memcached 1.6.18"');
($code, $out) = run_binary($bin, ['-h']);
is($code, 0, '-h exits 0');
for my $opt (qw(--port --udp-port --unix-socket --listen --memory-limit --conn-limit
                --threads --max-item-size --enable-shutdown --disable-cas --extended)) {
    like($out, qr/\Q$opt\E/, "-h documents $opt");
}

# ---- start-up failures
($code, $out) = run_binary($bin, [@user, '-p', '0', '-U', '0', '-o', 'no_such_option']);
isnt($code, 0, 'unknown -o sub-option: non-zero exit');
like($out, qr/Illegal suboption "no_such_option"/, 'unknown -o sub-option message');
($code, $out) = run_binary($bin, [@user, '-p', '0', '-U', '0', '-c', '0']);
isnt($code, 0, '-c 0 refused');
like($out, qr/Maximum connections must be greater than 0/, '-c 0 message');
($code, $out) = run_binary($bin, [@user, '-p', '0', '-U', '0', '-t', '0']);
isnt($code, 0, '-t 0 refused');
like($out, qr/Number of threads must be greater than 0/, '-t 0 message');
($code, $out) = run_binary($bin, [@user, '-p', '0', '-U', '0', '-f', '0.5']);
isnt($code, 0, '-f 0.5 refused');
like($out, qr/Factor must be greater than 1/, '-f message');
($code, $out) = run_binary($bin, [@user, '-p', '0', '-U', '0', '-B', 'foo']);
isnt($code, 0, '-B foo refused');
like($out, qr/Invalid value for binding protocol: foo/, '-B message');
($code, $out) = run_binary($bin, [@user, '-p', '0', '-U', '0', '-o', 'slab_automove=9']);
isnt($code, 0, 'slab_automove=9 refused');
like($out, qr/slab_automove must be between 0 and 2/, 'slab_automove message');
SKIP: {
    skip 'not running as root: the "-u required" check cannot be exercised', 2
        unless $> == 0;
    ($code, $out) = run_binary($bin, ['-p', '0', '-U', '0']);
    isnt($code, 0, 'root without -u refuses to start');
    like($out, qr/can't run as root without the -u switch/, 'root without -u message');
}

# ---- settings reflected in stats settings
my $s = new_memcached('-m 32 -c 200 -t 3 -R 7 -b 77 -B ascii -I 2m -f 1.5 -n 64 -D / '
    . '-v -o hashpower=18,lru_crawler_sleep=50');
my $set = $s->stats('settings');
is($set->{maxbytes}, 32 * 1024 * 1024, '-m 32');
is($set->{maxconns}, 200, '-c 200');
is($set->{num_threads}, 3, '-t 3');
is($set->{reqs_per_event}, 7, '-R 7');
is($set->{tcp_backlog}, 77, '-b 77');
is($set->{binding_protocol}, 'ascii', '-B ascii');
is($set->{item_size_max}, 2 * 1024 * 1024, '-I 2m');
is($set->{growth_factor}, '1.50', '-f 1.5');
is($set->{chunk_size}, 64, '-n 64');
is($set->{stat_key_prefix}, '/', '-D /');
is($set->{verbosity}, 1, '-v');
is($set->{hashpower_init}, 18, '-o hashpower=18');
is($set->{lru_crawler_sleep}, 50, '-o lru_crawler_sleep=50');
is($s->stats->{threads}, 3, 'threads stat');
my $c = $s->sock;
send_recv($c, "stats detail on\r\n");
send_recv($c, "set a/b 0 0 1\r\n1\r\n");
ok(exists stats_detail($c)->{a}, '-D / used as the detail prefix delimiter');
reply_is(send_recv($c, "\x80\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        . "\x00\x00\x00\x00\x00\x00\x00\x00\r\n"), "ERROR\r\n",
    '-B ascii: a binary-protocol header is just a bad ascii line');
$s->stop;

# ---- -vv logs connections to stderr
$s = new_memcached('-vv');
$c = $s->sock;
send_recv($c, "version\r\n");
close $c;
sleep 0.3;
like($s->log_text, qr/server listening/, '-vv logs the listener');
$s->stop;

# ---- -C, -F, -X
$s = new_memcached('-C -F -X');
$set = $s->stats('settings');
is($set->{cas_enabled}, 'no', '-C');
is($set->{flush_enabled}, 'no', '-F');
is($set->{dump_enabled}, 'no', '-X');
$s->stop;

# ---- -M: no eviction, out-of-memory reply
$s = new_memcached('-m 2 -M');
$c = $s->sock;
my $val = 'x' x 50_000;
my ($stored, $oom, $other) = (0, 0, '');
for my $i (1 .. 200) {
    my $r = send_recv($c, "set k$i 0 0 " . length($val) . "\r\n$val\r\n");
    if ($r eq "STORED\r\n") { $stored++; next }
    if ($r eq "SERVER_ERROR out of memory storing object\r\n") { $oom++; last }
    $other = $r;
    last;
}
ok($stored > 0, "-M: some items stored ($stored)");
is($oom, 1, '-M: "SERVER_ERROR out of memory storing object" once memory is full')
    or diag('other reply: ' . escape_bytes($other));
mem_get_is($c, 'k1', $val, '-M: first item not evicted');
is($s->stats->{evictions}, 0, '-M: no evictions');
is($s->stats('settings')->{evictions}, 'off', '-M: settings evictions off');
$s->stop;

# ---- -A shutdown
$s = new_memcached('');
$c = $s->sock;
reply_is(send_recv($c, "shutdown\r\n"), "ERROR: shutdown not enabled\r\n", 'shutdown needs -A');
ok($s->alive, 'still running');
$s->stop;
$s = new_memcached('-A');
is($s->stats('settings')->{shutdown_command}, 'yes', '-A: shutdown_command yes');
$c = $s->sock;
reply_is(send_recv($c, "shutdown foo\r\n"), "CLIENT_ERROR invalid shutdown mode\r\n",
    'shutdown with a bad mode');
my $r = send_recv($c, "shutdown\r\n");
like($r, qr/\A<EOF>\z/, 'shutdown closes the connection');
ok($s->wait_exit(5), '-A: server exits on shutdown');
is($s->exit_status >> 8, 0, 'exit status 0');

# ---- -l: repeated and comma lists
my $port = free_port();
$s = new_memcached("-p $port -l 127.0.0.1 -l 127.0.0.2", no_listen => 1);
for my $addr ('127.0.0.1', '127.0.0.2') {
    my $cc = IO::Socket::INET->new(PeerAddr => $addr, PeerPort => $port, Timeout => 2);
    ok($cc && send_recv($cc, "version\r\n") eq "VERSION 1.6.18\r\n", "-l repeated: $addr");
}
$s->stop;
$port = free_port();
$s = new_memcached("-p $port -l 127.0.0.3,127.0.0.4", no_listen => 1);
for my $addr ('127.0.0.3', '127.0.0.4') {
    my $cc = IO::Socket::INET->new(PeerAddr => $addr, PeerPort => $port, Timeout => 2);
    ok($cc && send_recv($cc, "version\r\n") eq "VERSION 1.6.18\r\n", "-l comma list: $addr");
}
my $no = IO::Socket::INET->new(PeerAddr => '127.0.0.5', PeerPort => $port, Timeout => 2);
ok(!$no, 'not listening on an address that was not asked for');
$s->stop;

# ---- -k and -L: accepted (they may warn when the system refuses)
for my $f ('-k', '-L') {
    my $x = eval { new_memcached($f) };
    ok($x && send_recv($x->sock, "version\r\n") eq "VERSION 1.6.18\r\n", "$f: server runs")
        or diag($@);
    $x->stop if $x;
}

# ---- -s / -a: unix socket with access mask
$s = new_memcached('-a 0770', unix => 1);
my $mode = (stat $s->socket_path)[2] & 0777;
is(sprintf('%o', $mode), '770', '-a 0770 sets the socket mode');
is($s->stats('settings')->{domain_socket}, $s->socket_path, 'settings domain_socket');
$s->stop;

# ---- -d and -P: daemonize, pid file
my $dir = tempdir('mcd-XXXXXX', TMPDIR => 1, CLEANUP => 1);
chmod 0777, $dir;
$port = free_port();
($code, $out) = run_binary($bin, [@user, '-d', '-P', "$dir/mc.pid", '-p', $port, '-U', '0',
    '-l', '127.0.0.1'], 10);
is($code, 0, '-d: the launching process exits 0');
my $pid;
for (1 .. 50) {
    if (open my $fh, '<', "$dir/mc.pid") {
        $pid = <$fh>;
        close $fh;
        last if defined $pid && $pid =~ /^\d+/;
    }
    sleep 0.1;
}
chomp $pid if defined $pid;
ok($pid && kill(0, $pid), '-P: pid file names a running process');
my $dc = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Timeout => 2);
my $ds = $dc ? mem_stats($dc) : {};
is($ds->{pid}, $pid, 'daemon answers and reports the pid from the pid file');
if ($pid) {
    kill 'TERM', $pid;
    for (1 .. 50) { last unless kill 0, $pid; sleep 0.1 }
    kill 'KILL', $pid if kill 0, $pid;
}

# ---- -p / -U
$port = free_port(udp => 1);
$s = new_memcached("-p $port -U $port");
$set = $s->stats('settings');
is($set->{tcpport}, $port, '-p');
is($set->{udpport}, $port, '-U');
$s->stop;

done_testing();
