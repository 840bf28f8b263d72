#!/usr/bin/perl
# memccapable.t: libmemcached's protocol conformance tool `memccapable`,
# its ASCII and its binary tests, against the server under test; every
# one of its tests must report [pass] and the tool must print "All tests
# passed".
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $tool = '/usr/bin/memccapable';
plan skip_all => "$tool not installed (apt-get install libmemcached-tools)" unless -x $tool;

my $server = new_memcached('');
my ($code, $out) = run_binary($tool, ['-t', '5', '-h', '127.0.0.1', '-p', $server->port], 60);
my @results = $out =~ /^((?:ascii|binary) \S.*?)\s+\[(\w+)\]\s*$/mg;
my %res = @results;
cmp_ok(scalar(grep { /^ascii / } keys %res), '>=', 20,
    scalar(grep { /^ascii / } keys %res) . ' ASCII memccapable tests ran');
cmp_ok(scalar(grep { /^binary / } keys %res), '>=', 25,
    scalar(grep { /^binary / } keys %res) . ' binary memccapable tests ran');
for my $t (sort keys %res) {
    is($res{$t}, 'pass', "memccapable: $t");
}
like($out, qr/^All tests passed$/m, 'memccapable: All tests passed');
is($code, 0, 'memccapable exit status 0') or diag($out);
ok($server->alive, 'server alive after memccapable');

done_testing();
