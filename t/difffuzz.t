#!/usr/bin/perl
# difffuzz.t: a bounded run of scripts/difffuzz, the differential fuzzer
# (doc/protocol.md "Differential fuzzing"): for each protocol (ascii,
# meta, binary, mixed) random command streams go to the server under test
# and to Debian's memcached 1.6.18 side by side for DIFFFUZZ_ROUNDS rounds
# of 150 commands (20 by default: the same streams in every build and on
# any machine, however loaded), and any difference in replies or connection state that happens
# again on fresh servers fails the test, with the minimised stream and
# both servers' replies in the diagnostics.  The seed is 1 unless
# DIFFFUZZ_SEED is set, and is printed: `scripts/difffuzz --seed S
# --protocol P --round R` replays a round.  Differences that did not
# happen again are reported, not failed (timing in memcached: its
# background threads and clock).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

plan skip_all => 'Debian memcached (' . stock_bin() . ') is not installed'
    unless -x stock_bin();
plan skip_all => 'the server under test is the stock binary'
    if server_is_stock();
my ($py) = grep { -x "$_/python3" } split /:/, $ENV{PATH} // '';
plan skip_all => 'python3 is not installed' unless $py;

my $fuzzer = repo_root() . '/scripts/difffuzz';
# a fixed seed by default, so that a suite run is repeatable; set
# DIFFFUZZ_SEED for others (scripts/difffuzz runs long ones)
my $seed = $ENV{DIFFFUZZ_SEED} // 1;
my $rounds = $ENV{DIFFFUZZ_ROUNDS} // 20;
# a sanitizer build answers slower: give a batch's replies longer
my $batch_timeout = 3 * slowdown();

for my $protocol (qw(ascii meta binary mixed)) {
    my @argv = ($fuzzer, '--seed', $seed, '--protocol', $protocol,
        '--rounds', $rounds, '--timeout', $batch_timeout,
        '--min-tries', 40, '--ours', server_bin(), '--stock', stock_bin());
    # room for the run (about 2 s in a normal build), a minimisation and
    # the servers' start-ups, scaled with the build's slowdown
    my ($code, $out) = run_binary("$py/python3", \@argv,
        (30 + $rounds) * slowdown());
    my ($summary) = $out =~ /^(difffuzz: .*)$/m;
    my ($ran, $commands, $diffs) = ($summary // '')
        =~ /(\d+) rounds, (\d+) commands, [\d.]+ min, (\d+) differences/;
    ok(defined $diffs && $ran == $rounds && $commands > 0,
        "$protocol: the fuzzer ran $rounds rounds") or diag(escape_bytes($out, 4000));
    if (ok(defined $diffs && $diffs == 0 && $code eq '0',
            "$protocol: no difference from memcached")) {
        diag($summary);
        diag("$protocol: differences that did not happen again:\n$out")
            if $summary =~ /not reproduced/;
    }
    else {
        diag("exit $code\n$out");
    }
}

done_testing();
