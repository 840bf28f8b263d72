#!/usr/bin/perl
# tls.t: TLS (-Z) as memcached 1.6.18 does it (doc/protocol.md "TLS").
# A throwaway CA, two server certificates and client certificates (one
# from a CA the server does not trust) are made with the openssl tool in
# a temp dir; clients are IO::Socket::SSL.  Covered: the start-up errors
# of -Z and the ssl_* options, set/get/meta over TLS with the items in
# the D-zone and in the N-zone (large values across many records,
# pipelined requests), a notls: listener beside the TLS one, plaintext
# and a half-sent handshake to the TLS port (closed, counted, server
# alive), a stalled handshake closed by idle_timeout, the verify modes,
# ssl_min_version, a DER key and a cipher list, pymemcache with a client
# certificate, refresh_certs (a changed certificate served to new
# connections, a broken or mismatched one refused), session resumption
# with and without ssl_session_cache, ssl_kernel_tls, the ssl_* lines of
# `stats`, `stats settings` and `stats conns`, a SIGTERM stop with TLS
# clients in every state (exit 0, and no leak under ASan); and, when
# Debian's memcached is installed, the same requests against it with the
# same certificates.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Copy qw(copy);
use File::Temp qw(tempdir);
use IO::Socket::INET;
use MemcachedTest;
use BinaryFrames;

BEGIN {
    if (!eval { require IO::Socket::SSL; 1 }) {
        plan skip_all => 'IO::Socket::SSL missing (libio-socket-ssl-perl)';
    }
}
system('openssl version >/dev/null 2>&1') == 0
    or plan skip_all => 'the openssl tool is missing';

my $VERSION = "VERSION 1.6.18\r\n";

# ------------------------------------------------------------- certificates
my $dir = tempdir('tlscerts-XXXXXX', TMPDIR => 1, CLEANUP => 1);
chmod 0755, $dir;

sub openssl {
    my $cmd = join ' ', 'openssl', @_;
    system("$cmd >/dev/null 2>&1") == 0 or die "failed: $cmd";
}

my $EC = '-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes';
sub make_ca {
    my ($name) = @_;
    openssl("req -x509 $EC -keyout $dir/$name.key -out $dir/$name.crt",
        "-days 2 -subj /CN=$name");
}
sub make_cert {
    my ($name, $ca, $cn) = @_;
    open my $ext, '>', "$dir/$name.ext" or die;
    print $ext "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
    close $ext;
    openssl("req $EC -keyout $dir/$name.key -out $dir/$name.csr",
        "-subj /CN=$cn");
    openssl("x509 -req -in $dir/$name.csr -CA $dir/$ca.crt",
        "-CAkey $dir/$ca.key -CAcreateserial -out $dir/$name.crt -days 2",
        "-extfile $dir/$name.ext");
}
make_ca('ca');
make_ca('rogue_ca');
make_cert('server1', 'ca', 'server1');
make_cert('server2', 'ca', 'server2');
make_cert('client', 'ca', 'client');
make_cert('rogue', 'rogue_ca', 'rogue');
chmod 0644, glob("$dir/*");    # the server runs as nobody

my $certs = "ssl_chain_cert=$dir/server1.crt,ssl_key=$dir/server1.key";

# ------------------------------------------------------------------ helpers

# A TLS server with a plaintext (notls:) listener: -p names the plaintext
# port, so that MemcachedTest's own connections (start-up probe, stats)
# use it; $srv->{tls_port} is the TLS one.
sub tls_server {
    my ($extra, %o) = @_;
    my $tls_port = free_port();
    my $plain = free_port();
    my $srv = new_memcached("-p $plain -l notls:127.0.0.1 "
        . "-l 127.0.0.1:$tls_port -Z $extra", %o);
    $srv->{tls_port} = $tls_port;
    return $srv;
}

# The client's TLS options: it checks the server against our CA; cert:
# the client certificate it shows; version: the only one it speaks;
# no_ticket: it resumes by session id only, which the server must cache.
sub tls_client_args {
    my (%o) = @_;
    my %args = (SSL_ca_file => "$dir/ca.crt",
        SSL_verify_mode => IO::Socket::SSL::SSL_VERIFY_PEER());
    if ($o{cert}) {
        $args{SSL_cert_file} = "$dir/$o{cert}.crt";
        $args{SSL_key_file} = "$dir/$o{cert}.key";
    }
    $args{SSL_version} = $o{version} if $o{version};
    if ($o{no_ticket}) {
        $args{SSL_create_ctx_callback} = sub {
            Net::SSLeay::CTX_set_options($_[0], Net::SSLeay::OP_NO_TICKET());
        };
    }
    return %args;
}

# A TLS client, or undef when the handshake fails.
sub tls_connect {
    my ($srv, %o) = @_;
    my $s = IO::Socket::SSL->new(PeerHost => '127.0.0.1',
        PeerPort => $srv->{tls_port}, Timeout => 5, tls_client_args(%o))
        or return;
    $s->autoflush(1);
    return $s;
}

# The server refuses the handshake.  With TLS 1.3 a client learns that
# the server rejected its certificate only on its first read, so a
# connection that opens must also fail to answer.
sub tls_refused {
    my ($srv, %o) = @_;
    my $s = tls_connect($srv, %o) or return 1;
    my $r = send_recv($s, "version\r\n", timeout => 3);
    return $r ne $VERSION;
}

# Clients of the TLS port that `stats conns` lists.  Counting them there
# rather than by curr_connections leaves out the stats connections
# themselves, which the server may not have seen close yet.
sub tls_clients {
    my ($srv) = @_;
    my $s = $srv->sock;
    my $r = send_recv($s, "stats conns\r\n");
    close $s;
    my @mine = $r =~ /^STAT \d+:listen_addr \S+:(\d+)\r$/mg;
    return scalar grep { $_ == $srv->{tls_port} } @mine;
}

sub plain_sock {
    my ($port) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
        Proto => 'tcp', Timeout => 5) or die "connect $port: $!";
    $s->autoflush(1);
    binmode $s;
    return $s;
}

sub handshake_errors { return $_[0]->stats->{ssl_handshake_errors} }

# Stop with SIGTERM: the server closes every connection and exits 0; an
# ASan build checks for leaks then (a session or buffer not freed).
sub stop_clean {
    my ($srv, $what) = @_;
    kill 'TERM', $srv->pid;
    my $gone = $srv->wait_exit(10);
    ok($gone && $srv->exit_status == 0
        && $srv->log_text !~ /ERROR: \w+Sanitizer|runtime error/,
        "$what: SIGTERM, exit 0, no sanitizer report")
        or diag(substr($srv->log_text, 0, 3000));
    $srv->stop unless $gone;
}

# The first bytes of a TLS 1.2 ClientHello record, cut short.
my $HALF_HELLO = "\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03"
    . ('r' x 20);

# ------------------------------------------------------------ start-up
{
    my $bin = server_bin();
    my @user = $> == 0 ? ('-u', 'nobody') : ();
    my @base = (@user, '-U', '0', '-l', '127.0.0.1', '-p', free_port());
    my ($code, $out) = run_binary($bin, [@base, '-Z']);
    isnt($code, 0, '-Z without a certificate: refused');
    like($out, qr/Error loading the certificate chain: \(null\)/,
        '... saying the chain could not be loaded');
    ($code, $out) = run_binary($bin, [@user, '-U', '0', '-p', '0', '-Z',
        '-o', $certs]);
    isnt($code, 0, '-Z with -p 0: refused');
    like($out, qr/You cannot enable SSL without a TCP port/, '... saying so');
    ($code, $out) = run_binary($bin, [@base, '-Z', '-o',
        "$certs,ssl_verify_mode=4"]);
    is($code, 1, 'ssl_verify_mode=4: exit 1, as memcached');
    like($out, qr/Invalid ssl_verify_mode/, '... saying so');
    ($code, $out) = run_binary($bin, [@base, '-Z', '-o',
        "$certs,ssl_min_version=tls13"]);
    is($code, 1, 'ssl_min_version=tls13: exit 1');
    like($out, qr/could not parse argument to ssl_min_version/,
        '... saying so');
    ($code, $out) = run_binary($bin, [@base, '-Z', '-o', 'ssl_key']);
    like($out, qr/Missing ssl_key argument/, 'ssl_key without a value');
    ($code, $out) = run_binary($bin, [@base, '-Z', '-o',
        "ssl_chain_cert=$dir/server1.crt,ssl_key=$dir/server2.key"]);
    isnt($code, 0, 'a key that does not match the certificate: refused');
    like($out, qr/Error loading the key: \Q$dir\E\/server2.key/,
        '... naming the key');
    ($code, $out) = run_binary($bin, [@base, '-Z', '-o',
        "$certs,ssl_ca_cert=$dir/missing.crt"]);
    like($out, qr/Error loading the CA certificate: \Q$dir\E\/missing.crt/,
        'a missing ssl_ca_cert: refused, named');
    ($code, $out) = run_binary($bin, [@base, '-Z', '-o',
        "$certs,ssl_ciphers=NO-SUCH-CIPHER"]);
    like($out, qr/Error setting the provided cipher\(s\): NO-SUCH-CIPHER/,
        'unknown ssl_ciphers: refused');
    ($code, $out) = run_binary($bin, [@user, '-U', '0', '-p', free_port(),
        '-l', 'notls:127.0.0.1']);
    isnt($code, 0, 'notls: without -Z: refused');
    like($out, qr/'notls' option is valid only when SSL is enabled/,
        '... with memcached\'s message');
    ($code, $out) = run_binary($bin, [@base, '-o', 'ssl_bogus=1']);
    like($out, qr/Illegal suboption "ssl_bogus"/, 'an unknown ssl_ option');
    ($code, $out) = run_binary($bin, ['-h']);
    my @undocumented = grep { index($out, $_) < 0 } qw(--enable-ssl notls:
        ssl_chain_cert ssl_key ssl_keyformat ssl_verify_mode ssl_ciphers
        ssl_ca_cert ssl_wbuf_size ssl_session_cache ssl_kernel_tls
        ssl_min_version);
    is("@undocumented", '', '-h documents -Z, notls: and every ssl_ option');
}

# a DER key (ssl_keyformat=2) and a cipher list for TLS 1.2
{
    openssl("pkey -in $dir/server1.key -outform DER -out $dir/server1.der");
    chmod 0644, "$dir/server1.der";
    my $cipher = 'ECDHE-ECDSA-AES128-GCM-SHA256';
    my $srv = tls_server("-o ssl_chain_cert=$dir/server1.crt,"
        . "ssl_key=$dir/server1.der,ssl_keyformat=2,ssl_ciphers=$cipher");
    my $s = tls_connect($srv, version => 'TLSv1_2');
    ok($s && send_recv($s, "version\r\n") eq $VERSION,
        'ssl_keyformat=2: a DER key');
    is($s && $s->get_cipher, $cipher, 'ssl_ciphers: the cipher used');
    my $set = $srv->stats('settings');
    is("$set->{ssl_keyformat} $set->{ssl_ciphers}", "2 $cipher",
        'stats settings: ssl_keyformat, ssl_ciphers');
    $srv->stop;
}

# ssl_* without -Z: memcached ignores them; we start too, with a warning
{
    my $srv = new_memcached("-o $certs");
    like($srv->log_text, qr/no effect without -Z/,
        'ssl_* without -Z: a warning');
    my $set = $srv->stats('settings');
    is($set->{ssl_enabled}, 'no', '... and TLS stays off');
    reply_is(send_recv($srv->sock, "version\r\n"), $VERSION,
        '... the port speaks plaintext');
    reply_is(send_recv($srv->sock, "refresh_certs\r\n"),
        "Error TLS not enabled\r\n", 'refresh_certs without -Z');
    reply_is(send_recv($srv->sock, "refresh_certs noreply\r\nversion\r\n",
        n => 2), "Error TLS not enabled\r\n$VERSION",
        '... answered even under noreply');
    $srv->stop;
}

# ------------------------------------------- the D-zone and the N-zone
my $big = random_bytes(300_000);
for my $zone (['D', '-m 64'], ['N', '-m 2 -o nvm_size=16m,tier_policy=nvm']) {
    my ($name, $args) = @$zone;
    my $srv = tls_server("$args -t 2 -o $certs");
    my $s = tls_connect($srv);
    ok($s, "$name: TLS handshake") or next;
    is($s->peer_certificate('cn'), 'server1', "$name: the server's cert");
    reply_is(send_recv($s, "version\r\n"), $VERSION, "$name: version");
    reply_is(send_recv($s, "set k 5 0 5\r\nhello\r\n"), "STORED\r\n",
        "$name: set over TLS");
    reply_is(send_recv($s, "get k\r\n"), "VALUE k 5 5\r\nhello\r\nEND\r\n",
        "$name: get over TLS");
    reply_is(send_recv($s, "set big 0 0 " . length($big) . "\r\n$big\r\n"),
        "STORED\r\n", "$name: a 300 KB value in many records");
    is(send_recv($s, "get big\r\n", timeout => 10),
        "VALUE big 0 " . length($big) . "\r\n$big\r\nEND\r\n",
        "$name: ... read back whole");
    reply_is(send_recv($s, "ms m 2 T0\r\nhi\r\nmg m v f\r\n", n => 2),
        "HD\r\nVA 2 f0\r\nhi\r\n", "$name: meta commands over TLS");
    # many requests in one write: they arrive in records the server
    # decrypts ahead of parsing
    my $pipe = join '', map { "set p$_ 0 0 4\r\nv$_\r\n" } 100 .. 299;
    $pipe .= join '', map { "get p$_\r\n" } 100 .. 299;
    my $want = ("STORED\r\n" x 200)
        . join '', map { "VALUE p$_ 0 4\r\nv$_\r\nEND\r\n" } 100 .. 299;
    reply_is(send_recv($s, $pipe, n => 400), $want,
        "$name: 400 pipelined requests");
    if ($name eq 'D') {
        # 6 MB of replies to a client that reads only later: the server's
        # writes stop half way and resume where they stopped
        mc_send($s, "get big\r\n" x 20);
        my $one = "VALUE big 0 " . length($big) . "\r\n$big\r\nEND\r\n";
        my $got = join '', map { read_reply($s, 10) } 1 .. 20;
        ok($got eq $one x 20, 'D: 20 large replies to a slow reader, intact');
    }
    my $p = $srv->sock;
    reply_is(send_recv($p, "get k\r\n"), "VALUE k 5 5\r\nhello\r\nEND\r\n",
        "$name: notls: listener speaks plaintext, same items");
    if ($name eq 'N') {
        my $t = $srv->stats('tier');
        cmp_ok($t->{n_items}, '>=', 200, 'N: the items are in the N-zone');
        is($t->{d_items}, 0, 'N: none in the D-zone');
    }
    stop_clean($srv, $name);
}

# ------------------------------------------------------- bad input, stats
{
    my $srv = tls_server("-t 2 -o $certs");
    my $st = $srv->stats;
    is($st->{ssl_handshake_errors}, 0, 'stats: ssl_handshake_errors 0');
    like($st->{time_since_server_cert_refresh}, qr/^\d+$/,
        'stats: time_since_server_cert_refresh');
    ok(!exists $st->{ssl_new_sessions},
        'stats: no ssl_new_sessions without ssl_session_cache');

    my $probe = plain_sock($srv->{tls_port});
    ok(wait_until(3, sub { tls_clients($srv) == 1 }),
        'a bare connect to the TLS port: listed');
    close $probe;
    ok(wait_until(3, sub { tls_clients($srv) == 0 }),
        'a bare connect and close to the TLS port: gone');
    is(handshake_errors($srv), 0, '... and not a handshake error');

    my $s = plain_sock($srv->{tls_port});
    mc_send($s, "version\r\n");
    ok(wait_closed($s, 3), 'plaintext to the TLS port: closed');
    is(drain($s, 0), '', '... without a reply');
    ok(wait_until(3, sub { handshake_errors($srv) == 1 }),
        '... counted in ssl_handshake_errors');

    $s = plain_sock($srv->{tls_port});
    mc_send($s, $HALF_HELLO);
    close $s;
    ok(wait_until(3, sub { handshake_errors($srv) == 2 }),
        'a client gone mid-handshake: counted');

    my $t = tls_connect($srv);
    reply_is(send_recv($t, "version\r\n"), $VERSION,
        'the server still serves TLS');

    my $set = $srv->stats('settings');
    my %want = (ssl_enabled => 'yes', ssl_chain_cert => "$dir/server1.crt",
        ssl_key => "$dir/server1.key", ssl_verify_mode => 0,
        ssl_keyformat => 1, ssl_ciphers => 'NULL', ssl_ca_cert => 'NULL',
        ssl_wbuf_size => 16384, ssl_session_cache => 'no',
        ssl_kernel_tls => 'no', ssl_min_version => 'tlsv1.2');
    is_deeply({ map { $_ => $set->{$_} } keys %want }, \%want,
        'stats settings: the ssl_* lines');

    my $conns = $srv->stats('conns');
    my %listen = map { $conns->{$_} => 1 }
        grep { /^\d+:addr$/ } keys %$conns;
    ok($listen{"tcp:127.0.0.1:$srv->{tls_port}"}
        && $listen{"tcp:127.0.0.1:" . $srv->port},
        'stats conns: the TLS and the notls listeners');

    reply_is(send_recv($srv->sock, "stats reset\r\n"), "RESET\r\n",
        'stats reset');
    is(handshake_errors($srv), 0, '... clears ssl_handshake_errors');
    stop_clean($srv, 'bad input');
}

# a handshake that stalls is an idle connection: idle_timeout closes it
{
    my $srv = tls_server("-t 2 -o $certs,idle_timeout=1");
    my $stalled = plain_sock($srv->{tls_port});
    mc_send($stalled, substr($HALF_HELLO, 0, 5));
    my $t = tls_connect($srv);
    reply_is(send_recv($t, "version\r\n"), $VERSION,
        'a stalled handshake does not hold up others');
    ok(wait_closed($stalled, 5), 'the stalled handshake is closed');
    stop_clean($srv, 'idle_timeout');
}

# ------------------------------------------------ verify modes, versions
{
    my $srv = tls_server("-t 2 -o $certs,ssl_ca_cert=$dir/ca.crt,"
        . 'ssl_verify_mode=2,ssl_min_version=3');
    is($srv->stats('settings')->{ssl_verify_mode}, 3,
        'verify mode 2 shows as OpenSSL\'s flags (3), as memcached');
    ok(tls_refused($srv), 'mode 2 (require): no client certificate, no '
        . 'connection');
    ok(tls_refused($srv, cert => 'rogue'),
        'mode 2: a certificate from an untrusted CA refused');
    my $s = tls_connect($srv, cert => 'client');
    ok($s && send_recv($s, "version\r\n") eq $VERSION,
        'mode 2: a trusted client certificate accepted');
    ok(wait_until(3, sub { handshake_errors($srv) == 2 }),
        'the two refusals are handshake errors');
    ok(tls_refused($srv, cert => 'client', version => 'TLSv1_2'),
        'ssl_min_version=3: TLS 1.2 refused');
    $s = tls_connect($srv, cert => 'client', version => 'TLSv1_3');
    ok($s && send_recv($s, "version\r\n") eq $VERSION, '... TLS 1.3 taken');
    stop_clean($srv, 'verify mode 2');

    $srv = tls_server("-t 2 -o $certs,ssl_ca_cert=$dir/ca.crt,"
        . 'ssl_verify_mode=1');
    $s = tls_connect($srv);
    ok($s && send_recv($s, "version\r\n") eq $VERSION,
        'mode 1 (request): a client without a certificate is served');
    ok(tls_refused($srv, cert => 'rogue'),
        'mode 1: a certificate that fails verification is refused');
    $srv->stop;

    $srv = tls_server("-t 2 -o $certs,ssl_ca_cert=$dir/ca.crt,"
        . 'ssl_verify_mode=3');
    is($srv->stats('settings')->{ssl_verify_mode}, 7,
        'verify mode 3 (once) shows as 7');
    ok(tls_refused($srv), 'mode 3: no certificate, no connection');
    $s = tls_connect($srv, cert => 'client');
    ok($s && send_recv($s, "version\r\n") eq $VERSION,
        'mode 3: a trusted certificate accepted');
    $srv->stop;
}

# pymemcache over TLS, showing a client certificate to a server that
# requires one
SKIP: {
    skip 'pymemcache not importable (pip install pymemcache)', 2
        unless system("python3 -c 'import pymemcache' 2>/dev/null") == 0;
    my $srv = tls_server("-t 2 -o $certs,ssl_ca_cert=$dir/ca.crt,"
        . 'ssl_verify_mode=2');
    open my $py, '>', "$dir/pymemcache_tls.py" or die;
    print $py <<'PY';
import ssl, sys
from pymemcache.client.base import Client
port, ca, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ctx = ssl.create_default_context(cafile=ca)
ctx.load_cert_chain(cert, key)
c = Client(("127.0.0.1", port), tls_context=ctx, connect_timeout=5,
           timeout=5)
big = bytes(range(256)) * 800
def check(name, cond):
    print(("OK " if cond else "FAIL ") + name)
    if not cond:
        sys.exit(1)
check("set", c.set("py:a", b"hello", noreply=False))
check("get", c.get("py:a") == b"hello")
check("big", c.set("py:big", big, noreply=False) and c.get("py:big") == big)
check("get_many", c.get_many(["py:a", "py:none"]) == {"py:a": b"hello"})
val, cas = c.gets("py:a")
check("cas", c.cas("py:a", b"world", cas, noreply=False) is True)
c.set("py:n", b"1", noreply=False)
check("incr", c.incr("py:n", 41) == 42)
check("version", c.version() == b"1.6.18")
print("DONE")
PY
    close $py;
    my ($code, $out) = run_binary('/bin/sh', ['-c', "python3 "
        . "$dir/pymemcache_tls.py $srv->{tls_port} $dir/ca.crt "
        . "$dir/client.crt $dir/client.key"], 30);
    is($code, 0, 'pymemcache over TLS with a client certificate')
        or diag($out);
    like($out, qr/^DONE$/m, '... every check passed') or diag($out);
    $srv->stop;
}

# ---------------------------------------------------------- refresh_certs
{
    copy("$dir/server1.crt", "$dir/live.crt") or die;
    copy("$dir/server1.key", "$dir/live.key") or die;
    chmod 0644, "$dir/live.crt", "$dir/live.key";
    my $srv = tls_server("-t 2 -o ssl_chain_cert=$dir/live.crt,"
        . "ssl_key=$dir/live.key");
    my $old = tls_connect($srv);
    is($old->peer_certificate('cn'), 'server1', 'refresh: server1 at first');
    ok(wait_until(4, sub {
        $srv->stats->{time_since_server_cert_refresh} >= 2 }),
        'time_since_server_cert_refresh counts up');
    copy("$dir/server2.crt", "$dir/live.crt") or die;
    copy("$dir/server2.key", "$dir/live.key") or die;
    reply_is(send_recv($old, "refresh_certs\r\n"), "OK\r\n",
        'refresh_certs over TLS: OK');
    cmp_ok($srv->stats->{time_since_server_cert_refresh}, '<', 2,
        '... the refresh time reset');
    my $new = tls_connect($srv);
    is($new && $new->peer_certificate('cn'), 'server2',
        'a new connection gets the new certificate');
    reply_is(send_recv($old, "version\r\n"), $VERSION,
        'the connection opened before keeps working');
    reply_is(send_recv($old, "refresh_certs noreply\r\nversion\r\n"),
        $VERSION, 'refresh_certs noreply: no OK');

    open my $fh, '>', "$dir/live.crt" or die;
    print $fh "not a certificate\n";
    close $fh;
    like(send_recv($srv->sock, "refresh_certs\r\n"),
        qr/^Error loading the certificate chain: \Q$dir\E\/live.crt : .+\r\n$/,
        'a broken certificate: refresh_certs refused');
    $new = tls_connect($srv);
    is($new && $new->peer_certificate('cn'), 'server2',
        '... and the certificate loaded before is still served');
    # memcached loads into its live context: after this it fails every
    # handshake; the old context stays here
    copy("$dir/client.crt", "$dir/live.crt") or die;
    like(send_recv($srv->sock, "refresh_certs\r\n"),
        qr/^Error loading the key: \Q$dir\E\/live.key : .*mismatch/,
        'a certificate that does not match the key: refused');
    $new = tls_connect($srv);
    is($new && $new->peer_certificate('cn'), 'server2',
        '... new connections still get the certificate loaded before');
    stop_clean($srv, 'refresh_certs');
}

# a key readable by root alone: loaded before the server drops to -u
SKIP: {
    skip 'not root: the key cannot be made unreadable to the server', 1
        unless $> == 0;
    copy("$dir/server1.key", "$dir/root.key") or die;
    chmod 0600, "$dir/root.key";
    my $srv = tls_server("-o ssl_chain_cert=$dir/server1.crt,"
        . "ssl_key=$dir/root.key");
    my $s = tls_connect($srv);
    ok($s && send_recv($s, "version\r\n") eq $VERSION,
        'a root-only key is read before the server becomes nobody');
    $srv->stop;
}

# ---------------------------------------------------- session resumption
# Two connections through one client context (which keeps the session):
# was each resumed?
sub resumed {
    my ($srv, %o) = @_;
    my $ctx = IO::Socket::SSL::SSL_Context->new(tls_client_args(%o),
        SSL_session_cache_size => 4) or return 'no client context';
    my @reused;
    for (1 .. 2) {
        my $s = IO::Socket::SSL->new(PeerHost => '127.0.0.1',
            PeerPort => $srv->{tls_port}, Timeout => 5,
            SSL_reuse_ctx => $ctx, SSL_session_key => 'tls.t')
            or return 'handshake failed';
        # TLS 1.3 sends its tickets after the handshake: read a reply
        send_recv($s, "version\r\n");
        push @reused, $s->get_session_reused ? 1 : 0;
        $s->close(SSL_fast_shutdown => 1);
    }
    return "@reused";
}
{
    my $srv = tls_server("-t 2 -o $certs");
    is(resumed($srv), '0 1', 'session tickets resume TLS 1.3 sessions');
    is(resumed($srv, version => 'TLSv1_2', no_ticket => 1), '0 0',
        'no ssl_session_cache: a TLS 1.2 session id is not resumed');
    $srv->stop;

    $srv = tls_server("-t 2 -o $certs,ssl_session_cache,ssl_kernel_tls");
    is(resumed($srv, version => 'TLSv1_2', no_ticket => 1), '0 1',
        'ssl_session_cache: a TLS 1.2 session id is resumed');
    cmp_ok($srv->stats->{ssl_new_sessions}, '>=', 1,
        'stats: ssl_new_sessions counts the cached sessions');
    my $set = $srv->stats('settings');
    is("$set->{ssl_session_cache} $set->{ssl_kernel_tls}", 'yes yes',
        'stats settings: ssl_session_cache, ssl_kernel_tls');
    my $s = tls_connect($srv);
    reply_is(send_recv($s, "set kt 0 0 " . length($big) . "\r\n$big\r\n"
        . "get kt\r\n", n => 2, timeout => 10),
        "STORED\r\nVALUE kt 0 " . length($big) . "\r\n$big\r\nEND\r\n",
        'ssl_kernel_tls: a large value in and out');
    $srv->stop;
}

# ------------------------------------------- stopping with TLS clients open
# SIGTERM closes them all between requests; under an ASan build the
# leak check runs at exit and would report a session not freed.
{
    my $srv = tls_server("-t 2 -o $certs,ssl_session_cache");
    my $idle = tls_connect($srv);
    reply_is(send_recv($idle, "version\r\n"), $VERSION, 'stop: a client');
    my $mid_value = tls_connect($srv);
    mc_send($mid_value, "set half 0 0 100\r\nabc");
    reply_is(send_recv($idle, "set big 0 0 " . length($big) . "\r\n$big\r\n"),
        "STORED\r\n", 'stop: a large value');
    my $mid_reply = tls_connect($srv);
    mc_send($mid_reply, "get big\r\n" x 50);    # 15 MB it does not read
    my $stalled = plain_sock($srv->{tls_port});
    mc_send($stalled, substr($HALF_HELLO, 0, 7));
    my $seen;
    ok(wait_until(3, sub { ($seen = tls_clients($srv)) == 4 }),
        'stop: four TLS connections in different states')
        or diag("stats conns lists $seen clients of the TLS port");
    stop_clean($srv, 'TLS clients open');
}

# ------------------------------------------- the binary protocol over TLS
# Frames split across TLS records both ways: a 300 KB value in and out,
# quiet forms answered only by the noop, and a counter; -B binary on the
# TLS port as well as auto-negotiation.  Compared with Debian's memcached
# where it is installed.
sub binary_over_tls {
    my ($srv) = @_;
    my $s = tls_connect($srv) or return ['no handshake'];
    my @seen;
    # one request at a time: memcached 1.6.18 leaves a request that came
    # in the TLS record that ended a large value unread until more bytes
    # arrive
    my $r = [@{ bin_exchange($s, bin_req('set', key => 'bt',
        ext => store_ext(7, 0), value => $big), 1, 10) },
        @{ bin_exchange($s, bin_req('getk', key => 'bt'), 1, 10) }];
    push @seen, map { "$_->{opcode}:$_->{status}:" . length($_->{value}) }
        @$r;
    push @seen, (@$r == 2 && $r->[1]{value} eq $big
        && unpack('N', $r->[1]{ext}) == 7) ? 'value intact' : 'value BAD';
    my $quiet = bin_sync($s, bin_req('setq', key => 'q1',
        ext => store_ext(0, 0), value => 'one')
        . bin_req('getq', key => 'nope') . bin_req('getkq', key => 'q1'));
    push @seen, $quiet ? join(',', map { "$_->{key}=$_->{value}" } @$quiet)
                       : 'no noop';
    $r = bin_exchange($s, bin_req('incr', key => 'n',
        ext => incr_ext(5, 40, 0)) . bin_req('incr', key => 'n',
        ext => incr_ext(5, 40, 0)), 2);
    push @seen, map { unpack('N', substr($_->{value}, 4)) } @$r;
    my $st = bin_stats($s);
    push @seen, $st->{_end} && defined $st->{curr_connections}
        ? 'stats' : 'no stats';
    return \@seen;
}
{
    my @who = ([ours => tls_server("-t 2 -o $certs")],
        [ours_binary_only => tls_server("-t 2 -B binary -o $certs")]);
    push @who, [stock => tls_server("-t 2 -o $certs", stock => 1)]
        if -x stock_bin() && !server_is_stock();
    my %seen = map { $_->[0] => binary_over_tls($_->[1]) } @who;
    is_deeply($seen{ours}, ['1:0:0', '12:0:300000', 'value intact',
        'q1=one', 40, 45, 'stats'],
        'binary over TLS: set/getk of 300 KB, quiet forms, incr, stat');
    is_deeply($seen{ours_binary_only}, $seen{ours},
        'binary over TLS with -B binary');
    my $s = tls_connect($who[0][1]);
    my $r = bin_exchange($s, bin_req('set', key => 'bp',
        ext => store_ext(1, 0), value => $big)
        . bin_req('getk', key => 'bp'), 2, 10);
    ok(@$r == 2 && $r->[1]{value} eq $big,
        'binary over TLS: a getk in the record that ends a 300 KB set');
    SKIP: {
        skip 'no stock memcached to compare with', 1 unless $seen{stock};
        is_deeply($seen{ours}, $seen{stock},
            'binary over TLS: the same as memcached');
    }
    $_->[1]->stop for @who;
}

# --------------------------------------- the same against Debian's memcached
SKIP: {
    skip 'no stock memcached to compare with', 6
        unless -x stock_bin() && !server_is_stock();
    my $opts = "-t 2 -o $certs,ssl_ca_cert=$dir/ca.crt,ssl_verify_mode=1,"
        . 'ssl_session_cache';
    my %srv = (ours => tls_server($opts),
        stock => tls_server($opts, stock => 1));
    my $script = "set a 1 0 3\r\nabc\r\nget a b\r\nmg a v f t\r\n"
        . "ms b 2 I\r\nxy\r\nma n N0 J5\r\nmn\r\nincr a 1\r\n"
        . "refresh_certs\r\nrefresh_certs noreply\r\nversion\r\n";
    my (%reply, %settings, %stat_names, %plain);
    for my $who (qw(ours stock)) {
        my $s = tls_connect($srv{$who}, cert => 'client');
        $reply{$who} = send_recv($s, $script, n => 9);
        my $set = $srv{$who}->stats('settings');
        $settings{$who} = join ' ', map { "$_=$set->{$_}" }
            sort grep { /^ssl_/ } keys %$set;
        $stat_names{$who} = join ' ', sort grep {
            /^ssl_|^time_since_server_cert_refresh$/
        } keys %{ $srv{$who}->stats };
        my $p = plain_sock($srv{$who}{tls_port});
        mc_send($p, "version\r\n");
        $plain{$who} = wait_closed($p, 3) ? 'closed:' . drain($p, 0)
                                          : 'open';
    }
    like($reply{ours}, qr/OK\r\n\Q$VERSION\E\z/,
        'our replies over TLS, all of them');
    is($reply{ours}, $reply{stock}, 'the same replies over TLS')
        or diag(escape_bytes($reply{ours}) . "\n"
            . escape_bytes($reply{stock}));
    is($settings{ours}, $settings{stock}, 'stats settings: same ssl_* lines');
    is($stat_names{ours}, $stat_names{stock}, 'stats: the same ssl_* names');
    is($plain{ours}, $plain{stock}, 'plaintext to the TLS port: the same');
    ok(tls_refused($srv{stock}, cert => 'rogue')
        && tls_refused($srv{ours}, cert => 'rogue'),
        'both refuse an untrusted client certificate in mode 1');
    $_->stop for values %srv;
}

done_testing();
