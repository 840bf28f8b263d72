#!/usr/bin/perl
# clients.t: real client libraries against the server under test:
# pylibmc (python3-pylibmc, Debian's python; over the ASCII protocol and,
# binary=True, over the binary one) and pymemcache (pip) run
# get/set/get_multi/cas/incr/decr/delete/touch/add/append through a small
# python script; each script prints OK lines and exits 0 on success.
# pylibmc also fetches 20,000 keys of 0-2,048 bytes, every fifth empty,
# with get_multi (issue 21: empty values broke binary connections).
# Perl's Cache::Memcached is exercised too.  A client library that is not
# installed is skipped with the reason printed.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use MemcachedTest;

my $server = new_memcached('');
my $port = $server->port;
my $dir = tempdir('mcclients-XXXXXX', TMPDIR => 1, CLEANUP => 1);

# a python interpreter that can import $module
sub python_with {
    my ($module) = @_;
    for my $py ('/usr/bin/python3', 'python3') {
        my ($code) = run_binary('/bin/sh', ['-c', "$py -c 'import $module' 2>/dev/null"], 20);
        return $py if defined $code && $code eq '0';
    }
    return;
}

my $pylibmc_script = <<'PY';
import sys, pylibmc
port = int(sys.argv[1])
binary = len(sys.argv) > 2 and sys.argv[2] == "binary"
mc = pylibmc.Client(["127.0.0.1:%d" % port], binary=binary, behaviors={"cas": True})
def check(name, cond):
    print(("OK " if cond else "FAIL ") + name)
    if not cond:
        sys.exit(1)
check("set", mc.set("pl:a", "hello"))
check("get", mc.get("pl:a") == "hello")
check("get miss", mc.get("pl:none") is None)
check("set_multi", mc.set_multi({"pl:x": "1", "pl:y": b"\x00\xff"}) == [])
check("get_multi", mc.get_multi(["pl:x", "pl:y", "pl:z"]) == {"pl:x": "1", "pl:y": b"\x00\xff"})
check("add existing", not mc.add("pl:a", "no"))
check("add new", mc.add("pl:b", "yes"))
check("replace", mc.replace("pl:b", "again") and mc.get("pl:b") == "again")
check("append", mc.append("pl:b", "!") and mc.get("pl:b") == "again!")
mc.set("pl:n", 10)
check("incr", mc.incr("pl:n", 5) == 15)
check("decr", mc.decr("pl:n", 20) == 0)
check("int round trip", mc.get("pl:n") == 0)
val, cas = mc.gets("pl:a")
check("gets", val == "hello" and cas)
check("cas ok", mc.cas("pl:a", "world", cas))
check("cas stale", not mc.cas("pl:a", "stale", cas))
check("after cas", mc.get("pl:a") == "world")
check("touch", mc.touch("pl:a", 100))
check("delete", mc.delete("pl:a"))
check("delete miss", not mc.delete("pl:a"))
big = "x" * 500000
check("big set", mc.set("pl:big", big))
check("big get", mc.get("pl:big") == big)
check("pickled object", mc.set("pl:obj", {"k": [1, 2, 3]}) and mc.get("pl:obj") == {"k": [1, 2, 3]})
check("stats", int(mc.get_stats()[0][1]["curr_connections"]) >= 1)
check("prepend", mc.prepend("pl:b", "<") and mc.get("pl:b") == "<again!")
check("delete_multi", mc.delete_multi(["pl:x", "pl:y"]) and mc.get("pl:x") is None)
check("empty value", mc.set("pl:e", b"") and mc.get("pl:e") == b"")
check("a request after an empty value", mc.get("pl:e") == b"" and mc.get("pl:b") == "<again!")
# issue 21: binary get_multi lost keys when an empty value's reply was
# the last one the server queued before it read the rest of the batch
import random
rnd = random.Random(21)
vals = {"pl:gm%05d" % i: b"v" * (0 if i % 5 == 0 else rnd.randint(1, 2048))
        for i in range(20000)}
keys = sorted(vals)
for i in range(0, len(keys), 1000):
    mc.set_multi({k: vals[k] for k in keys[i:i + 1000]})
for p in range(3):
    got = mc.get_multi(keys)
    lost = sum(1 for k in keys if got.get(k) != vals[k])
    check("get_multi of 20000 keys of 0-2048 bytes, pass %d: %d lost" % (p, lost), lost == 0)
mc.flush_all()
check("flush_all", mc.get("pl:b") is None)
print("DONE")
PY

my $pymemcache_script = <<'PY';
import sys
from pymemcache.client.base import Client
port = int(sys.argv[1])
c = Client(("127.0.0.1", port), connect_timeout=5, timeout=5)
def check(name, cond):
    print(("OK " if cond else "FAIL ") + name)
    if not cond:
        sys.exit(1)
check("set", c.set("pm:a", b"hello", noreply=False))
check("get", c.get("pm:a") == b"hello")
check("get miss", c.get("pm:none") is None)
check("set_many", c.set_many({"pm:x": b"1", "pm:y": b"2"}, noreply=False) == [])
check("get_many", c.get_many(["pm:x", "pm:y", "pm:z"]) == {"pm:x": b"1", "pm:y": b"2"})
check("add existing", not c.add("pm:a", b"no", noreply=False))
check("add new", c.add("pm:b", b"yes", noreply=False))
check("replace", c.replace("pm:b", b"again", noreply=False))
check("append", c.append("pm:b", b"!", noreply=False) and c.get("pm:b") == b"again!")
check("prepend", c.prepend("pm:b", b"<", noreply=False) and c.get("pm:b") == b"<again!")
c.set("pm:n", b"10", noreply=False)
check("incr", c.incr("pm:n", 5) == 15)
check("decr", c.decr("pm:n", 20) == 0)
check("incr miss", c.incr("pm:none", 1) is None)
val, cas = c.gets("pm:a")
check("gets", val == b"hello" and cas)
check("cas ok", c.cas("pm:a", b"world", cas, noreply=False) is True)
check("cas stale", c.cas("pm:a", b"stale", cas, noreply=False) is False)
check("cas missing", c.cas("pm:zz", b"x", cas, noreply=False) is None)
check("touch", c.touch("pm:a", 100, noreply=False))
check("touch miss", not c.touch("pm:none", 100, noreply=False))
check("delete", c.delete("pm:a", noreply=False))
check("delete miss", not c.delete("pm:a", noreply=False))
check("noreply set", c.set("pm:q", b"q", noreply=True) and c.get("pm:q") == b"q")
check("version", c.version() == b"1.6.18")
check("stats", int(c.stats()[b"curr_items"]) >= 3)
c.flush_all(noreply=False)
check("flush_all", c.get("pm:q") is None)
print("DONE")
PY

for my $lib (['pylibmc', $pylibmc_script, ''],
             ['pylibmc', $pylibmc_script, 'binary'],
             ['pymemcache', $pymemcache_script, '']) {
    my ($module, $script, $mode) = @$lib;
    my $what = $mode ? "$module ($mode protocol)" : $module;
    SKIP: {
        my $py = python_with($module);
        skip "$module not importable by any python3 (install python3-pylibmc / pip install pymemcache)", 2
            unless $py;
        open my $fh, '>', "$dir/check_$module.py" or die $!;
        print $fh $script;
        close $fh;
        my ($code, $out) = run_binary('/bin/sh', ['-c', "$py $dir/check_$module.py $port $mode"], 30);
        is($code, 0, "$what script exit status") or diag($out);
        like($out, qr/^DONE$/m, "$what: all checks passed") or diag($out);
    }
}

SKIP: {
    skip 'perl Cache::Memcached not installed (libcache-memcached-perl)', 6
        unless eval { require Cache::Memcached; 1 };
    my $m = Cache::Memcached->new({ servers => ["127.0.0.1:$port"] });
    ok($m->set('cm:a', 'perl value'), 'Cache::Memcached set');
    is($m->get('cm:a'), 'perl value', 'Cache::Memcached get');
    ok($m->set('cm:ref', { list => [1, 2] }), 'Cache::Memcached set of a reference');
    is_deeply($m->get('cm:ref'), { list => [1, 2] }, 'Cache::Memcached get of a reference');
    $m->set('cm:n', 5);
    is($m->incr('cm:n', 3), 8, 'Cache::Memcached incr');
    is_deeply($m->get_multi('cm:a', 'cm:n', 'cm:none'), { 'cm:a' => 'perl value', 'cm:n' => 8 },
        'Cache::Memcached get_multi');
}
ok($server->alive, 'server alive');

done_testing();
