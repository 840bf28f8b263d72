#!/usr/bin/env python3
"""hitsim.py - hit ratios of libCacheSim's policies (PyPI `libcachesim`,
its Python bindings) on a tcload stream: the bounds that
`scripts/experiments --only hitratio` sets beside the servers.

    bench/tcload --dry-run -c 1 --seed 1 --phase ... > t.txt
    bench/hitsim.py t.txt --mb 64          # or - for standard input

Reads the stream as `tcload --dry-run` (or --trace) prints it: a
`# phase N ns=C ...` header per phase, then `G|S KEYID SIZE` lines.  An
object is (ns, KEYID): a new ns= is a new key.  Every request goes to
each policy in order, with libCacheSim's `get` (a miss inserts: a
lookaside client's GET and SET on a miss); a G counts in the hit ratio,
an S is fed but not counted; GETs of keys tcload never stores (ids from
900,000,000 up, --absent) are left out, as tcload leaves them out of
hits and misses and a miss on them stores nothing.  An object costs what
its item costs memcached: 10 key bytes + the value + 59 bytes (the 48-byte
item header, the 8-byte CAS, the key's NUL and the value's CRLF); slab
classes' rounding is not charged.  The cache holds --mb MiB of that.

Policies: BeladySize (libCacheSim's size-aware Belady: it evicts, among
128 sampled objects, the one with the largest size x distance to its next
request, and admits no object that is not requested again; an offline
reference, not an exact optimum), LRU, S3FIFO, WTinyLFU, ARC, Sieve, each
with libCacheSim's default parameters.  BeladySize samples at random, so
its figure can move in the fifth decimal between runs; the others are
the same every run.  LRU-slab is LRU with each object costing the chunk
of memcached 1.6's default slab classes that holds it (-n 48 -f 1.25:
96, 120, 152, ... 394,840 bytes, then 524,288; a larger item whole
chunks of 524,288): what the rounding to slab classes alone costs a
cache, without memcached's classes owning whole pages.  ARC-slab,
S3FIFO-slab, WTinyLFU-slab and Sieve-slab charge the same chunks (not in
the default list; `--policies` names them): the best a policy can do with
one queue over the whole cache and a slab server's rounding, the bound a
server whose classes own pages is compared with beside the byte-packed
one.

    bench/hitsim.py t.txt --class-pages STATS --policies ARC,Sieve

runs each policy per slab class instead: a server's `stats slabs` (STATS,
its `N:chunk_size` and `N:total_pages` lines) gives the classes and the
pages each one held, an object goes to the class with the smallest chunk
that holds it (the largest class, whole chunks of it, past that) and
costs that chunk, and each class is a cache of its pages' bytes, 1 MiB a
page.  What a policy does with the partition the server ended with, as
if the pages had been there from the first request (doc/tiering.md
"Against libCacheSim's policies and CacheLib's models").
"""
import bisect
import argparse
import json
import math
import re
import sys

KEYLEN = 10
ITEM_OVERHEAD = 59
ABSENT_BASE = 900000000
POLICIES = ("BeladySize", "LRU", "S3FIFO", "WTinyLFU", "ARC", "Sieve",
            "LRU-slab")
ONLINE = ("LRU", "S3FIFO", "WTinyLFU", "ARC", "Sieve")
ONLINE_SLAB = tuple(p + "-slab" for p in ONLINE)
KNOWN = POLICIES + tuple(p for p in ONLINE_SLAB if p not in POLICIES)
SLAB_CHUNK_MAX = 524288


def slab_classes() -> list:
    """memcached 1.6's default chunk sizes: 48-byte item + 48, times 1.25,
    8-aligned, while below the largest chunk / 1.25; then the largest."""
    sizes, size = [], 96.0
    while size < SLAB_CHUNK_MAX / 1.25:
        size = float((int(size) + 7) // 8 * 8)
        sizes.append(int(size))
        size *= 1.25
    return sizes + [SLAB_CHUNK_MAX]


SLAB_CLASSES = slab_classes()


def slab_chunk(cost: int) -> int:
    if cost > SLAB_CHUNK_MAX:
        return -(-cost // SLAB_CHUNK_MAX) * SLAB_CHUNK_MAX
    return SLAB_CLASSES[bisect.bisect_left(SLAB_CLASSES, cost)]


def parse(lines) -> dict:
    """The stream: objects, costs, counted (a G), next request of the
    same object (1-based, -1 if none) and where each phase starts."""
    objs, costs, counted, starts, headers = [], [], [], [], []
    ns = ord("k")
    for line in lines:
        if line.startswith("#"):
            headers.append(line.strip())
            starts.append(len(objs))
            for tok in line.split():
                if tok.startswith("ns="):
                    ns = ord(tok[3])
            continue
        op, key, size = line.split()
        key = int(key)
        if key >= ABSENT_BASE:
            continue
        objs.append((ns << 32) | key)
        costs.append(KEYLEN + int(size) + ITEM_OVERHEAD)
        counted.append(op == "G")
    if not starts:
        starts, headers = [0], [""]
    nxt = [-1] * len(objs)
    seen: dict = {}
    for i in range(len(objs) - 1, -1, -1):
        nxt[i] = seen.get(objs[i], -1)
        seen[objs[i]] = i + 1
    return {"objs": objs, "costs": costs, "counted": counted, "next": nxt,
            "starts": starts + [len(objs)], "headers": headers,
            "distinct": len(seen)}


def make_cache(policy: str, cache_bytes: int, distinct: int):
    import libcachesim
    hashpower = min(26, max(16, math.ceil(math.log2(max(2, distinct)))))
    return getattr(libcachesim, policy.split("-")[0])(cache_bytes,
                                                       hashpower=hashpower)


def replay(trace: dict, place) -> list:
    """Every request of the stream, in order, to the cache and at the
    cost place(i) gives for request i ((None, 0): a miss, nothing
    stored); [{"hits", "gets", "hit_ratio"} per phase]."""
    import libcachesim
    objs, counted, nxt = trace["objs"], trace["counted"], trace["next"]
    st = trace["starts"]
    req = libcachesim.Request()
    phases = []
    for p in range(len(st) - 1):
        hits = gets = 0
        for i in range(st[p], st[p + 1]):
            cache, cost = place(i)
            hit = False
            if cache is not None:
                req.obj_id = objs[i]
                req.obj_size = cost
                req.next_access_vtime = nxt[i]
                hit = cache.get(req)
            if counted[i]:
                gets += 1
                hits += hit
        phases.append({"hits": hits, "gets": gets,
                       "hit_ratio": hits / gets if gets else None})
    return phases


def simulate(trace: dict, cache_bytes: int, policies=POLICIES) -> dict:
    """{policy: [{"hits", "gets", "hit_ratio"} per phase]}"""
    out = {}
    for policy in policies:
        cache = make_cache(policy, cache_bytes, trace["distinct"])
        cost = ([slab_chunk(c) for c in trace["costs"]]
                if policy.endswith("-slab") else trace["costs"])
        out[policy] = replay(trace, lambda i: (cache, cost[i]))
    return out


def read_class_pages(text: str) -> dict:
    """{chunk size: pages} from `stats slabs` lines."""
    chunk, pages = {}, {}
    for line in text.splitlines():
        m = re.match(r"STAT (\d+):(chunk_size|total_pages) (\d+)", line)
        if m:
            (chunk if m.group(2) == "chunk_size" else pages)[
                int(m.group(1))] = int(m.group(3))
    return {chunk[i]: pages.get(i, 0) for i in chunk}


def simulate_per_class(trace: dict, class_pages: dict,
                       policies=ONLINE) -> dict:
    """simulate(), each class its own cache of its pages (see the top)."""
    sizes = sorted(class_pages)
    costs = trace["costs"]
    out = {}
    for policy in policies:
        caches = {c: make_cache(policy, class_pages[c] << 20,
                                trace["distinct"])
                  for c in sizes if class_pages[c] > 0}

        def place(i):
            k = bisect.bisect_left(sizes, costs[i])
            if k < len(sizes):
                return caches.get(sizes[k]), sizes[k]
            chunk = sizes[-1]
            return caches.get(chunk), -(-costs[i] // chunk) * chunk
        out[policy] = replay(trace, place)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace", help="tcload --dry-run output, - for stdin")
    ap.add_argument("--mb", type=float,
                    help="cache size in MiB (not with --class-pages)")
    ap.add_argument("--class-pages", metavar="STATS",
                    help="a server's `stats slabs`: each policy per class, "
                    "with the pages each class held")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--json")
    a = ap.parse_args()
    if (a.mb is None) == (a.class_pages is None):
        ap.error("give --mb or --class-pages")
    policies = [p for p in a.policies.split(",") if p]
    bad = [p for p in policies if p not in KNOWN]
    if bad:
        ap.error("unknown policy %s (%s)" % (", ".join(bad),
                                              ", ".join(KNOWN)))
    try:
        import libcachesim  # noqa: F401
    except ImportError:
        print("hitsim: libcachesim is not installed (pip install "
              "libcachesim; scripts/install-deps)", file=sys.stderr)
        return 2
    f = sys.stdin if a.trace == "-" else open(a.trace)
    with f:
        trace = parse(f)
    if a.class_pages:
        bad = [p for p in policies if p not in ONLINE]
        if bad:
            ap.error("per class: %s only" % ", ".join(ONLINE))
        with open(a.class_pages) as sf:
            class_pages = read_class_pages(sf.read())
        if not class_pages:
            ap.error("%s: no N:chunk_size lines" % a.class_pages)
        res = simulate_per_class(trace, class_pages, policies)
        where = "per class, %d pages in %d classes" % (
            sum(class_pages.values()), len(class_pages))
    else:
        res = simulate(trace, int(a.mb * (1 << 20)), policies)
        where = "cache %g MiB" % a.mb
    print("%d requests, %d objects, %s" % (
        len(trace["objs"]), trace["distinct"], where))
    for p, h in enumerate(trace["headers"]):
        print("\n%s" % (h or "phase %d" % p))
        for policy in policies:
            ph = res[policy][p]
            print("  %-11s %s (%d of %d)" % (
                policy, "n/a" if ph["hit_ratio"] is None
                else "%.4f" % ph["hit_ratio"], ph["hits"], ph["gets"]))
    if a.json:
        with open(a.json, "w") as jf:
            json.dump({"mb": a.mb, "class_pages": a.class_pages,
                       "headers": trace["headers"],
                       "results": res}, jf, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
