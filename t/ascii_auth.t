#!/usr/bin/perl
# ascii_auth.t: ASCII authentication (-Y authfile; doc/protocol.md "ASCII
# authentication").  The first command is a set whose value is
# "user password"; STORED on success, "CLIENT_ERROR authentication
# failure" otherwise (the client may try again), "CLIENT_ERROR
# unauthenticated" for anything else before that.  Also: start-up errors
# (bad files, -B binary, UDP), stats, a differential against Debian's
# memcached -Y request by request, and pipelined requests (where
# memcached 1.6.18 sends only the last reply, we send every one).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use MemcachedTest;

my $dir = tempdir('mcauth-XXXXXX', TMPDIR => 1, CLEANUP => 1);
chmod 0755, $dir;


my $authfile = write_file($dir, 'auth', "alice:secret\r\nbob:pw:with:colons\n"
    . join('', map { "user$_:pass$_\n" } 1 .. 20) . 'last:noeol');

# Send one request and read $lines reply lines (plus anything that
# follows at once); "<EOF>" marks a closed connection.
sub exchange {
    my ($sock, $req, $lines) = @_;
    mc_send($sock, $req);
    my $out = '';
    for (1 .. $lines) {
        my $l = read_line($sock, 3) // last;
        $out .= $l;
    }
    $out .= drain($sock, 0.05);
    return $out . (MemcachedTest::is_eof($sock) ? '<EOF>' : '');
}

sub nlines { my ($t) = @_; return scalar(() = $t =~ /\n/g) }

# [request, reply] steps on one connection
my @sessions = (
    ['not authenticated', [
        ["get foo\r\n", "CLIENT_ERROR unauthenticated\r\n"],
        ["version\r\n", "CLIENT_ERROR unauthenticated\r\n"],
        ["stats\r\n", "CLIENT_ERROR unauthenticated\r\n"],
        ["sett x 0 0 12\r\n", "CLIENT_ERROR unauthenticated\r\n"],
        ["set x 0 0\r\n", "CLIENT_ERROR unauthenticated\r\n"],
        ["set x 0 0 -1\r\n", "CLIENT_ERROR unauthenticated\r\n"],
        ["set x 0 0 0xc\r\n", "CLIENT_ERROR unauthenticated\r\n"],
        ["quit\r\n", "CLIENT_ERROR unauthenticated\r\n"],
    ]],
    ['good credentials', [
        ["set any 0 0 12\r\nalice secret\r\n", "STORED\r\n"],
        ["get any\r\n", "END\r\n"],
        ["set k 0 0 1\r\nv\r\n", "STORED\r\n"],
        ["get k\r\n", "VALUE k 0 1\r\nv\r\nEND\r\n"],
    ]],
    ['failure, then a retry', [
        ["set x 0 0 10\r\nalice nope\r\n",
            "CLIENT_ERROR authentication failure\r\n"],
        ["get k\r\n", "CLIENT_ERROR unauthenticated\r\n"],
        ["set x 0 0 13\r\nmallory evil!\r\n",
            "CLIENT_ERROR authentication failure\r\n"],
        ["set x 0 0 5\r\nalice\r\n",
            "CLIENT_ERROR bad authentication token format\r\n"],
        ["set x 0 0 6\r\nalice \r\n",
            "CLIENT_ERROR bad authentication token format\r\n"],
        ["set x 0 0 12\r\nalice secret\n\n",
            "CLIENT_ERROR bad command line termination\r\n"],
        ["set x 0 0 12 7 8 9\r\nalice secret\r\n", "STORED\r\n"],
        ["version\r\n", "VERSION 1.6.18\r\n"],
    ]],
    ['token spacing and line ends', [
        ["set  x  0 0 13\nalice secret \r\n", "STORED\r\n"],
    ]],
    ['leading space', [
        ["set x 0 0 13\r\n alice secret\r\n", "STORED\r\n"],
    ]],
    ['extra words', [
        ["set x 0 0 16\r\nalice secret xyz\r\n", "STORED\r\n"],
    ]],
    ['password with colons', [
        ["set x 0 0 18\r\nbob pw:with:colons\r\n", "STORED\r\n"],
    ]],
    ['a CR is part of the password', [
        ["set x 0 0 13\r\nalice secret\r\r\n",
            "CLIENT_ERROR authentication failure\r\n"],
    ]],
    ['a binary frame is text here', [
        ["\x80\x00\x00\x00\r\n", "CLIENT_ERROR unauthenticated\r\n"],
    ]],
);

sub run_sessions {
    my ($srv, $label) = @_;
    my %got;
    for my $s (@sessions) {
        my ($name, $steps) = @$s;
        my $sock = $srv->sock;
        for my $i (0 .. $#$steps) {
            push @{ $got{$name} }, exchange($sock, $steps->[$i][0],
                nlines($steps->[$i][1]));
        }
    }
    return \%got;
}

my $srv = new_memcached("-Y $authfile");
my $ours = run_sessions($srv);
for my $s (@sessions) {
    my ($name, $steps) = @$s;
    is_deeply($ours->{$name}, [map { $_->[1] } @$steps], $name);
}

# memcached 1.6.18 reads at most 8 entries, each under 256 bytes, and
# ignores a last line without a newline; every entry counts here
{
    my $sock = $srv->sock;
    is(exchange($sock, "set x 0 0 13\r\nuser20 pass20\r\n", 1),
        "STORED\r\n", 'the 22nd entry counts');
    $sock = $srv->sock;
    is(exchange($sock, "set x 0 0 10\r\nlast noeol\r\n", 1),
        "STORED\r\n", 'a last line without a newline counts');
}

# bad input before authentication
{
    my $sock = $srv->sock;
    mc_send($sock, 'x' x 3000);
    ok(wait_closed($sock, 3), 'a first line over 2048 bytes: closed');
    $sock = $srv->sock;
    mc_send($sock, "set x 0 0 20000\r\n");
    ok(wait_closed($sock, 3),
        'credentials longer than the read buffer: closed');
    $sock = $srv->sock;
    mc_send($sock, "set x 0 0 12\r\nalice");
    close $sock;
    $sock = $srv->sock;
    is(exchange($sock, "set x 0 0 12\r\nalice secret\r\nget k\r\n", 4),
        "STORED\r\nVALUE k 0 1\r\nv\r\nEND\r\n",
        'half-sent credentials then close; others unharmed');
}

# pipelined: every reply (memcached 1.6.18 sends only the last one)
{
    my $sock = $srv->sock;
    is(exchange($sock, "get a\r\nset x 0 0 10\r\nalice nope\r\n"
        . "set x 0 0 12\r\nalice secret\r\nversion\r\n", 1),
        "CLIENT_ERROR unauthenticated\r\nCLIENT_ERROR authentication "
        . "failure\r\nSTORED\r\nVERSION 1.6.18\r\n",
        'pipelined: one reply per request');
}

# stats
{
    my $sock = $srv->sock;
    exchange($sock, "set x 0 0 12\r\nalice secret\r\n", 1);
    my $st = mem_stats($sock, 'settings');
    is($st->{auth_enabled_ascii}, $authfile,
        'stats settings: auth_enabled_ascii is the file');
    is($st->{binding_protocol}, 'ascii', '-Y speaks ASCII only');
    $st = mem_stats($sock);
    ok($st->{auth_cmds} >= 10 && $st->{auth_errors} >= 3,
        "stats: auth_cmds $st->{auth_cmds}, auth_errors $st->{auth_errors}");
}
ok($srv->alive, 'server alive');

# start-up errors
{
    my $bin = server_bin();
    my @cases = (
        ["-Y $dir/none", 1, qr/^Could not open authfile \[\Q$dir\E\/none\] for reading/],
        ['-Y ' . write_file($dir, 'bad', "alice\n"), 1,
            qr/has a malformed entry\. Should be 'user:password'/],
        ['-Y ' . write_file($dir, 'blank', "a:b\n\nc:d\n"), 1,
            qr/has a malformed entry/],
        ["-Y $authfile -B binary", 64, qr/^ERROR: You cannot allow the BINARY protocol while using ascii authentication tokens\./],
        ["-Y $authfile -B auto", 64, qr/^ERROR: You cannot allow the BINARY/],
        ["-Y $authfile -U 1", 64, qr/^Cannot use UDP with ascii authentication enabled \(-U 0 to disable\)/],
    );
    for my $c (@cases) {
        my ($args, $code, $re) = @$c;
        my ($rc, $out) = run_binary($bin, [split(' ', $args), '-p', '0',
            '-l', '127.0.0.1', ($> == 0 ? ('-u', 'nobody') : ())], 10);
        is($rc, $code, "start-up with $args: exit $code");
        like($out, $re, "start-up with $args: message");
    }
    my $empty = new_memcached('-Y ' . write_file($dir, 'empty', ''));
    is(exchange($empty->sock, "set x 0 0 3\r\na b\r\n", 1),
        "CLIENT_ERROR authentication failure\r\n",
        'an empty authfile: nobody gets in');
}

SKIP: {
    skip 'Debian memcached not installed (apt-get install memcached)', 1
        unless -x stock_bin() && !server_is_stock();
    my $ref = stock_memcached("-Y $authfile");
    my $theirs = run_sessions($ref);
    for my $s (@sessions) {
        my ($name) = @$s;
        is_deeply($ours->{$name}, $theirs->{$name},
            "differential: $name");
    }
}

done_testing();
