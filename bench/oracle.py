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
"""
import argparse
import json
import sys


def parse_bytes(s):
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    s = s.strip().lower()
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(float(s))


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
    order = sorted(freq, key=lambda k: freq[k] / size[k], reverse=True)
    used = kept = hit = ghit = 0
    for k in order:
        if used + size[k] > budget:
            continue
        used += size[k]
        kept += 1
        hit += freq[k]
        ghit += gets_of.get(k, 0)
    res = {
        "requests": total, "gets": gets, "keys": len(freq),
        "key_bytes": all_bytes, "budget": budget, "kept_keys": kept,
        "kept_bytes": used, "share": hit / total,
        "get_share": (ghit / gets) if gets else 0.0,
    }
    if a.json:
        print(json.dumps(res))
    else:
        print("requests %d (gets %d), distinct keys %d, %d bytes"
              % (total, gets, len(freq), all_bytes))
        print("budget %d bytes: oracle keeps %d keys (%d bytes)"
              % (budget, kept, used))
        print("D-zone share: %.4f of requests, %.4f of GETs"
              % (res["share"], res["get_share"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
