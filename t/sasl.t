#!/usr/bin/perl
# sasl.t: SASL authentication (-S; doc/protocol.md "SASL") with Cyrus
# SASL's PLAIN mechanism over the binary protocol.
#
#  - Passwords from MEMCACHED_SASL_PWDB (user:password lines), the
#    configuration (mech_list) from SASL_CONF_PATH/memcached.conf.
#  - Before authenticating only version and the SASL opcodes are served;
#    anything else gets "Auth failure." and the connection is closed.
#  - list mechanisms, auth, auth then step (PLAIN with an empty first
#    response), wrong password, unknown user, unknown mechanism, step
#    without auth, mechanism names too long or empty, stats.
#  - responses longer than 1024 bytes are refused as failed logins before
#    libsasl2 sees them (it keeps a user name over 1024 bytes for good at
#    each failed login: 500 with 60,000-byte names grow it by 30 MB);
#    up to 1024 bytes they authenticate.
#  - -S forces the binary protocol; -S with -B ascii or UDP, or without
#    any SASL configuration, does not start.
#  - pylibmc with username/password over the binary protocol.
#  - Differential: Debian's memcached -S with the same user in a sasldb
#    (saslpasswd2), the same frames to both.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use MemcachedTest;
use BinaryFrames;

my $dir = tempdir('mcsasl-XXXXXX', TMPDIR => 1, CLEANUP => 1);
chmod 0755, $dir;


write_file($dir, 'memcached.conf', "mech_list: plain\nsasldb_path: $dir/sasldb2\n");
# carol's PLAIN response is exactly 1024 bytes, erin's 1025
my $pwdb = write_file($dir, 'pwdb', "alice:secret\nbob:pw:with:colons\r\n"
    . 'carol:' . ('p' x 1017) . "\nerin:" . ('q' x 1019) . "\n");
$ENV{SASL_CONF_PATH} = $dir;
$ENV{MEMCACHED_SASL_PWDB} = $pwdb;

sub plain { my ($user, $pass) = @_; return "\0$user\0$pass" }

# [name, frames, want (descriptions), closed afterwards]
my @sessions = (
    ['version and list before auth',
        bin_req('version') . bin_req('sasl_list'),
        ['0b/0000 v=1.6.18 c=0', '20/0000 v=PLAIN c=0'], 0],
    ['noop before auth', bin_req('noop'),
        ['0a/0020 v=Auth failure. c=0'], 1],
    ['get before auth', bin_req('get', key => 'k'),
        ['00/0020 v=Auth failure. c=0'], 1],
    ['quiet set before auth',
        bin_req('setq', key => 'k', ext => store_ext(0), value => 'v'),
        ['11/0020 v=Auth failure. c=0'], 1],
    ['auth, then commands',
        bin_req('sasl_auth', key => 'PLAIN', value => plain('alice', 'secret'))
        . bin_req('set', key => 'k', ext => store_ext(3), value => 'v')
        . bin_req('get', key => 'k'),
        ['21/0000 v=Authenticated c=0', '01/0000 c=C',
         '00/0000 x=00000003 v=v c=C'], 0],
    ['authorization id given',
        bin_req('sasl_auth', key => 'PLAIN',
            value => "alice" . plain('alice', 'secret'))
        . bin_req('noop'),
        ['21/0000 v=Authenticated c=0', '0a/0000 c=0'], 0],
    ['wrong password: refused, then closed at the next command',
        bin_req('sasl_auth', key => 'PLAIN', value => plain('alice', 'nope'))
        . bin_req('get', key => 'k'),
        ['21/0020 v=Auth failure. c=0', '00/0020 v=Auth failure. c=0'], 1],
    ['a retry after a failure',
        bin_req('sasl_auth', key => 'PLAIN', value => plain('alice', 'nope'))
        . bin_req('sasl_auth', key => 'PLAIN', value => plain('alice', 'secret'))
        . bin_req('get', key => 'k'),
        ['21/0020 v=Auth failure. c=0', '21/0000 v=Authenticated c=0',
         '00/0000 x=00000003 v=v c=C'], 0],
    ['unknown user', bin_req('sasl_auth', key => 'PLAIN',
            value => plain('mallory', 'secret')),
        ['21/0020 v=Auth failure. c=0'], 0],
    ['mechanism not offered', bin_req('sasl_auth', key => 'CRAM-MD5'),
        ['21/0020 v=Auth failure. c=0'], 0],
    ['step without auth', bin_req('sasl_step', key => 'PLAIN',
            value => plain('alice', 'secret')),
        ['22/0020 v=Auth failure. c=0'], 0],
    ['auth with no response, then step',
        bin_req('sasl_auth', key => 'PLAIN')
        . bin_req('sasl_step', key => 'PLAIN', value => plain('alice', 'secret'))
        . bin_req('noop'),
        ['21/0021 c=0', '22/0000 v=Authenticated c=0', '0a/0000 c=0'], 0],
    ['mechanism name over 32 bytes: its value skipped',
        bin_req('sasl_auth', key => 'P' x 40, value => 'xyz')
        . bin_req('version'),
        ['21/0004 v=Invalid arguments c=0', '0b/0000 v=1.6.18 c=0'], 0],
    ['user name of 60,000 bytes: refused, its value skipped',
        bin_req('sasl_auth', key => 'PLAIN', value => plain('u' x 60000, 'pw'))
        . bin_req('version'),
        ['21/0020 v=Auth failure. c=0', '0b/0000 v=1.6.18 c=0'], 0],
    ['empty mechanism name', bin_req('sasl_auth', value => 'x'),
        ['21/0004 v=Invalid arguments c=0'], 1],
    ['list with a key', bin_req('sasl_list', key => 'x'),
        ['20/0004 v=Invalid arguments c=0'], 1],
    ['ASCII is bad magic', "get foo bar baz qux quux\r\n", [], 1],
);

sub run_sessions {
    my ($srv, @only) = @_;
    my %got;
    for my $s (@sessions) {
        my ($name, $frames, $want, $closes) = @$s;
        my $sock = $srv->sock;
        my $r = bin_exchange($sock, $frames, scalar @$want, 3);
        my $closed = wait_closed($sock, $closes ? 3 : 0.1);
        $got{$name} = [(map { bin_desc($_) } @$r), $closed ? 'closed' : 'open'];
    }
    return \%got;
}

my $srv = new_memcached('-S');
my $ours = run_sessions($srv);
for my $s (@sessions) {
    my ($name, $frames, $want, $closes) = @$s;
    is_deeply($ours->{$name}, [@$want, $closes ? 'closed' : 'open'], $name);
}

{
    my $sock = $srv->sock;
    bin_exchange($sock, bin_req('sasl_auth', key => 'PLAIN',
        value => plain('bob', 'pw:with:colons')), 1);
    my $st = bin_stats($sock);
    ok($st->{_end}, 'bob (password with colons, CRLF line) authenticated: '
        . 'stats served');
    cmp_ok($st->{auth_cmds}, '>=', 9, "auth_cmds $st->{auth_cmds}");
    cmp_ok($st->{auth_errors}, '>=', 5, "auth_errors $st->{auth_errors}");
    $st = bin_stats($sock, 'settings');
    is($st->{auth_enabled_sasl}, 'yes', 'stats settings: auth_enabled_sasl');
    is($st->{binding_protocol}, 'binary', '-S forces the binary protocol');
}

# the response length cap: 1024 bytes reach libsasl2, 1025 do not
{
    my $sock = $srv->sock;
    my $r = bin_exchange($sock, bin_req('sasl_auth', key => 'PLAIN',
        value => plain('carol', 'p' x 1017)), 1);
    is(bin_desc($r->[0]), '21/0000 v=Authenticated c=0',
        'a 1024-byte PLAIN response authenticates');
    $sock = $srv->sock;
    $r = bin_exchange($sock, bin_req('sasl_auth', key => 'PLAIN',
        value => plain('erin', 'q' x 1019)) . bin_req('version'), 2);
    is_deeply([map { bin_desc($_) } @$r],
        ['21/0020 v=Auth failure. c=0', '0b/0000 v=1.6.18 c=0'],
        'a 1025-byte one is refused though the password is right');
    $r = bin_exchange($sock, bin_req('sasl_step', key => 'PLAIN',
        value => 'x' x 2000) . bin_req('version'), 2);
    is_deeply([map { bin_desc($_) } @$r],
        ['22/0020 v=Auth failure. c=0', '0b/0000 v=1.6.18 c=0'],
        'a step too: refused, its value skipped');
}

# failed logins with huge user names cost the server nothing lasting
SKIP: {
    skip 'sanitizer builds: their allocators change RSS', 3
        if slowdown() > 1;
    my $rss = sub { proc_status_kb($srv->pid, 'RssAnon') // 0 };
    my $admin = $srv->sock;
    bin_exchange($admin, bin_req('sasl_auth', key => 'PLAIN',
        value => plain('alice', 'secret')), 1);
    my $errors = bin_stats($admin)->{auth_errors};
    my $before = $rss->();
    my $sock = $srv->sock;
    my $frame = bin_req('sasl_auth', key => 'PLAIN',
        value => plain('u' x 60000, 'pw'));
    my $failed = 0;
    for (1 .. 300) {
        my $r = bin_exchange($sock, $frame, 1);
        $failed++ if @$r && $r->[0]{status} == 0x20;
    }
    my $grown = $rss->() - $before;
    is($failed, 300, '300 logins with 60,000-byte user names failed');
    # libsasl2 would keep 60 KB of each: 18 MB
    cmp_ok($grown, '<', 2048, "anonymous memory grew by $grown kB (< 2 MB)");
    is(bin_stats($admin)->{auth_errors}, $errors + 300,
        'auth_errors counts them');
}

SKIP: {
    my ($rc) = run_binary('/bin/sh',
        ['-c', "/usr/bin/python3 -c 'import pylibmc' 2>/dev/null"], 20);
    skip 'pylibmc not importable (apt-get install python3-pylibmc)', 2
        unless defined $rc && $rc eq '0';
    my $script = write_file($dir, 'sasl_client.py', <<'PY');
import sys, pylibmc
port, user, password = int(sys.argv[1]), sys.argv[2], sys.argv[3]
mc = pylibmc.Client(["127.0.0.1:%d" % port], binary=True,
                    username=user, password=password)
try:
    ok = mc.set("py:k", "value") and mc.get("py:k") == "value"
    print("OK" if ok else "MISMATCH")
except pylibmc.Error as e:
    print("ERROR " + str(e).split(",")[0])
PY
    my (undef, $out) = run_binary('/usr/bin/python3',
        [$script, $srv->port, 'alice', 'secret'], 30);
    is($out, "OK\n", 'pylibmc with username/password: set and get');
    (undef, $out) = run_binary('/usr/bin/python3',
        [$script, $srv->port, 'alice', 'wrong'], 30);
    like($out, qr/^ERROR .*AUTHENTICATION FAILURE/,
        'pylibmc with a wrong password: authentication failure');
}
ok($srv->alive, 'server alive');

# start-up
{
    my $bin = server_bin();
    my @user = $> == 0 ? ('-u', 'nobody') : ();
    for my $c (['-S -B ascii', 64,
                qr/^ERROR: You cannot allow the ASCII protocol while using SASL\./],
               ['-S -B auto', 64, qr/^ERROR: You cannot allow the ASCII/],
               ['-S -U 1', 64,
                qr/^ERROR: Cannot enable UDP while using binary SASL authentication\./]) {
        my ($args, $code, $re) = @$c;
        my ($rc, $out) = run_binary($bin, [split(' ', $args), '-p', '0',
            '-l', '127.0.0.1', @user], 10);
        is($rc, $code, "$args: exit $code");
        like($out, $re, "$args: message");
    }
    SKIP: {
        skip 'a system SASL configuration for memcached exists', 2
            if -e '/etc/sasl/memcached.conf' || -e '/etc/sasl2/memcached.conf';
        local $ENV{SASL_CONF_PATH};
        delete $ENV{SASL_CONF_PATH};
        my ($rc, $out) = run_binary($bin, ['-S', '-p', '0', '-l',
            '127.0.0.1', @user], 10);
        is($rc, 1, '-S without a SASL configuration: exit 1');
        like($out, qr/SASL_CONF_PATH.*\nError initializing sasl\.$/s,
            '-S without a SASL configuration: says where it looked');
    }
}

SKIP: {
    my $saslpasswd = '/usr/sbin/saslpasswd2';
    skip 'Debian memcached not installed (apt-get install memcached)', 1
        unless -x stock_bin() && !server_is_stock();
    skip "$saslpasswd not installed (apt-get install sasl2-bin)", 1
        unless -x $saslpasswd;
    # Debian's memcached has no MEMCACHED_SASL_PWDB: the same user in a
    # sasldb, which ours reads too
    my ($rc, $out) = run_binary('/bin/sh', ['-c', "echo secret | $saslpasswd"
        . " -p -c -f $dir/sasldb2 -a memcached alice && chmod 644 "
        . "$dir/sasldb2"], 20);
    is($rc, 0, 'sasldb made') or diag($out);
    local $ENV{MEMCACHED_SASL_PWDB};
    delete $ENV{MEMCACHED_SASL_PWDB};
    my $ref = stock_memcached('-S');
    my $theirs = run_sessions($ref);
    my $ours_db = run_sessions(new_memcached('-S'));
    for my $s (@sessions) {
        my ($name) = @$s;
        is_deeply($ours_db->{$name}, $theirs->{$name}, "differential: $name");
    }
}

done_testing();
