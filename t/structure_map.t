#!/usr/bin/perl
# t/structure_map.t - checks scripts/structure-map, issue 25's measure of
# the daemon's structure, on a made-up tree whose answer is known: an
# arrow from an include, one from a symbol (nm on the objects), a circle
# of three rooms that mixes a daemon room (conn) with storage rooms
# (items, slabs), a leaf outside it, and the one arrow the circle's order
# must reverse.  Then the same tree with the symbol arrow gone: no circle.
# The storage rooms live in storage/, as the engine does, and their
# objects in build/storage/ (automake's subdir-objects).
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use MemcachedTest ();    # its watchdog, scaled for the build and the load
use File::Temp qw(tempdir);
use JSON::PP;

my $root = "$FindBin::Bin/..";
my $map = "$root/scripts/structure-map";
my $dir = tempdir(CLEANUP => 1);
mkdir "$_" or die for ("$dir/build", "$dir/storage", "$dir/build/storage");

sub put {
    my ($name, $text) = @_;
    open(my $fh, '>', "$dir/$name") or die "$name: $!";
    print $fh $text;
    close $fh;
}

# conn -> items (include), items -> slabs (include), slabs -> conn (it
# calls conn_note, defined in conn.c: a symbol arrow); util is a leaf
# that conn includes
put('conn.h', "void conn_note(void);\n");
put('conn.c', qq{#include "conn.h"\n#include "storage/items.h"\n}
    . qq{#include "util.h"\n}
    . "void conn_note(void) {}\nint conn_get(void) { return item_get(); }\n");
put('storage/items.h', "int item_get(void);\n");
put('storage/items.c', qq{#include "items.h"\n#include "slabs.h"\n}
    . "int item_get(void) { return slabs_alloc(); }\n");
put('storage/slabs.h', "int slabs_alloc(void);\n");
put('util.h', "int util_twice(int x);\n");
put('util.c', qq{#include "util.h"\nint util_twice(int x) { return 2 * x; }\n});

sub build {
    for my $path (qw(conn storage/items storage/slabs util)) {
        next unless -e "$dir/$path.c";
        (my $obj = $path) =~ s{([^/]+)$}{memcached-$1};
        system('cc', '-c', '-o', "$dir/build/$obj.o",
               "$dir/$path.c") == 0 or die "cc $path.c failed\n";
    }
}

sub run_map {
    unlink "$dir/map.json";
    my $out = `python3 $map --src $dir --json $dir/map.json --verbose`;
    is($? >> 8, 0, 'structure-map exits 0') or diag($out);
    open(my $fh, '<', "$dir/map.json") or return ($out, undef);
    local $/;
    return ($out, decode_json(<$fh>));
}

put('storage/slabs.c', qq{#include "slabs.h"\nvoid conn_note(void);\n}
    . "int slabs_alloc(void) { conn_note(); return 1; }\n");
build();
my ($out, $m) = run_map();
is($m->{rooms}, 4, 'four rooms: conn, items, slabs, util');
is_deeply($m->{circles}, [[qw(conn items slabs)]],
          'one circle: conn -> items -> slabs -> conn (its last arrow '
          . 'from nm)');
is($m->{mixed_circles}, 1, 'it holds a daemon room and storage rooms');
is(scalar @{ $m->{back_arrows} }, 1, 'one arrow in it runs back up');
like($out, qr/largest circle: 3 rooms/, 'the summary names its size');

# without the call back up there is no circle
put('storage/slabs.c',
    qq{#include "slabs.h"\nint slabs_alloc(void) { return 1; }\n});
build();
($out, $m) = run_map();
is_deeply($m->{circles}, [], 'no circle once slabs no longer calls conn');
is($m->{mixed_circles}, 0, 'so none mixes the two sides');
like($out, qr/arrows back up: 0/, 'and no arrow runs back up');

done_testing();
