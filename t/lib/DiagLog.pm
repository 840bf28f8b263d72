# DiagLog: keeps a copy of a test file's diagnostics (Test::More's diag
# and its failure messages) in $MC_TEST_DIAG_DIR/<file>.diag, so that
# scripts/run-suite can print why a file failed in its summary.  Files
# run four at a time write their diagnostics to the terminal interleaved,
# and CI shows only the end of the output: without the copy a failure
# such as "graceful stop, exit 0" arrives without the server log the
# test printed to explain it.  Without $MC_TEST_DIAG_DIR nothing changes.
package DiagLog;

use strict;
use warnings;
use File::Basename qw(basename);
use IO::Handle;
use Symbol qw(gensym);
use Test::More ();

# A write-only handle that prints to several handles.
package DiagLog::Tee {
    sub TIEHANDLE { my ($class, @fhs) = @_; return bless [@fhs], $class }

    sub PRINT {
        my ($self, @parts) = @_;
        print {$_} @parts for @$self;
        return 1;
    }

    sub PRINTF {
        my ($self, $fmt, @args) = @_;
        return $self->PRINT(sprintf $fmt, @args);
    }

    sub BINMODE { return 1 }
    sub CLOSE   { return 1 }
}

sub path_for {
    my ($dir, $test_file) = @_;
    return "$dir/" . basename($test_file) . '.diag';
}

my $dir = $ENV{MC_TEST_DIAG_DIR};
if (defined $dir && -d $dir
        && open my $copy, '>', path_for($dir, $0)) {
    $copy->autoflush(1);
    my $builder = Test::More->builder;
    my $glob = gensym();
    tie *$glob, 'DiagLog::Tee', $builder->failure_output, $copy;
    $builder->failure_output($glob);
}

1;
