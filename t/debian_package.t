#!/usr/bin/perl
# debian_package.t: the Debian packages (debian/) build with
# dpkg-buildpackage, pass lintian and systemd-analyze verify, and in a
# throwaway Debian 12 root (mmdebstrap) replace Debian's memcached with its
# customised /etc/memcached.conf in effect, upgrade, give memcached back on
# remove and leave nothing on purge: scripts/deb-test does it and prints
# one `ok`/`not ok` line per check, which become this file's tests (its
# transcript is in the notes, and in the diagnostics when a check fails).
# It builds its own daemon from the tree, so it runs once, in the normal
# build's suite, and needs root (chroot).
use strict;
use warnings;
# the package build, lintian and the root take minutes, not the default
# 120 s budget of a file (it is scaled by the load as usual)
BEGIN { $ENV{MC_TEST_WATCHDOG} = 480 }
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;
use POSIX ();

plan skip_all => 'the package builds its own daemon: it runs in the normal'
    . ' build\'s suite, not under ' . server_sanitizer()
    if server_sanitizer();
plan skip_all => 'installing packages into a chroot needs root'
    if $> != 0;

my $root = repo_root();
my $port = free_port();
my @lines;
my $pid = open(my $fh, '-|') // die "fork: $!";
if (!$pid) {
    # its own process group, so that a stop takes its children too
    POSIX::setpgid(0, 0);
    open STDERR, '>&', \*STDOUT;
    open STDIN, '<', '/dev/null';
    exec "$root/scripts/deb-test", '--port', $port;
    die "exec scripts/deb-test: $!";
}
# the watchdog's exit (or ours) stops the script, which cleans up after
# itself (its daemon, its root)
END { kill 'TERM', -$pid if $pid && kill 0, $pid }
while (my $l = <$fh>) {
    chomp $l;
    push @lines, $l;
}
close $fh;
my $rc = $? >> 8;
$pid = 0;

if ($rc == 77) {
    my ($why) = map { /^deb-test: SKIP \((.*)\)$/ ? $1 : () } @lines;
    plan skip_all => $why // 'scripts/deb-test cannot run here';
}

my $failed = 0;
for my $l (@lines) {
    if ($l =~ /^(not )?ok - (.*)$/) {
        ok(!$1, $2) or $failed++;
    }
}
ok(scalar(grep { /^ok - / } @lines) > 20, 'scripts/deb-test ran its checks');
is($rc, 0, 'scripts/deb-test passes') or $failed++;
ok((grep { $_ eq 'deb-test: PASS' } @lines), 'deb-test: PASS') or $failed++;
if ($failed) {
    diag($_) for @lines[($#lines > 60 ? $#lines - 60 : 0) .. $#lines];
} else {
    note($_) for @lines;
}
done_testing();
