#!/usr/bin/perl
# manpage.t: doc/memcached.1 documents what the server offers. Every option
# that `memcached -h` lists (short and long form) and every -o sub-option it
# names appears in the man page (in its OPTIONS, the sub-options in the -o
# entry); the page names the protocols (ASCII, meta, binary, SASL, TLS),
# the N-zone, and the documentation where `make install` puts it, not
# source-tree paths; groff formats it without a warning.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MemcachedTest;

my $page_path = repo_root() . '/doc/memcached.1';
open my $fh, '<', $page_path or die "$page_path: $!";
my $page = do { local $/; <$fh> };
close $fh;

# The page as words: troff's escapes for a minus and for fonts undone.
sub plain {
    my ($text) = @_;
    $text =~ s/\\-/-/g;
    $text =~ s/\\f[BIRP]//g;
    $text =~ s/\\f\((?:CW|BI)//g;
    $text =~ s/\\(.)/$1/g;
    return $text;
}
my ($options_text) = $page =~ /^\.SH OPTIONS\n(.*?)^\.SH /ms;
my ($o_entry) = ($options_text // '') =~ /^\.BR \\-o ", " .*?\n(.*)\z/ms;
my $options_plain = plain($options_text // '');
my $o_plain = plain($o_entry // '');
ok(length $options_plain, 'the page has an OPTIONS section');
ok(length $o_plain, 'the OPTIONS section has a -o entry');

my (undef, $help) = run_binary(server_bin(), ['-h'], 10);
my ($options_help, $o_help) = $help =~ /\A(.*?^-o, --extended[^\n]*\n)(.*)\z/ms;
ok($o_help, '-h has a -o section') or diag($help);
$options_help //= '';
$o_help //= '';

# Options: each line of -h that starts with one ("-p, --port=<num>",
# "-R, --max-reqs-per-event", "-D <char>", "-vv").
my @options;
for my $line (split /\n/, $options_help) {
    next unless $line =~ /^(-[A-Za-z]+)(?:, (--[a-z-]+))?/;
    push @options, grep { defined } $1, $2;
}

# Sub-options: the words of the -o section with an underscore in them or
# an = after them, and any comma-separated names in parentheses.
my %subs;
$subs{$1} = 1
    while $o_help =~ /(?<![\w-])([a-z][a-z0-9]*(?:_[a-z0-9]+)*_\*|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[a-z][a-z0-9]*(?==))/g;
while ($o_help =~ /\(([^)]*)\)/g) {
    my @items = split /\s*,\s*/, $1 =~ s/^\s+|\s+$//gr;
    next if @items < 2 || grep { !/^[a-z][a-z0-9_]*\*?$/ } @items;
    $subs{$_} = 1 for @items;
}
my @subs = sort keys %subs;

# -h lists about 40 options and 50 sub-options (those that take effect):
# fewer means the parsing above missed them, and the checks below would
# prove little
cmp_ok(scalar @options, '>=', 40, scalar(@options) . ' options in -h');
cmp_ok(scalar @subs, '>=', 45, scalar(@subs) . ' sub-option names in -h');
ok((grep { $_ eq '--port' } @options) && (grep { $_ eq '-vvv' } @options)
    && (grep { $_ eq 'nvm_size' } @subs)
    && (grep { $_ eq 'slab_reassign' } @subs)
    && (grep { $_ eq 'lru_crawler_sleep' } @subs),
    'the parsing finds options, long options and sub-options of each kind');

sub names {
    my ($text, $name) = @_;
    return $text =~ /(?<![\w-])\Q$name\E(?![\w-])/;
}
my @missing = grep { !names($options_plain, $_) } @options;
is("@missing", '', 'every option of -h is in the man page\'s OPTIONS');
@missing = grep { !names($o_plain, $_) } @subs;
is("@missing", '', 'every sub-option of -h is in the man page\'s -o entry');
# the check finds what is not there
ok(!names($o_plain, 'no_such_suboption') && !names($options_plain, '--nope'),
    'a name the page lacks is reported');

# ---- what the page says beyond the options
my ($description) = $page =~ /^\.SH DESCRIPTION\n(.*?)^\.SH /ms;
$description = plain($description // '');
for my $protocol ('ASCII', 'meta', 'binary', 'SASL', 'TLS') {
    like($description, qr/\b\Q$protocol\E\b/,
        "DESCRIPTION names the $protocol protocol");
}
like($description, qr/\bN-zone\b/, 'DESCRIPTION names the N-zone');
unlike($page, qr/being extended/, 'no "is being extended"');
my ($see_also) = $page =~ /^\.SH SEE ALSO\n(.*)\z/ms;
$see_also = plain($see_also // '');
like($see_also, qr{/usr/share/doc/tiercached\b},
    'SEE ALSO names the installed documentation');
my @source_paths = plain($page) =~ m{(?<![\w/])(doc/[\w.-]+)}g;
is("@source_paths", '', 'no source-tree doc/ path in the page');

# ---- groff formats it cleanly
SKIP: {
    skip 'groff is not installed', 1
        if system('command -v groff >/dev/null 2>&1') != 0;
    my $warnings = `groff -man -Tutf8 -ww -z '$page_path' 2>&1`;
    is($warnings, '', 'groff -ww: no warning');
}

done_testing();
