#!/usr/bin/perl
# install.t: `make install DESTDIR=...` from the build directory that holds
# the binary under test lays out the daemon (as `memcached`), its man page,
# the documentation, tiercached.service and tiercached.socket,
# tiercached.conf and the wrapper, the Prometheus exporter
# (tiercached-exporter) and its
# tiercached-exporter.service, and not memcached-debug; a reinstall keeps an
# edited conf and uninstall removes the rest; the units pass
# `systemd-analyze verify`; tiercached-wrapper builds the daemon's command
# line from a Debian-style conf (comments, quoting, -d and logfile dropped,
# the default -u user), and its --dry-run names the unit's stop signal and
# what that stop keeps, and really starts the daemon with it; the installed
# exporter scrapes that daemon.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;
use File::Basename qw(dirname basename);
use File::Find qw(find);
use File::Temp qw(tempdir);

my $bin = server_bin();
my $build = dirname($bin);
plan skip_all => "$bin is not in a configured build directory (no Makefile)"
    unless -f "$build/Makefile"
    && system("grep -q '^install-data-local:' '$build/Makefile'") == 0;
# `make install` would first rebuild what is stale, under the other tests'
# feet; a stale build is the developer's to remake. (-o config.h: its
# automake rule never updates it, so -q would always call it stale.)
plan skip_all => "$build is not up to date: run make there first"
    if system('make', '-s', '-q', '-o', 'config.h', '-C', $build,
        'all-am') != 0;

my $root = repo_root();
my $dest = tempdir('install-XXXXXX', TMPDIR => 1, CLEANUP => 1);

sub run_make {
    my ($target) = @_;
    my $out = `make -s -C '$build' $target DESTDIR='$dest' 2>&1`;
    return ($? >> 8, $out);
}

sub installed_files {
    my @files;
    find({ no_chdir => 1, wanted => sub { push @files, $_ if -f || -l } },
        $dest);
    return map { substr($_, length $dest) } sort @files;
}

sub spew {
    my ($path, $text) = @_;
    open my $fh, '>', $path or die "$path: $!";
    print $fh $text;
    close $fh;
}

# ---- the layout
my ($rc, $out) = run_make('install');
is($rc, 0, 'make install DESTDIR=... succeeds') or diag($out);
my @files = installed_files();
my $one = sub {
    my ($re, $what) = @_;
    my @m = grep { $_ =~ $re } @files;
    is(scalar @m, 1, "one $what installed") or diag("@files");
    return $m[0] // '';
};
my $daemon = $one->(qr{/bin/memcached\z}, 'daemon (bin/memcached)');
my $man = $one->(qr{/share/man/man1/memcached\.1\z}, 'man page');
my $unit = $one->(qr{/lib/systemd/system/tiercached\.service\z}, 'unit');
my $socket_unit = $one->(qr{/lib/systemd/system/tiercached\.socket\z},
    'socket unit');
my $conf = $one->(qr{/etc/tiercached\.conf\z}, 'conf');
my $conf_default = $one->(qr{/share/tiercached/tiercached\.conf\.default\z},
    'default conf');
my $wrapper = $one->(qr{/libexec/tiercached/tiercached-wrapper\z},
    'wrapper');
my $exporter = $one->(qr{/bin/tiercached-exporter\z},
    'exporter (bin/tiercached-exporter)');
my $exporter_unit = $one->(
    qr{/lib/systemd/system/tiercached-exporter\.service\z}, 'exporter unit');
is_deeply([grep { /memcached-debug/ } @files], [],
    'memcached-debug is not installed');
ok(-x "$dest$daemon" && -x "$dest$wrapper", 'daemon and wrapper executable');
ok(-x "$dest$exporter", 'exporter executable');
is(read_file("$dest$exporter"), read_file("$root/scripts/tiercached-exporter"),
    'the installed exporter is scripts/tiercached-exporter');
my (undef, $v) = run_binary("$dest$daemon", ['-V'], 5);
like($v, qr/^memcached 1\.6\.18$/m, 'the installed daemon runs (-V)');
like(read_file("$dest$man"), qr/^\.TH MEMCACHED 1/m, 'man page is memcached(1)');
is(read_file("$dest$conf"), read_file("$dest$conf_default"),
    'conf and its .default are the same file');

my @docs = ('README.md', map { basename($_) } glob("$root/doc/*.md"));
my ($docdir) = map { m{^(.*/share/doc/tiercached)/README\.md\z} ? $1 : () }
    @files;
ok($docdir, 'documentation directory share/doc/tiercached');
my @missing = grep { !-f "$dest$docdir/$_" } @docs;
is("@missing", '', 'every doc/*.md and README.md installed');

# ---- the units name installed paths
# the words of a unit's ExecStart, its continuation lines joined
sub exec_start {
    my ($text) = @_;
    (my $joined = $text) =~ s/\\\n\s*/ /g;
    my ($line) = $joined =~ /^ExecStart=(.*)$/m;
    return split ' ', $line // '';
}
my $unit_text = read_file("$dest$unit");
my ($exec, $exec_conf) = exec_start($unit_text);
is($exec, $wrapper, 'unit: ExecStart runs the installed wrapper');
is($exec_conf, $conf, 'unit: the wrapper reads the installed conf');
unlike($unit_text, qr/^PrivateDevices=(?:true|yes)/m,
    'unit: no PrivateDevices (it would hide /dev/dax*)');
like($unit_text, qr/^DeviceAllow=char-dax rw$/m, 'unit: DAX devices allowed');
unlike($unit_text, qr/^User=/m, 'unit: the daemon drops to -u itself');
like($unit_text, qr/^Type=notify$/m, 'unit: Type=notify (READY=1)');
like($unit_text, qr/^KillSignal=SIGUSR1$/m, 'unit: stops with SIGUSR1');
like($unit_text, qr/^Requires=tiercached\.socket$/m,
    'unit: requires its socket');
my $socket_text = read_file("$dest$socket_unit");
like($socket_text, qr/^ListenStream=127\.0\.0\.1:11211$/m,
    'socket unit: the conf\'s default address');
like(read_file("$dest$conf"), qr/^-l 127\.0\.0\.1$/m,
    'the conf\'s default -l is the socket\'s');
my $exporter_text = read_file("$dest$exporter_unit");
my @exporter_exec = exec_start($exporter_text);
is_deeply(\@exporter_exec, [$exporter, '$OPTIONS'],
    'exporter unit: ExecStart runs the installed exporter with $OPTIONS');
like($exporter_text, qr/^Environment=OPTIONS=$/m,
    'exporter unit: OPTIONS empty by default');
my ($doc_uri) = $exporter_text =~ /^Documentation=file:(\S+)$/m;
ok($doc_uri && -f "$dest$doc_uri" && $doc_uri =~ /monitoring\.md\z/,
    'exporter unit: Documentation names the installed monitoring.md')
    or diag($doc_uri // 'no Documentation=file:');
like($exporter_text, qr/^DynamicUser=(?:true|yes)$/m,
    'exporter unit: runs as a user of its own');

# ---- systemd-analyze verify
SKIP: {
    my $analyze = `command -v systemd-analyze 2>/dev/null`;
    chomp $analyze;
    skip 'systemd-analyze is not installed', 7 unless $analyze;
    # verify checks ExecStart's program exists: point it into DESTDIR
    my $dir = tempdir('verify-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    (my $copy = $unit_text) =~ s{\Q$wrapper\E}{$dest$wrapper}g;
    $copy =~ s{\Q$conf\E}{$dest$conf}g;
    spew("$dir/tiercached.service", $copy);
    # the service requires its socket: verify looks for it beside it
    spew("$dir/tiercached.socket", $socket_text);
    my $report = `cd '$dir' && '$analyze' verify --man=no \\
        '$dir/tiercached.service' 2>&1`;
    is($? >> 8, 0, 'systemd-analyze verify: exit status 0');
    is($report, '', 'systemd-analyze verify: no complaint');
    # the same check sees a broken unit, so its silence above means
    # something
    mkdir "$dir/bad";
    spew("$dir/bad/tiercached.service",
        $copy =~ s/^ProtectHome=true$/ProtectHome=sometimes/mr);
    $report = `cd '$dir' && '$analyze' verify --man=no \\
        '$dir/bad/tiercached.service' 2>&1`;
    like($report, qr/ProtectHome|protect home/i,
        'systemd-analyze verify reports a bad setting');
    (my $ecopy = $exporter_text) =~ s{\Q$exporter\E}{$dest$exporter}g;
    spew("$dir/tiercached-exporter.service", $ecopy);
    $report = `cd '$dir' && '$analyze' verify --man=no \\
        '$dir/tiercached-exporter.service' 2>&1`;
    is($? >> 8, 0, 'systemd-analyze verify, exporter unit: exit status 0');
    is($report, '', 'systemd-analyze verify, exporter unit: no complaint');
    $report = `cd '$dir' && '$analyze' verify --man=no \\
        '$dir/tiercached.socket' '$dir/tiercached.service' 2>&1`;
    is($? >> 8, 0, 'systemd-analyze verify, socket unit: exit status 0');
    is($report, '', 'systemd-analyze verify, socket unit: no complaint');
}

# ---- the wrapper's command line
my $work = tempdir('wrapper-XXXXXX', TMPDIR => 1, CLEANUP => 1);
chmod 0755, $work;

sub dry_run {
    my ($text, @extra) = @_;
    spew("$work/t.conf", $text);
    my ($code, $o) = run_binary("$dest$wrapper",
        ['--dry-run', "$work/t.conf", @extra], 5);
    chomp $o;
    # the command, then the stop plan as comments
    my ($command, @comments) = split /\n/, $o;
    return ($code, $command // '', @comments);
}

my $default_user = '';
if ($> == 0) {
    ($default_user) = grep { defined getpwnam($_) } qw(memcache nobody);
    $default_user = " -u $default_user";
}
my $sample = <<'CONF';
# a comment
   # an indented comment

-d
logfile /var/log/tiercached.log
-m 64   # a comment after an option
-p 11211
-l 127.0.0.1,::1
-o nvm_path="/mnt/pmem 0/zone",nvm_size=1g
-o tier_policy=uni
--daemon
-c 'it''s'
-o x=a\#b
-vv
CONF
my ($code, $cmd, @plan) = dry_run($sample, '-A');
is($code, 0, 'wrapper --dry-run: exit status 0');
is($plan[0], '# tiercached.service stops the daemon with SIGUSR1 '
    . '(graceful stop)', 'wrapper --dry-run: the unit\'s stop signal');
{
    local $ENV{TIERCACHED_BIN} = $bin;
    my (undef, undef, @kept) = dry_run("-m 64\n-o nvm_path=/z,nvm_size=1g\n");
    like($kept[1], qr/^# graceful stop \(SIGUSR1\) keeps: the N-zone's items/,
        'wrapper --dry-run: an nvm_path= zone keeps the N items ...');
    like($kept[2], qr/^# graceful stop timeout: (\d+) s \(EXTEND_TIMEOUT_USEC/,
        '... and the stop timeout the daemon asks for');
    my (undef, undef, @none) = dry_run("-m 64\n-o nvm_size=1g\n");
    like($none[1], qr/^# graceful stop \(SIGUSR1\) keeps: nothing/,
        'wrapper --dry-run: an anonymous N-zone keeps nothing');
    my (undef, undef, @memfile) = dry_run("-m 64\n-e /x/memfile\n");
    like($memfile[1], qr/memory file \(-e \/x\/memfile\)/,
        'wrapper --dry-run: -e keeps the D-zone\'s items');
}
is($cmd, "$daemon -m 64 -p 11211 -l 127.0.0.1,::1"
    . " -o 'nvm_path=/mnt/pmem 0/zone,nvm_size=1g' -o tier_policy=uni"
    . " -c its -o 'x=a#b' -vv -A$default_user",
    'wrapper: comments, blank lines, -d and logfile dropped, quoting kept, '
    . 'extra options last');
($code, $cmd) = dry_run("-m 8\n-u someone\n");
is($cmd, "$daemon -m 8 -u someone", 'wrapper: the conf\'s -u is kept');
($code, $cmd) = dry_run("-m 8\n--user=someone\n");
is($cmd, "$daemon -m 8 --user=someone", 'wrapper: --user= counts as -u');
($code, $cmd) = dry_run("-m 8\n", '-u', 'other');
is($cmd, "$daemon -m 8 -u other", 'wrapper: an extra -u counts');
($code, $cmd) = dry_run("-m 8\nmemory 64\n");
is($code, 1, 'wrapper: a line that is no option fails');
like($cmd, qr/t\.conf line 2: 'memory' is not an option/,
    'wrapper: the message names the file, the line and the word');
($code, $cmd) = dry_run("-l '127.0.0.1\n");
is($code, 1, 'wrapper: an open quote fails');
like($cmd, qr/line 1: unterminated ' quote$/, 'wrapper: open quote message');
($code, $cmd) = run_binary("$dest$wrapper", ['--dry-run', "$work/none"], 5);
is($code, 1, 'wrapper: a missing conf fails');
like($cmd, qr/cannot read \S+none/, 'wrapper: missing conf message');

# ---- the wrapper starts the daemon (here: the binary under test) with the
# conf; -d is in it, so a daemon that forked away would fail the start
spew("$work/run.conf", "-d\n-m 8\n-o nvm_size=32m\n-t 1\n");
{
    local $ENV{TIERCACHED_BIN} = $bin;
    my $srv = new_memcached("$work/run.conf", bin => "$dest$wrapper");
    my $set = $srv->stats('settings');
    is($set->{maxbytes}, 8 * 1024 * 1024, 'wrapper-started daemon: -m 8');
    is($set->{nvm_size}, 32 * 1024 * 1024, 'wrapper-started daemon: N-zone');
    is($set->{tcpport}, $srv->port, 'wrapper-started daemon: extra -p');
    is($srv->stats->{server}, 'tiercached', 'wrapper-started daemon answers');
    SKIP: {
        skip 'python3 cannot import prometheus_client (install-deps)', 2
            if system('python3 -c "import prometheus_client" 2>/dev/null');
        my ($ecode, $scrape) = run_binary("$dest$exporter",
            ['--once', '--server', '127.0.0.1:' . $srv->port], 30);
        is($ecode, 0, 'installed exporter --once: exit status 0')
            or diag($scrape);
        like($scrape, qr/^tiercached_up 1(?:\.0)?$/m,
            'installed exporter reads the daemon (tiercached_up 1)');
    }
    $srv->stop;
}

# ---- a reinstall keeps an edited conf; uninstall removes the rest
spew("$dest$conf", read_file("$dest$conf") . "-v\n");
($rc, $out) = run_make('install');
is($rc, 0, 'second make install succeeds') or diag($out);
like(read_file("$dest$conf"), qr/^-v\n\z/m, 'reinstall keeps the edited conf');
($rc, $out) = run_make('uninstall');
is($rc, 0, 'make uninstall succeeds') or diag($out);
is_deeply([installed_files()], [$conf],
    'uninstall leaves only the edited conf');

done_testing();
