#!/usr/bin/perl
# results_paths.t: doc/results.md carries no path of the machine that ran
# the experiments: its command lines name the repository's files relative
# to it (build/memcached, bench/tcload, scripts/...), temporary
# directories as tc-exp-XXXXXX, and tcload's port as PORT. The generator
# (bench/experiments.py) writes it so: a result whose JSON holds absolute
# paths, and a kept section from another checkout, come out relative.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;
use File::Temp qw(tempdir);

my $root = repo_root();

# Absolute paths into a checkout, random temporary directories, and
# tcload's real ports in $text.
sub machine_paths {
    my ($text) = @_;
    my @found = $text =~ m{((?<![^\s`=(])/(?:[\w.-]+/)+?(?:build[\w-]*|bench|scripts|out|\.devrun)/\S*)}g;
    push @found, $text =~ m{(/tc-(?:exp|fog)-(?!XXXXXX/)\w+/)}g;
    push @found, $text =~ m{(tcload -s 127\.0\.0\.1:\d+)}g;
    return @found;
}

my $doc = read_file("$root/doc/results.md");
like($doc, qr{`build/memcached -m }, 'doc/results.md names build/memcached');
like($doc, qr{`bench/tcload -s 127\.0\.0\.1:PORT }, '... and bench/tcload');
my @found = machine_paths($doc);
is(scalar @found, 0, 'doc/results.md: no path of the machine that ran it')
    or diag(join "\n", @found[0 .. ($#found < 4 ? $#found : 4)]);
# the check sees such paths
is(scalar machine_paths("`/work/main/build/memcached -m 1` "
    . "--json /tmp/tc-exp-ab12cd34/x.json tcload -s 127.0.0.1:4242"), 3,
    'the check finds an absolute path, a temporary directory and a port');

SKIP: {
    skip 'python3 is not installed', 6
        if system('command -v python3 >/dev/null 2>&1') != 0;
    my $dir = tempdir('results-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    mkdir "$dir/out" or die "$dir/out: $!";
    # a kept section of another checkout, then one result as the suite
    # writes it, with this checkout's absolute paths
    open my $fh, '>', "$dir/results.md" or die $!;
    print $fh "# Experiment results\n\n## fig7: kept\n\n"
        . "- a: `/home/someone/tiercached/build/memcached -m 4`\n";
    close $fh;
    my $py = <<'PY';
import json, sys, types
from pathlib import Path
sys.path.insert(0, sys.argv[1] + "/bench")
import experiments as e
d = Path(sys.argv[2])
e.DOC = d / "results.md"
r = {"name": "fig4", "title": "t", "paper": "p", "suite": "small",
     "reps": 1, "command": "scripts/experiments --out %s/out" % d,
     "tables": [{"columns": ["cmd"], "rows": [[
         "REQUESTS=1 %s/scripts/callgrind-ipr x" % e.ROOT]]}],
     "plots": [], "not_available": [], "notes": [],
     "configs": {"c": {"server": "%s/build/memcached -m 8" % e.ROOT,
                       "runs": [{"tcload": "%s -s 127.0.0.1:45678 --json "
                                 "/tmp/tc-exp-q1w2e3r4/tc-c-r0.json"
                                 % e.TCLOAD}]}}}
(d / "out" / "fig4.json").write_text(json.dumps(r))
meta = {"machine": {"nproc": 2, "cpu": "c", "kernel": "k"}, "date": "d",
        "command": "scripts/experiments --regenerate", "suite": "small",
        "elapsed_s": 1, "commit": "x"}
e.regenerate_doc(types.SimpleNamespace(out=d / "out"), meta)
PY
    my $out = `python3 - '$root' '$dir' 2>&1 <<'EOF'\n${py}EOF\n`;
    is($? >> 8, 0, 'regenerate_doc runs') or diag($out);
    my $text = -f "$dir/results.md" ? read_file("$dir/results.md") : '';
    like($text, qr{`build/memcached -m 8 -p PORT},
        'a fresh result: the server relative to the repository');
    like($text,
        qr{`bench/tcload -s 127\.0\.0\.1:PORT --json /tmp/tc-exp-XXXXXX/tc-c-r0\.json`},
        'tcload: relative, its port PORT, its temporary directory XXXXXX');
    like($text, qr{REQUESTS=1 scripts/callgrind-ipr x},
        'callgrind-ipr in a table: relative');
    like($text, qr{`build/memcached -m 4`},
        'a kept section of another checkout: relative');
    @found = machine_paths($text);
    is(scalar @found, 0, 'the regenerated file: no path of this machine')
        or diag(join "\n", @found);
}

done_testing();
