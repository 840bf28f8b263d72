#!/usr/bin/perl
# unit.t: runs every executable t/unit/test_* (C unit tests for internals,
# built by make) and checks each exits 0; its output is shown on failure.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

# scripts/test builds out of tree and names the directory; a plain
# in-tree build leaves the programs beside their sources.
my $dir = $ENV{UNIT_TEST_DIR} || "$FindBin::Bin/unit";
my @tests = sort grep { -f $_ && -x $_ && !/\.(?:c|o|h)$/ } glob("$dir/test_*");
if (!@tests) {
    # a named directory without programs means the build is broken: this
    # file fails (and only it: a bail-out would stop the other files)
    if ($ENV{UNIT_TEST_DIR}) {
        fail("unit test programs in $dir");
        diag("UNIT_TEST_DIR=$dir holds no test_* program: is the build "
            . 'complete?');
        done_testing();
        exit 1;
    }
    plan skip_all => "no unit test binaries built in t/unit (run make first)";
}
for my $t (@tests) {
    (my $name = $t) =~ s{.*/}{};
    my ($code, $out) = run_binary($t, [], 60);
    is($code, 0, "$name exits 0") or diag($out);
}
done_testing();
