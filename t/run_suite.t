#!/usr/bin/perl
# run_suite.t: scripts/run-suite, the runner behind scripts/test, on test
# files written here.  A failed file fails the run, which names it with
# its failed checks and prints its diagnostics under it (t/lib/DiagLog.pm
# keeps them) and in BUILD_DIR/suite-failures.txt; a passing run says
# PASS and leaves no such file; a run of a file with no test fails.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use MemcachedTest qw(repo_root read_file write_file);

my $runner = repo_root() . '/scripts/run-suite';
my $dir = tempdir('run-suite-XXXXXX', TMPDIR => 1, CLEANUP => 1);
mkdir "$dir/build" or die "mkdir: $!";

my $header = "use strict; use warnings; use DiagLog; use Test::More;\n";
my $pass = write_file($dir, 'pass.t',
    $header . "ok(1, 'fine');\ndone_testing;\n");
my $fail = write_file($dir, 'fail.t', $header . <<'EOF');
ok(1, 'fine');
diag("server log:\nthe server said why");
is(1, 2, 'the check that fails');
done_testing;
EOF
my $empty = write_file($dir, 'empty.t', $header . "done_testing;\n");

sub run_suite {
    my (@files) = @_;
    my $out = `'$runner' --jobs 2 selftest '$dir/build' @files 2>&1`;
    return ($? >> 8, $out);
}

my $failures_file = "$dir/build/suite-failures.txt";

my ($rc, $out) = run_suite($pass, $fail);
isnt($rc, 0, 'a failed file fails the run');
like($out, qr/^== selftest \(\S+\): FAIL, 2 files/m, 'the summary says FAIL');
unlike($out, qr/^== selftest .*PASS/m, 'and never PASS');
like($out, qr/^   FAILED \Q$fail\E \(failed: the check that fails/m,
     'it names the failed file and its failed check');
unlike($out, qr/FAILED \Q$pass\E/, 'not the file that passed');
like($out, qr/^     \| # the server said why$/m,
     "the file's diagnostics follow it");
my $failures = -f $failures_file ? read_file($failures_file) : '';
like($failures, qr/^== selftest: failed files\n   FAILED \Q$fail\E/,
     'suite-failures.txt names the failed file');
like($failures, qr/^     \| # the server said why$/m,
     'with its diagnostics');

($rc, $out) = run_suite($pass);
is($rc, 0, 'a run of passing files passes');
like($out, qr/^== selftest \(\S+\): PASS, 1 files/m, 'and says PASS');
ok(!-e $failures_file, 'and leaves no suite-failures.txt');

($rc, $out) = run_suite($empty);
isnt($rc, 0, 'a run that executes no test fails');
like($out, qr/^   FAILED no test ran$/m, 'and says so');

done_testing;
