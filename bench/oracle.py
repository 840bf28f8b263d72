#!/usr/bin/env python3
"""oracle.py - static-best D-zone share for a tcload trace.

Reads a trace written by `tcload --trace FILE` (or `--dry-run`): lines
"G|S KEYID SIZE", phase headers "# phase N ns=C ...".  Given a DRAM byte
budget it keeps the keys with the highest request-count/size ratio that
fit (greedy fractional knapsack, the optimum for a static placement up to
one partly-fitting key, which is left out) and prints the share of
requests, and of GETs, those keys would serve from DRAM.

An item costs KEYLEN (10) + value size + --overhead bytes (memcached's
item header is ~48-56 bytes; default 0 so the figure is about payload).

With --slab the budget is whole pages of a slab allocator instead of
bytes: an item takes a chunk of the smallest class that holds it
(memcached's classes: --first-chunk bytes, times --factor, 8-byte
aligned, up to --item-max), a page of --page bytes holds a class's
chunks, and pages go one at a time to the class whose next page would
serve the most requests (its most requested keys not yet kept): the
best static placement any slab allocator with that many pages can make.

--blind-start F also reports "cold_share": the same placement for a
server whose DRAM, when the trace starts, holds a fraction F of the keys
chosen without knowing which will be requested (a preload in key order):
each kept key's first request then misses DRAM with probability 1 - F,
whatever the policy, so cold_share is what an online policy can expect
at best.
"""
import argparse
import heapq
import json
import sys


def parse_bytes(s):
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    s = s.strip().lower()
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(float(s))


def slab_classes(first, factor, item_max):
    """Chunk sizes as the server builds them (slabs.c build_classes)."""
    sizes, size = [], float(first)
    while True:
        chunk = -(-int(size) // 8) * 8
        if chunk >= item_max / factor or chunk >= item_max:
            break
        sizes.append(chunk)
        size = chunk * factor
    sizes.append(item_max)
    return sizes


def slab_keep(freq, size, pages, a):
    """Keys kept by giving pages to classes greedily by the requests their
    next page would serve (each class's gains only fall, so greedy is the
    best split)."""
    sizes = slab_classes(a.first_chunk, a.factor, a.item_max)
    by_class = {}
    for k in freq:
        c = next((i for i, cs in enumerate(sizes) if cs >= size[k]), None)
        if c is not None:
            by_class.setdefault(c, []).append(k)
    heap = []
    for c, keys in by_class.items():
        keys.sort(key=lambda k: freq[k], reverse=True)
        per = max(1, a.page // sizes[c])
        heapq.heappush(heap, (-sum(freq[k] for k in keys[:per]), c, 0))
    kept = []
    while pages > 0 and heap:
        gain, c, n = heapq.heappop(heap)
        if gain == 0:
            break
        per = max(1, a.page // sizes[c])
        keys = by_class[c]
        kept += keys[n * per:(n + 1) * per]
        pages -= 1
        nxt = keys[(n + 1) * per:(n + 2) * per]
        if nxt:
            heapq.heappush(heap, (-sum(freq[k] for k in nxt), c, n + 1))
    return kept


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace", help="trace file, '-' for stdin")
    ap.add_argument("--budget", help="DRAM bytes (k/m/g suffixes)")
    ap.add_argument("--budget-frac", type=float,
                    help="budget as a fraction of the bytes of all keys "
                         "seen in the trace")
    ap.add_argument("--overhead", type=int, default=0,
                    help="bytes added per item (default 0)")
    ap.add_argument("--keylen", type=int, default=10)
    ap.add_argument("--phase", type=int, default=None,
                    help="only this phase index (default: whole trace)")
    ap.add_argument("--json", action="store_true", help="print JSON")
    ap.add_argument("--slab", action="store_true",
                    help="whole pages of slab classes (see above)")
    ap.add_argument("--page", type=int, default=1 << 20)
    ap.add_argument("--first-chunk", type=int, default=104,
                    help="the smallest chunk (item header + -n)")
    ap.add_argument("--factor", type=float, default=1.25)
    ap.add_argument("--item-max", type=int, default=1 << 20)
    ap.add_argument("--blind-start", type=float, default=None,
                    help="share of keys in DRAM at the start (see above)")
    a = ap.parse_args()
    if (a.budget is None) == (a.budget_frac is None):
        ap.error("give exactly one of --budget, --budget-frac")

    freq, size, gets_of = {}, {}, {}
    total = gets = 0
    ns, phase = "k", 0
    f = sys.stdin if a.trace == "-" else open(a.trace)
    for line in f:
        if line.startswith("#"):
            for tok in line.split():
                if tok.startswith("ns="):
                    ns = tok[3:]
            parts = line.split()
            if len(parts) > 2 and parts[1] == "phase":
                phase = int(parts[2])
            continue
        if a.phase is not None and phase != a.phase:
            continue
        op, key, sz = line.split()
        k = (ns, int(key))
        freq[k] = freq.get(k, 0) + 1
        size[k] = int(sz) + a.keylen + a.overhead
        total += 1
        if op == "G":
            gets += 1
            gets_of[k] = gets_of.get(k, 0) + 1
    if total == 0:
        print("oracle: no requests in trace", file=sys.stderr)
        return 1
    all_bytes = sum(size.values())
    budget = (parse_bytes(a.budget) if a.budget is not None
              else int(a.budget_frac * all_bytes))
    if a.slab:
        chosen = slab_keep(freq, size, budget // a.page, a)
    else:
        chosen, used = [], 0
        for k in sorted(freq, key=lambda k: freq[k] / size[k], reverse=True):
            if used + size[k] <= budget:
                used += size[k]
                chosen.append(k)
    used = sum(size[k] for k in chosen)
    kept = len(chosen)
    hit = sum(freq[k] for k in chosen)
    ghit = sum(gets_of.get(k, 0) for k in chosen)
    res = {
        "requests": total, "gets": gets, "keys": len(freq),
        "key_bytes": all_bytes, "budget": budget, "kept_keys": kept,
        "kept_bytes": used, "share": hit / total,
        "get_share": (ghit / gets) if gets else 0.0,
    }
    if a.blind_start is not None:
        resident = min(1.0, max(0.0, a.blind_start))
        res["cold_share"] = (hit - kept * (1 - resident)) / total
    if a.json:
        print(json.dumps(res))
    else:
        print("requests %d (gets %d), distinct keys %d, %d bytes"
              % (total, gets, len(freq), all_bytes))
        print("budget %d bytes: oracle keeps %d keys (%d bytes)"
              % (budget, kept, used))
        print("D-zone share: %.4f of requests, %.4f of GETs"
              % (res["share"], res["get_share"]))
        if "cold_share" in res:
            print("with a hotness-blind start: %.4f" % res["cold_share"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
