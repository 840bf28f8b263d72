#!/usr/bin/env python3
"""experiments.py - tiercached's experiment suite (HMCached, TPDS 2020, sec. 4).

Runs the paper's evaluation, scaled to a small machine, against the
tiered server (build/memcached) and Debian's stock memcached, with
bench/tcload as the load generator:

    fig4      throughput by dataset, GET ratio and policy
    fig5      NVM line accesses by policy (same runs as fig4)
    fig6      DRAM-size sweep, 1/16 .. 1/2 of the dataset
    fig7      NVM-latency sweep (nvm_emulate=R:W)
    fig9      index: DRAM bytes per item, NVM lines per N-zone GET hit
    placement D-zone share of every placement policy at each DRAM size
              against the offline bound, and NVM lines written
    fig10     calcification: phases switching datasets, tier_reassign=
    calcscale calcification at operator scale: one shift of the size mix
              on a cache of many pages, D-zone share per phase by
              reassignment policy
    fig11     overhead against stock memcached, DRAM only (throughput
              and callgrind instructions per request)
    ycsb      YCSB workloads A-F (scripts/ycsb) against stock memcached:
              ops/s and per-operation latency, DRAM only and tiered
    fogcached tiered server vs stock memcached + extstore vs stock
              memcached with a memory file (-e), same DRAM
    hitratio  hit ratios of stock memcached, DRAM-only and tiered on the
              same lookaside streams (Zipf, a working-set move, one-hit
              wonders, CacheLib's models) beside libCacheSim's policies
              (bench/hitscen.py, bench/hitsim.py)

Configurations are interleaved (A B C A B C ...) and repeated; every
figure is a median over the repetitions.  Every server runs on
127.0.0.1 with a free port and is stopped when its run ends, also on
Ctrl-C, SIGTERM or an exception.  A figure that needs something the
server does not have (a `stats tier` key, an option refused at start-up)
is recorded as "not available: <reason>", never estimated.

Writes OUT/NAME.json and OUT/NAME.png per experiment, copies the PNGs to
doc/results/ and regenerates doc/results.md from every OUT/*.json; a
section whose JSON is not in OUT (an earlier session's, another
machine's) is kept as it stands.  --tag TAG marks a run made elsewhere:
OUT/NAME.TAG.json and its own section, "NAME (TAG)", beside NAME's.
Usage: scripts/experiments [--full] [--only NAME,...] [--out DIR]
"""
import argparse
import contextlib
import dataclasses
import datetime
import json
import math
import os
import platform
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

import hitscen
import hitsim

ROOT = Path(__file__).resolve().parent.parent
TCLOAD = ROOT / "bench" / "tcload"
ORACLE = ROOT / "bench" / "oracle.py"
CALLGRIND_IPR = ROOT / "scripts" / "callgrind-ipr"
DEFAULT_SERVER = ROOT / "build" / "memcached"
DEFAULT_STOCK = Path("/usr/bin/memcached")
DOC = ROOT / "doc" / "results.md"
DOC_PLOTS = ROOT / "doc" / "results"

MIB = 1 << 20
KEYLEN = 10
# memcached 1.6 item: 48-byte header + 8-byte CAS + key NUL + "\r\n"
ITEM_OVERHEAD = 59
PAPER_EMULATE = "224:924"        # 300 ns / 1000 ns NVM on 76 ns DRAM
SERVER_THREADS = 2
TIER_KEYS = ("d_hits", "n_hits", "promotions", "demotions",
             "nvm_lines_read", "nvm_lines_written", "index_bytes",
             "d_items", "n_items")
EXPERIMENTS = ("fig4", "fig5", "fig6", "placement", "placelong", "tputlong",
               "fig7", "fig9", "fig10", "calcscale", "fig11", "ycsb",
               "scaling",
               "fogcached", "choices", "hitratio")


@dataclasses.dataclass(frozen=True)
class Scale:
    """How big each experiment is; 'small' must finish in < 20 minutes."""
    name: str
    reps: int
    requests: int
    datasets: tuple
    get_ratios: tuple
    dram_fracs: tuple
    latencies: tuple
    calc_a: str
    calc_b: str
    calc_segment: int
    calc_sub: int
    shift_mb: int               # calcscale: -m, dataset before and after,
    shift_a: str                # requests per measured phase, phases
    shift_b: str                # before and after the shift
    shift_phase: int
    shift_phases: tuple
    fog_dataset: str
    ipr_requests: int
    exp_budget_s: int
    long_windows: int = 6       # placelong: windows after the preload
    tput_windows: int = 10      # tputlong: windows after the preload
    conns: int = 4
    depth: int = 4


SMALL = Scale(name="small", reps=3, requests=400000,
              datasets=("Uni-200000-512",), get_ratios=(0.95, 0.5),
              dram_fracs=(1 / 16, 1 / 8, 1 / 4, 1 / 2),
              latencies=("0:0", "112:462", "224:924", "448:1848"),
              calc_a="norm-20000-4K-1K", calc_b="Uni-20000-8K",
              calc_segment=150000, calc_sub=3,
              shift_mb=64, shift_a="fixed-60000-3000",
              shift_b="Uni-200000-800", shift_phase=250000,
              shift_phases=(2, 8),
              fog_dataset="fixed-100000-1K", ipr_requests=20000,
              exp_budget_s=300)
FULL = Scale(name="full", reps=5, requests=1000000,
             datasets=("Uni-150000-2K", "Uni-150000-4K", "Uni-150000-8K",
                       "Uni-100000-8K", "Uni-50000-8K"),
             get_ratios=(0.95, 0.5),
             dram_fracs=(1 / 16, 1 / 8, 1 / 4, 1 / 2),
             latencies=("0:0", "112:462", "224:924", "336:1386",
                        "448:1848"),
             calc_a="norm-100000-4K-1K", calc_b="Uni-100000-8K",
             calc_segment=600000, calc_sub=5,
             shift_mb=256, shift_a="fixed-240000-3000",
             shift_b="Uni-800000-800", shift_phase=1000000,
             shift_phases=(2, 8),
             fog_dataset="fixed-300000-1K", ipr_requests=100000,
             exp_budget_s=3600)


@dataclasses.dataclass
class Ctx:
    """Everything an experiment needs; passed explicitly, never global."""
    scale: Scale
    out: Path
    work: Path
    server: Path
    stock: Path
    command: str
    tier_reason: Optional[str] = None     # why `stats tier` is unusable
    tag: str = ""                          # --tag: a run made elsewhere
    hit_mb: int = 0                        # hitratio's X (0: the scale's)
    reps_given: int = 0                    # --reps (0: each experiment's)
    log: Callable[[str], None] = print


@dataclasses.dataclass
class Spec:
    """One server configuration."""
    name: str
    binary: Path
    args: list
    files: tuple = ()          # files to create (empty) before start

    def cmdline(self) -> str:
        return " ".join([str(self.binary)] + [str(a) for a in self.args])


@dataclasses.dataclass
class Load:
    """One tcload workload."""
    dataset: str
    get: float
    requests: int
    conns: int = 4
    depth: int = 4
    seed: int = 1
    theta: float = 0.99
    phases: tuple = ()          # tcload --phase specs (own preloads)
    set_on_miss: bool = False
    client_threads: int = 1
    warmup: int = 0             # requests (seed + 1) before the measured run

    def common(self) -> list:
        a = ["-c", str(self.conns), "-T", str(self.client_threads),
             "-d", str(self.depth),
             "--seed", str(self.seed), "--theta", str(self.theta),
             "--dataset", self.dataset, "-g", str(self.get)]
        if self.set_on_miss:
            a.append("--set-on-miss")
        return a


class ServerError(Exception):
    """A server did not start; the message is the reason."""


# ---------------------------------------------------------------- helpers

def na(reason: str) -> str:
    return "not available: " + reason


def median(xs) -> Optional[float]:
    v = [x for x in xs if isinstance(x, (int, float))]
    return statistics.median(v) if v else None


def ratio(a, b) -> Optional[float]:
    if a is None or b is None or b == 0:
        return None
    return a / b


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_count(s: str) -> int:
    m = re.fullmatch(r"([0-9.e+]+)([kM]?)", s)
    if not m:
        raise ValueError("bad count " + s)
    return int(float(m.group(1)) * {"": 1, "k": 10 ** 3, "M": 10 ** 6}[m.group(2)])


def parse_size(s: str) -> float:
    m = re.fullmatch(r"([0-9.]+)([KM]?)", s)
    if not m:
        raise ValueError("bad size " + s)
    return float(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20}[m.group(2)]


def dataset_info(spec: str) -> tuple:
    """(keys, mean value bytes) of a tcload dataset spec."""
    p = spec.split("-")
    kind, n = p[0].lower(), parse_count(p[1])
    if kind == "uni":
        return n, (1 + parse_size(p[2])) / 2
    if kind == "fixed":
        return n, parse_size(p[2])
    if kind == "norm":
        return n, parse_size(p[2])
    if kind == "etc":
        return n, 0.40 * 7 + 0.55 * 157 + 0.05 * 4150.5
    raise ValueError("unknown dataset " + spec)


def payload_bytes(spec: str) -> float:
    """Key + value bytes of the whole dataset (the paper's dataset size)."""
    n, mean = dataset_info(spec)
    return n * (KEYLEN + mean)


def item_bytes(spec: str) -> float:
    n, mean = dataset_info(spec)
    return n * (KEYLEN + mean + ITEM_OVERHEAD)


def dram_mb(spec: str, frac: float) -> int:
    return max(2, math.ceil(frac * payload_bytes(spec) / MIB))


def full_mb(spec: str) -> int:
    """-m that holds the whole dataset in DRAM (slab rounding included)."""
    return math.ceil(item_bytes(spec) * 1.4 / MIB) + 16


def frac_label(f: float) -> str:
    return "1/%d" % round(1 / f) if f < 1 else "%g" % f


def user_args() -> list:
    return ["-u", "nobody"] if os.geteuid() == 0 else []


def machine() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": model,
            "kernel": platform.release(), "python": platform.python_version()}


def git_commit() -> str:
    try:
        c = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12",
                            "HEAD"], capture_output=True, text=True,
                           timeout=10).stdout.strip()
        d = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain",
                            "--untracked-files=no"], capture_output=True,
                           text=True, timeout=10).stdout.strip()
        return c + (" (working tree modified)" if d else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


# ----------------------------------------------------------------- server

class Server:
    """A server process on 127.0.0.1:free port; a context manager."""

    def __init__(self, spec: Spec, logdir: Path):
        self.spec = spec
        self.port = free_port()
        self.log = logdir / ("server-%s-%d.log" % (
            re.sub(r"[^A-Za-z0-9_.-]", "_", spec.name), self.port))
        self.proc: Optional[subprocess.Popen] = None

    def argv(self) -> list:
        return ([str(self.spec.binary)] + [str(a) for a in self.spec.args]
                + ["-p", str(self.port), "-U", "0", "-l", "127.0.0.1"]
                + user_args())

    def __enter__(self) -> "Server":
        for f in self.spec.files:
            Path(f).unlink(missing_ok=True)
            Path(f).touch()
            os.chmod(f, 0o666)
        with open(self.log, "wb") as lf:
            self.proc = subprocess.Popen(self.argv(), stdout=lf,
                                         stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    self.proc = None
                    raise ServerError(self.reason("exited"))
                try:
                    if "VERSION" in self.command("version", end="\r\n"):
                        return self
                except OSError:
                    pass
                time.sleep(0.05)
            raise ServerError("did not answer `version` within 15 s")
        except BaseException:
            self.stop()
            raise

    def reason(self, what: str) -> str:
        text = self.log.read_text(errors="replace").strip()
        lines = [l for l in text.splitlines() if l.strip()]
        return "option refused at start-up (%s): %s" % (
            what, " / ".join(lines[-2:]) if lines else "no message")

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        if self.proc is None:
            return
        p, self.proc = self.proc, None
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def command(self, cmd: str, end: str = "END\r\n") -> str:
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(cmd.encode() + b"\r\n")
            buf = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
                if (buf.endswith(end.encode()) or buf.endswith(b"ERROR\r\n")
                        or (end == "\r\n" and buf.endswith(b"\r\n"))):
                    break
        return buf.decode(errors="replace")

    def stats(self, sub: str = "") -> Optional[dict]:
        text = self.command(("stats " + sub).strip())
        if not text.startswith("STAT"):
            return None
        d = {}
        for line in text.splitlines():
            p = line.split(" ", 2)
            if len(p) == 3 and p[0] == "STAT":
                d[p[1]] = num(p[2])
        return d


def num(s: str):
    try:
        return int(s)
    except ValueError:
        try:
            return float(s)
        except ValueError:
            return s


def probe(spec: Spec, ctx: Ctx) -> Optional[str]:
    """None when the server starts with these args, else the reason."""
    try:
        with Server(spec, ctx.work):
            return None
    except ServerError as e:
        return str(e)


def tier_stats_reason(ctx: Ctx) -> Optional[str]:
    spec = Spec("probe-tier", ctx.server, ["-m", "8", "-o", "nvm_size=16m"])
    try:
        with Server(spec, ctx.work) as srv:
            st = srv.stats("tier")
    except ServerError as e:
        return "server with an N-zone does not start: " + str(e)
    if st is None:
        return ("`stats tier` answered ERROR: the tiered engine is not in "
                "this build (%s)" % ctx.server)
    missing = [k for k in TIER_KEYS if k not in st]
    if missing:
        return "`stats tier` lacks " + ", ".join(missing)
    return None


# ------------------------------------------------------------- measuring

def tcload(args: list, json_path: Path, timeout: float) -> dict:
    argv = [str(TCLOAD)] + args + ["-q", "--json", str(json_path),
                                   "--max-duration", str(int(timeout))]
    r = subprocess.run(argv, capture_output=True, text=True,
                       timeout=timeout + 30)
    try:
        j = json.loads(json_path.read_text())
    except (OSError, ValueError):
        raise RuntimeError("tcload failed (%d): %s" % (
            r.returncode, (r.stderr or r.stdout).strip()[-300:]))
    j["_argv"] = " ".join(argv)
    j["_rc"] = r.returncode
    return j


def run_summary(run: dict) -> dict:
    lat = run.get("latency_us", {}).get("get", {})
    gets = run.get("get", 0)
    return {"throughput": run.get("throughput"), "ops": run.get("ops"),
            "gets": gets, "hits": run.get("hits"),
            "hit_ratio": (run.get("hits", 0) / gets) if gets else None,
            "errors": run.get("errors", {}).get("total"),
            "get_mean_us": lat.get("mean"), "get_p50_us": lat.get("p50"),
            "get_p99_us": lat.get("p99")}


def tier_delta(before: Optional[dict], after: Optional[dict]) -> Optional[dict]:
    if before is None or after is None:
        return None
    d = {}
    for k, v in after.items():
        if isinstance(v, (int, float)) and isinstance(before.get(k), (int, float)):
            d[k] = v - before[k]
    return d


def measure(spec: Spec, load: Load, ctx: Ctx, tag: str) -> dict:
    """Fresh server, preload (unless the phases do it), measured run."""
    res: dict = {"config": spec.name, "server": spec.cmdline()}
    jpath = ctx.work / ("tc-%s-%s.json" % (re.sub(r"\W", "_", spec.name), tag))
    timeout = 240
    try:
        with Server(spec, ctx.work) as srv:
            target = ["-s", "127.0.0.1:%d" % srv.port]
            if not load.phases:
                pre = tcload(target + load.common() + ["--preload", "-n", "0"],
                             jpath, timeout)
                p = pre["phases"][0]["preload"]
                res["preload"] = {"sets": p.get("set"),
                                  "errors": p["errors"]["total"],
                                  "throughput": p.get("throughput")}
            if load.warmup > 0:
                warm = dataclasses.replace(load, seed=load.seed + 1)
                tcload(target + warm.common() + ["-n", str(load.warmup)],
                       jpath, timeout)
            before = srv.stats("tier") if ctx.tier_reason is None else None
            args = target + load.common() + ["-n", str(load.requests)]
            for ph in load.phases:
                args += ["--phase", ph]
            j = tcload(args, jpath, timeout)
            after = srv.stats("tier") if ctx.tier_reason is None else None
            res["tcload"] = j["_argv"]
            res["tcload_rc"] = j["_rc"]
            phases = [ph for ph in j["phases"] if ph.get("run")]
            if load.phases:
                res["phases"] = [dict(run_summary(ph["run"]),
                                      dataset=ph["dataset"],
                                      spec=ph.get("spec", ""))
                                 for ph in phases]
                res.update(run_summary(j["totals"]))
            else:
                res.update(run_summary(phases[0]["run"]))
            res["tier"] = tier_delta(before, after)
            res["tier_after"] = after
    except ServerError as e:
        res["error"] = str(e)
    except (RuntimeError, subprocess.TimeoutExpired, OSError, KeyError) as e:
        res["error"] = "run failed: %s" % e
    ctx.log("  %-28s %s" % (spec.name, (
        "error: " + res["error"]) if "error" in res else
        "%.0f ops/s hit %.3f" % (res.get("throughput") or 0,
                                  res.get("hit_ratio") or 0)))
    return res


def interleave(configs: list, load_of: Callable[[Spec], Load], ctx: Ctx,
               reps: Optional[int] = None) -> tuple:
    """A B C A B C ...; returns ({config: [runs]}, notes)."""
    reps = ctx.scale.reps if reps is None else reps
    runs: dict = {c.name: [] for c in configs}
    notes = []
    deadline = time.monotonic() + ctx.scale.exp_budget_s
    dead = set()
    for r in range(reps):
        if r > 0 and time.monotonic() > deadline:
            notes.append("time bound (%d s) reached: %d of %d repetitions"
                         % (ctx.scale.exp_budget_s, r, reps))
            break
        for c in configs:
            if c.name in dead:
                continue
            res = measure(c, load_of(c), ctx, "r%d" % r)
            runs[c.name].append(res)
            if "error" in res and res["error"].startswith("option refused"):
                dead.add(c.name)    # it will not start next time either
    return runs, notes


def summarise(runs: list, tier: bool) -> dict:
    ok = [r for r in runs if "error" not in r]
    s: dict = {"n": len(ok), "ops": median(r.get("ops") for r in ok),
               "throughput": median(r.get("throughput") for r in ok),
               "throughputs": [r.get("throughput") for r in ok],
               "hit_ratio": median(r.get("hit_ratio") for r in ok),
               "get_mean_us": median(r.get("get_mean_us") for r in ok),
               "get_p50_us": median(r.get("get_p50_us") for r in ok),
               "get_p99_us": median(r.get("get_p99_us") for r in ok)}
    if runs and not ok:
        s["error"] = runs[0]["error"]
    if tier and ok and all(r.get("tier") for r in ok):
        for k in ("d_hits", "n_hits", "promotions", "demotions",
                  "nvm_lines_read", "nvm_lines_written"):
            s[k] = median(r["tier"].get(k) for r in ok)
        s["d_share"] = median(
            ratio(r["tier"].get("d_hits"),
                  (r["tier"].get("d_hits") or 0) + (r["tier"].get("n_hits") or 0))
            for r in ok)
        after = ok[-1].get("tier_after") or {}
        s["index_bytes"] = after.get("index_bytes")
        items = (after.get("d_items") or 0) + (after.get("n_items") or 0)
        s["index_bytes_per_item"] = after.get(
            "index_bytes_per_item", ratio(after.get("index_bytes"), items))
    return s


# ----------------------------------------------------------------- oracle

def trace_file(load: Load, ctx: Ctx) -> Path:
    key = re.sub(r"\W", "_", "%s_%s_%d_%d_%d_%s" % (
        load.dataset, load.get, load.requests, load.conns, load.seed,
        load.theta))
    path = ctx.work / ("trace-%s.txt" % key)
    if not path.exists():
        with open(path, "w") as f:
            subprocess.run([str(TCLOAD), "--dry-run", "-n", str(load.requests)]
                           + load.common(), stdout=f, check=True, timeout=300)
    return path


def oracle(load: Load, budget_bytes: int, ctx: Ctx, slab: bool = False,
           blind_start: Optional[float] = None) -> dict:
    """Static best D-zone share for the same request stream and DRAM bytes
    (with slab: whole 1 MB pages of memcached's slab classes; with
    blind_start, also the share when that fraction of the keys is in DRAM
    at the start regardless of the stream)."""
    try:
        t = trace_file(load, ctx)
        r = subprocess.run([sys.executable, str(ORACLE), str(t), "--budget",
                            str(budget_bytes), "--overhead", str(ITEM_OVERHEAD),
                            "--json"] + (["--slab"] if slab else [])
                           + (["--blind-start", str(blind_start)]
                              if blind_start is not None else []),
                           capture_output=True, text=True,
                           timeout=300, check=True)
        return json.loads(r.stdout)
    except (subprocess.SubprocessError, OSError, ValueError) as e:
        return {"error": str(e)}


def payload_lines(load: Load, ctx: Ctx) -> Optional[float]:
    """Mean 64-byte lines of key + value over the GETs of the stream."""
    tot = n = 0
    with open(trace_file(load, ctx)) as f:
        for line in f:
            if line.startswith("G "):
                size = int(line.split()[2])
                tot += (KEYLEN + size + 63) // 64
                n += 1
    return tot / n if n else None


# -------------------------------------------------------------- configs

def tiered(name: str, ctx: Ctx, mb: int, nvm_mb: int, policy: str,
           emulate: str = PAPER_EMULATE, extra: str = "") -> Spec:
    opts = "nvm_size=%dm,nvm_emulate=%s,tier_policy=%s" % (nvm_mb, emulate,
                                                            policy)
    if extra:
        opts += "," + extra
    return Spec(name, ctx.server, ["-m", str(mb), "-t", str(SERVER_THREADS),
                                   "-o", opts])


def plain(name: str, binary: Path, mb: int, extra: tuple = ()) -> Spec:
    return Spec(name, binary, ["-m", str(mb), "-t", str(SERVER_THREADS)]
                + list(extra))


def nvm_mb_for(dataset: str) -> int:
    """N-zone for the whole dataset with slab rounding, little more: D + N
    stays close to the dataset, so HM-UNI's capacity split is near -m's."""
    return math.ceil(item_bytes(dataset) * 1.3 / MIB) + 16


def fmt(v, kind: str = "") -> str:
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    if kind == "ops":
        return "{:,.0f}".format(v)
    if kind == "pct":
        return "%.1f%%" % (100 * v)
    if kind == "int":
        return "{:,.0f}".format(v)
    if kind == "hr":
        return "%.4f" % v
    if kind == "diff":
        return "%+.4f" % v
    if isinstance(v, float):
        return "%.3f" % v if abs(v) < 100 else "{:,.0f}".format(v)
    return str(v)


def base_result(name: str, title: str, paper: str, ctx: Ctx) -> dict:
    return {"name": name, "title": title, "paper": paper,
            "suite": ctx.scale.name, "reps": ctx.scale.reps,
            "command": "scripts/experiments%s --only %s" % (
                " --full" if ctx.scale.name == "full" else "", name),
            "invoked_as": ctx.command, "tables": [], "plots": [],
            "notes": [], "not_available": [], "bound": "",
            "configs": {}}


# ----------------------------------------------------------- experiments

def policy_specs(ctx: Ctx, dataset: str, extra_policies: list) -> tuple:
    mb, nvm = dram_mb(dataset, 0.25), nvm_mb_for(dataset)
    specs = [plain("DRAM-only", ctx.server, full_mb(dataset))]
    names = [("HMCached", "hmcached"), ("HM-UNI", "uni"), ("HM-TLC", "tlc"),
             ("HM-HC", "hmhc"), ("hotter (default)", "hotter"),
             ("NVM-only", "nvm")] + extra_policies
    specs += [tiered(n, ctx, mb, nvm, p) for n, p in names]
    return specs, mb


def exp_policies(ctx: Ctx) -> list:
    """Figs. 4 and 5 from the same runs."""
    sc = ctx.scale
    r4 = base_result("fig4", "Throughput by dataset and policy",
                     "Fig. 4 (DRAM = 1/4 of the dataset, 95%/50% GET, Zipf "
                     "0.99, NVM 300/1000 ns): read-intensive HMCached is "
                     "+36%/+18%/+5% over HM-UNI/HM-TLC/HM-HC and within 12% "
                     "of DRAM-only (0.88); write-intensive +68%/+21%/+4%, "
                     "26% below DRAM-only (0.74).", ctx)
    r5 = base_result("fig5", "NVM line accesses by policy",
                     "Fig. 5: HMCached reduces NVM accesses (64-byte lines, "
                     "background threads included) by 70%/38%/7% vs "
                     "HM-UNI/HM-TLC/HM-HC (read-intensive) and 72%/38%/6% "
                     "(write-intensive).", ctx)
    extra = []
    reason = probe(tiered("probe", ctx, 8, 16, "duallru"), ctx)
    if reason is None:
        extra.append(("Fogcached-duallru", "duallru"))
    else:
        r4["not_available"].append(na("tier_policy=duallru (Fogcached): "
                                      + reason))
    if ctx.tier_reason:
        r5["not_available"].append(na("nvm_lines_read/nvm_lines_written: "
                                      + ctx.tier_reason))
        r4["not_available"].append(na("our D-zone share (d_hits, n_hits): "
                                      + ctx.tier_reason))
    rows4, rows5 = [], []
    series: dict = {}
    lines_series: dict = {}
    for ds in sc.datasets:
        for g in sc.get_ratios:
            wl = "%s %d%% GET" % (ds, round(100 * g))
            ctx.log("fig4/5: " + wl)
            specs, mb = policy_specs(ctx, ds, extra)
            load = Load(ds, g, sc.requests, sc.conns, sc.depth)
            runs, notes = interleave(specs, lambda s: load, ctx)
            r4["notes"] += ["%s: %s" % (wl, n) for n in notes]
            orc = oracle(load, mb * MIB, ctx)
            sums = {n: summarise(v, ctx.tier_reason is None)
                    for n, v in runs.items()}
            ref = sums["DRAM-only"]["throughput"]
            uni = sums.get("HM-UNI", {})
            tlc = sums.get("HM-TLC", {})
            hc = sums.get("HM-HC", {})
            for s in specs:
                sm = sums[s.name]
                r4["configs"]["%s / %s" % (wl, s.name)] = {
                    "server": s.cmdline(), "summary": sm,
                    "runs": runs[s.name]}
                tput = sm.get("throughput")
                rows4.append([wl, s.name, fmt(tput, "ops"), sm["n"],
                              fmt(ratio(tput, ref)), fmt(sm.get("hit_ratio")),
                              fmt(sm.get("d_share")) if s.name != "DRAM-only"
                              else "1 (all DRAM)",
                              fmt(orc.get("share")) if s.name != "DRAM-only"
                              else "", sm.get("error", "")])
                series.setdefault(s.name, []).append([wl, tput or 0])
                if s.name == "DRAM-only":
                    continue
                rd, wr = sm.get("nvm_lines_read"), sm.get("nvm_lines_written")
                tot = rd + wr if rd is not None and wr is not None else None

                def red(other: dict) -> Optional[float]:
                    o = (other.get("nvm_lines_read") or 0) + (
                        other.get("nvm_lines_written") or 0)
                    if tot is None or "nvm_lines_read" not in other or not o:
                        return None
                    return 1 - tot / o
                rows5.append([wl, s.name, fmt(rd, "int"), fmt(wr, "int"),
                              fmt(tot, "int"),
                              fmt(ratio(tot, sm.get("ops") or None)),
                              fmt(red(uni), "pct") if s.name == "HMCached" else "",
                              fmt(red(tlc), "pct") if s.name == "HMCached" else "",
                              fmt(red(hc), "pct") if s.name == "HMCached" else ""])
                lines_series.setdefault(s.name + " R", []).append([wl, rd or 0])
                lines_series.setdefault(s.name + " W", []).append([wl, wr or 0])
            r4.setdefault("oracle", {})[wl] = orc
    r4["tables"].append({"columns": [
        "workload", "config", "median ops/s", "runs", "vs DRAM-only",
        "GET hit ratio", "D-zone share (ours)", "D-zone share (oracle)",
        "error"], "rows": rows4})
    r4["bound"] = ("oracle: bench/oracle.py on the run's own request stream "
                   "(tcload --dry-run, same seed and connections), budget = "
                   "the D-zone's -m bytes, %d B per item overhead, no slab "
                   "rounding: the best static share of requests DRAM could "
                   "serve. DRAM-only (-m holding the whole dataset) is the "
                   "throughput bound." % ITEM_OVERHEAD)
    r4["plots"].append({"file": "fig4.png", "kind": "bar",
                        "title": "Fig. 4: throughput (DRAM = 1/4)",
                        "ylabel": "ops/s (median)", "series": series})
    r5["tables"].append({"columns": [
        "workload", "policy", "NVM lines read", "NVM lines written",
        "total", "lines per request", "HMCached vs HM-UNI", "HMCached vs HM-TLC",
        "HMCached vs HM-HC"],
        "rows": rows5})
    r5["bound"] = "reduction = 1 - HMCached total / other total (medians)"
    if not ctx.tier_reason:
        r5["plots"].append({"file": "fig5.png", "kind": "bar",
                            "title": "Fig. 5: NVM line accesses",
                            "ylabel": "64-byte lines (median)",
                            "series": lines_series})
    r5["configs"] = {"see": "fig4.json (same runs)"}
    return [r4, r5]


FIG6_POLICIES = (("hotter (default)", "hotter"), ("HMCached", "hmcached"),
                 ("HM-TLC", "tlc"), ("HM-HC", "hmhc"), ("duallru", "duallru"),
                 ("HM-UNI", "uni"))


def exp_fig6(ctx: Ctx) -> list:
    sc = ctx.scale
    r = base_result("fig6", "DRAM-size sweep",
                    "Fig. 6: DRAM = 1/16, 1/8, 1/4, 1/2 of the dataset; "
                    "throughput grows roughly linearly while DRAM grows "
                    "exponentially (diminishing returns); write-intensive "
                    "gains more.", ctx)
    if ctx.tier_reason:
        r["not_available"].append(na("our D-zone share: " + ctx.tier_reason))
    ds = sc.datasets[0]
    gets = sc.get_ratios if sc.name == "full" else sc.get_ratios[:1]
    rows, series = [], {}
    for g in gets:
        wl = "%s %d%% GET" % (ds, round(100 * g))
        ctx.log("fig6: " + wl)
        nvm = nvm_mb_for(ds)
        specs = [plain("DRAM-only", ctx.server, full_mb(ds))]
        fracs = [None]
        for f in sc.dram_fracs:
            specs += [tiered("%s %s" % (n, frac_label(f)), ctx,
                             dram_mb(ds, f), nvm, p) for n, p in FIG6_POLICIES]
            fracs += [f] * len(FIG6_POLICIES)
        load = Load(ds, g, sc.requests, sc.conns, sc.depth)
        runs, notes = interleave(specs, lambda s: load, ctx)
        r["notes"] += notes
        sums = {n: summarise(v, ctx.tier_reason is None) for n, v in runs.items()}
        ref = sums["DRAM-only"]["throughput"]
        bounds: dict = {}
        for f, s in zip(fracs, specs):
            sm = sums[s.name]
            mb = int(s.args[1])
            if f and f not in bounds:
                bounds[f] = oracle(load, mb * MIB, ctx)
            orc = bounds.get(f, {})
            r["configs"]["%s / %s" % (wl, s.name)] = {
                "server": s.cmdline(), "summary": sm, "runs": runs[s.name],
                "oracle": orc}
            rows.append([wl, s.name, mb, fmt(sm["throughput"], "ops"),
                         fmt(ratio(sm["throughput"], ref)),
                         fmt(sm.get("hit_ratio")), fmt(sm.get("d_share")),
                         fmt(orc.get("share")) if f else "",
                         sm.get("error", "")])
            if f:
                series.setdefault("%s %s" % (wl, s.name.rsplit(" ", 1)[0]),
                                  []).append([f, sm["throughput"] or 0])
        series.setdefault(wl + " DRAM-only", []).extend(
            [[f, ref or 0] for f in sc.dram_fracs])
    r["tables"].append({"columns": [
        "workload", "config", "-m MB", "median ops/s", "vs DRAM-only",
        "GET hit ratio", "D-zone share (ours)", "D-zone share (oracle)",
        "error"], "rows": rows})
    r["bound"] = "oracle static share for each -m; DRAM-only throughput"
    r["plots"].append({"file": "fig6.png", "kind": "line", "logx": True,
                       "title": "Fig. 6: DRAM size sweep",
                       "xlabel": "DRAM / dataset", "ylabel": "ops/s (median)",
                       "series": series})
    return [r]


PLACEMENT_POLICIES = (("HMCached", "hmcached"), ("HM-TLC", "tlc"),
                      ("HM-HC", "hmhc"), ("duallru", "duallru"),
                      ("HM-UNI", "uni"), ("hotter (default)", "hotter"))


def placement_load(sc: Scale) -> tuple:
    """The placement experiments' dataset, stream and N-zone size."""
    ds = sc.datasets[0]
    return (ds, Load(ds, sc.get_ratios[0], sc.requests, sc.conns, sc.depth),
            nvm_mb_for(ds))


def d_zone_bytes(runs: dict) -> Optional[int]:
    """The D-zone's size as the servers reported it (stats tier)."""
    for rs in runs.values():
        for run in rs:
            limit = (run.get("tier_after") or {}).get("d_zone_limit")
            if limit:
                return int(limit)
    return None


def exp_placement(ctx: Ctx) -> list:
    sc = ctx.scale
    r = base_result("placement", "Placement policies by DRAM size",
                    "Not a figure of the paper: the D-zone share of hits "
                    "of each placement policy at DRAM = 1/16 .. 1/2 of the "
                    "dataset, against the static offline bound for the "
                    "same stream and DRAM bytes.", ctx)
    if ctx.tier_reason:
        r["not_available"].append(na("D-zone share: " + ctx.tier_reason))
        return [r]
    ds, load, nvm = placement_load(sc)
    rows, series = [], {}
    for f in sc.dram_fracs:
        mb = dram_mb(ds, f)
        bound = oracle(load, mb * MIB, ctx).get("share")
        specs = [tiered("%s %s" % (n, frac_label(f)), ctx, mb, nvm, p)
                 for n, p in PLACEMENT_POLICIES]
        ctx.log("placement: %s, DRAM %s (-m %d)" % (ds, frac_label(f), mb))
        runs, notes = interleave(specs, lambda s: load, ctx)
        r["notes"] += notes
        used = d_zone_bytes(runs)
        slab = oracle(load, used, ctx, slab=True,
                      blind_start=used / item_bytes(ds)) if used else {}
        slab_bound, cold_bound = slab.get("share"), slab.get("cold_share")
        for (n, _), s in zip(PLACEMENT_POLICIES, specs):
            sm = summarise(runs[s.name], True)
            r["configs"][s.name] = {"server": s.cmdline(), "summary": sm,
                                    "runs": runs[s.name]}
            share = sm.get("d_share")
            rows.append([frac_label(f), n, mb,
                         fmt(used / MIB if used else None), fmt(share),
                         fmt(bound), fmt(ratio(share, bound)),
                         fmt(slab_bound), fmt(ratio(share, slab_bound)),
                         fmt(cold_bound), fmt(ratio(share, cold_bound)),
                         fmt(sm.get("nvm_lines_written"), "int"),
                         fmt(sm.get("nvm_lines_read"), "int"),
                         sm.get("error", "")])
            if share is not None:
                series.setdefault(n, []).append([f, share])
        series.setdefault("offline bound", []).append([f, bound or 0])
        series.setdefault("slab-page bound", []).append([f, slab_bound or 0])
        series.setdefault("online bound", []).append([f, cold_bound or 0])
    r["tables"].append({"columns": [
        "DRAM", "policy", "-m MB", "D-zone MB", "D-zone share",
        "offline bound", "share / bound", "slab-page bound",
        "share / slab bound", "online bound", "share / online bound",
        "NVM lines written", "NVM lines read", "error"], "rows": rows})
    r["notes"].append("%s, %d%% GET, %d requests after the preload, "
                      "Zipf 0.99, nvm_emulate=%s; medians of %d runs"
                      % (ds, round(100 * sc.get_ratios[0]), sc.requests,
                         PAPER_EMULATE, sc.reps))
    r["bound"] = ("offline bound: the static best share for each -m's "
                  "bytes (bench/oracle.py); slab-page bound: the static "
                  "best share for the D-zone's pages as the server sized "
                  "it (d_zone_limit, at least one page per slab class in "
                  "use, so more than -m when -m is small), each page "
                  "holding chunks of one of memcached's slab classes "
                  "(bench/oracle.py --slab); online bound: the slab-page "
                  "bound less each kept key's first request in the "
                  "window, which misses DRAM unless the preload happened "
                  "to leave the key there (probability D-zone bytes / "
                  "dataset item bytes: the preload does not know which "
                  "keys the window will ask for; --blind-start)")
    r["plots"].append({"file": "placement.png", "kind": "line", "logx": True,
                       "title": "D-zone share by DRAM size",
                       "xlabel": "DRAM / dataset",
                       "ylabel": "D-zone share of hits", "series": series})
    return [r]


def emulated_ns(delta: dict, emulate: str) -> Optional[float]:
    """The N-zone's emulated latency a window spun: lines read and written
    times nvm_emulate's nanoseconds per line."""
    read_ns, write_ns = (int(x) for x in emulate.split(":"))
    lr, lw = delta.get("nvm_lines_read"), delta.get("nvm_lines_written")
    if lr is None or lw is None:
        return None
    return lr * read_ns + lw * write_ns


def process_cpu_s(pid: int) -> Optional[float]:
    """User + system CPU seconds a process (all its threads) has used."""
    try:
        fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1]
    except OSError:
        return None
    utime, stime = (int(x) for x in fields.split()[11:13])
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def one_window(srv: "Server", load: Load, jpath: Path, tier: bool) -> dict:
    """One measured window on a running server, with its tier deltas and
    the CPU time the server and the load generator used in it."""
    before = srv.stats("tier") if tier else None
    server0, client0 = process_cpu_s(srv.proc.pid), children_cpu_s()
    j = tcload(["-s", "127.0.0.1:%d" % srv.port] + load.common()
               + ["-n", str(load.requests)], jpath, 240)
    server1, client1 = process_cpu_s(srv.proc.pid), children_cpu_s()
    run = [ph for ph in j["phases"] if ph.get("run")]
    w = run_summary(run[0]["run"]) if run else {}
    w["tcload"] = j["_argv"]
    if server0 is not None and server1 is not None and w.get("ops"):
        w["cpu_us_per_request"] = 1e6 * ((server1 - server0)
                                         + (client1 - client0)) / w["ops"]
    if tier:
        d = tier_delta(before, srv.stats("tier")) or {}
        w["d_share"] = ratio(d.get("d_hits"), (d.get("d_hits") or 0)
                             + (d.get("n_hits") or 0))
        for k in ("nvm_lines_read", "nvm_lines_written", "promotions",
                  "demotions"):
            w[k] = d.get(k)
        spun = emulated_ns(d, PAPER_EMULATE)
        w["spin_ns_per_request"] = (spun / w["ops"] if spun is not None
                                    and w.get("ops") else None)
    return w


def window_runs(spec: Spec, load: Load, windows: int, ctx: Ctx) -> dict:
    """One server, one preload, then `windows` runs of the same request
    stream (same seed), each with the `stats tier` deltas it caused."""
    out: dict = {"config": spec.name, "server": spec.cmdline(),
                 "windows": []}
    jpath = ctx.work / ("tc-%s-long.json" % re.sub(r"\W", "_", spec.name))
    try:
        with Server(spec, ctx.work) as srv:
            target = ["-s", "127.0.0.1:%d" % srv.port]
            tcload(target + load.common() + ["--preload", "-n", "0"], jpath,
                   240)
            for _ in range(windows):
                out["windows"].append(one_window(srv, load, jpath, True))
            out["tcload"] = out["windows"][-1]["tcload"]
    except ServerError as e:
        out["error"] = str(e)
    except (RuntimeError, subprocess.TimeoutExpired, OSError, KeyError) as e:
        out["error"] = "run failed: %s" % e
    return out


def exp_placelong(ctx: Ctx) -> list:
    sc = ctx.scale
    windows = sc.long_windows
    r = base_result("placelong", "Placement policies by DRAM size, long "
                    "runs", "Not a figure of the paper: the placement "
                    "experiment's stream repeated %d times on one server "
                    "after one preload: the first window shows how fast a "
                    "policy converges, the later ones where it settles and "
                    "what it writes to NVM meanwhile." % windows, ctx)
    if ctx.tier_reason:
        r["not_available"].append(na("D-zone share: " + ctx.tier_reason))
        return [r]
    ds, load, nvm = placement_load(sc)
    rows, series = [], {}
    for f in sc.dram_fracs:
        mb = dram_mb(ds, f)
        bound = oracle(load, mb * MIB, ctx).get("share")
        ctx.log("placelong: %s, DRAM %s (-m %d), %d windows"
                % (ds, frac_label(f), mb, windows))
        for n, p in PLACEMENT_POLICIES:
            spec = tiered("%s %s" % (n, frac_label(f)), ctx, mb, nvm, p)
            run = window_runs(spec, load, windows, ctx)
            r["configs"][spec.name] = {"server": spec.cmdline(),
                                       "runs": [run]}
            ws = run.get("windows") or [{}]
            later = ws[1:] or ws
            steady = median(w.get("d_share") for w in later)
            written = [w.get("nvm_lines_written") for w in ws]
            ctx.log("  %-24s first %s, later %s, lines written %s" % (
                spec.name, fmt(ws[0].get("d_share")), fmt(steady),
                fmt(sum(x or 0 for x in written), "int")))
            rows.append([frac_label(f), n, fmt(ws[0].get("d_share")),
                         fmt(steady), fmt(bound), fmt(ratio(steady, bound)),
                         fmt(written[0], "int"),
                         fmt(median(w.get("nvm_lines_written")
                                    for w in later), "int"),
                         fmt(sum(x or 0 for x in written), "int"),
                         run.get("error", "")])
            if steady is not None:
                series.setdefault(n, []).append([f, steady])
        series.setdefault("offline bound", []).append([f, bound or 0])
    r["tables"].append({"columns": [
        "DRAM", "policy", "D share, window 1", "D share, later windows "
        "(median)", "offline bound", "later / bound",
        "NVM lines written, window 1", "NVM lines written a later window "
        "(median)", "NVM lines written, all windows", "error"],
        "rows": rows})
    r["notes"].append("%s, %d%% GET, Zipf 0.99, nvm_emulate=%s: one server "
                      "per policy and DRAM size, one preload, then %d "
                      "windows of %d requests, each the same stream (same "
                      "seed), so the offline bound of one window is every "
                      "window's; one run (D shares and NVM lines are "
                      "deterministic up to thread timing)"
                      % (ds, round(100 * sc.get_ratios[0]), PAPER_EMULATE,
                         windows, sc.requests))
    r["bound"] = ("offline bound: the static best share for each -m's bytes "
                  "(bench/oracle.py), as in the placement experiment; a "
                  "later window has no cold start, so the online bound "
                  "does not apply to it")
    r["plots"].append({"file": "placelong.png", "kind": "line", "logx": True,
                       "title": "D-zone share after the first window",
                       "xlabel": "DRAM / dataset",
                       "ylabel": "D-zone share of hits (median of later "
                       "windows)", "series": series})
    return [r]


TPUTLONG_POLICIES = (("hotter (default)", "hotter"), ("HMCached", "hmcached"),
                     ("HM-TLC", "tlc"))


def turns(specs: list, load: Load, windows: int, ctx: Ctx) -> dict:
    """Every server started and preloaded, then `windows` rounds in which
    each runs the same stream once, the order rotating round by round."""
    out: dict = {s.name: [] for s in specs}
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(Server(s, ctx.work)) for s in specs]
        for srv in servers:
            jpath = ctx.work / ("tc-%s-pre.json"
                                % re.sub(r"\W", "_", srv.spec.name))
            tcload(["-s", "127.0.0.1:%d" % srv.port] + load.common()
                   + ["--preload", "-n", "0"], jpath, 240)
        for w in range(windows):
            for i in range(len(servers)):
                srv = servers[(i + w) % len(servers)]
                jpath = ctx.work / ("tc-%s-w%d.json"
                                    % (re.sub(r"\W", "_", srv.spec.name), w))
                tier = srv.spec.name != "DRAM-only"
                out[srv.spec.name].append(one_window(srv, load, jpath, tier))
    return out


def exp_tputlong(ctx: Ctx) -> list:
    sc = ctx.scale
    windows = sc.tput_windows
    r = base_result("tputlong", "Throughput after convergence",
                    "Not a figure of the paper: fig4's DRAM-only and "
                    "tiered servers (DRAM 1/4) kept running for %d "
                    "windows of the same stream after one preload, taking "
                    "turns window by window, so that the throughput ratio "
                    "is seen where placement has converged as well as "
                    "right after the preload." % windows, ctx)
    if ctx.tier_reason:
        r["not_available"].append(na("D-zone share: " + ctx.tier_reason))
        return [r]
    ds = sc.datasets[0]
    mb, nvm = dram_mb(ds, 0.25), nvm_mb_for(ds)
    specs = [plain("DRAM-only", ctx.server, full_mb(ds))]
    specs += [tiered(n, ctx, mb, nvm, p) for n, p in TPUTLONG_POLICIES]
    rows, series = [], {}
    for g in sc.get_ratios:
        wl = "%s %d%% GET" % (ds, round(100 * g))
        ctx.log("tputlong: %s, %d windows" % (wl, windows))
        load = Load(ds, g, sc.requests, sc.conns, sc.depth)
        try:
            runs = turns(specs, load, windows, ctx)
        except ServerError as e:
            r["notes"].append("%s: %s" % (wl, e))
            continue
        except (RuntimeError, subprocess.TimeoutExpired, OSError,
                KeyError) as e:
            r["notes"].append("%s: run failed: %s" % (wl, e))
            continue
        dram = [w.get("throughput") for w in runs["DRAM-only"]]
        dram_cpu = median(w.get("cpu_us_per_request")
                          for w in runs["DRAM-only"][1:])
        for s in specs:
            ws = runs[s.name]
            ratios = [ratio(w.get("throughput"), d)
                      for w, d in zip(ws, dram)]
            later = ws[1:]
            r["configs"]["%s / %s" % (wl, s.name)] = {
                "server": s.cmdline(), "runs": ws}
            cpu = median(w.get("cpu_us_per_request") for w in later)
            spin = median(w.get("spin_ns_per_request") for w in later)
            ops = median(w.get("throughput") for w in later)
            rows.append([
                wl, s.name, fmt(ws[0].get("throughput"), "ops"),
                fmt(ratios[0]), fmt(ops, "ops"),
                fmt(ratio(ops, median(dram[1:]))), fmt(median(ratios[1:])),
                ", ".join(fmt(x) for x in ratios[1:]),
                fmt(median(w.get("d_share") for w in later)),
                fmt(cpu), fmt(ratio(dram_cpu, cpu)), fmt(spin, "int"),
                fmt(ratio(dram_cpu, dram_cpu + spin / 1000)
                    if spin is not None and dram_cpu else None)])
            if s.name != "DRAM-only":
                cpu_ratios = [ratio(d.get("cpu_us_per_request"),
                                    w.get("cpu_us_per_request"))
                              for w, d in zip(ws, runs["DRAM-only"])]
                series.setdefault("%s, %d%% GET" % (s.name, round(100 * g)),
                                  []).extend([[i + 1, x or 0] for i, x
                                              in enumerate(cpu_ratios)])
    r["tables"].append({"columns": [
        "workload", "server", "window 1 ops/s", "window 1 vs DRAM-only",
        "later windows ops/s (median)", "later: median over DRAM-only's "
        "median", "later: median of the rounds' ratios",
        "later windows vs DRAM-only", "D share, later", "CPU us per "
        "request, later (median)", "CPU: DRAM-only's / this", "NVM ns "
        "spun per request, later", "CPU if spin were all"],
        "rows": rows})
    r["notes"].append("%s, Zipf 0.99, nvm_emulate=%s, DRAM 1/4 (-m %d) and "
                      "an N-zone of %d MB; a window is %d requests with the "
                      "same seed; each ratio divides a window's ops/s by "
                      "DRAM-only's in the same round; one run" % (
                          ds, PAPER_EMULATE, mb, nvm, sc.requests))
    r["bound"] = ("goal (issue 13): tiered >= 0.95 of DRAM-only.  CPU "
                  "us per request: the server's user + system time "
                  "(/proc/PID/stat, all threads) and the load generator's "
                  "(getrusage of the tcload child) over a window, divided "
                  "by its requests: on a machine where both share every "
                  "CPU, throughput follows it, and it is far steadier "
                  "than ops/s; DRAM-only's over this config's is the "
                  "throughput ratio it predicts.  The emulation spins "
                  "nvm_emulate's ns for each N-zone line read or written "
                  "(`stats tier` nvm_lines_read, nvm_lines_written); 'CPU "
                  "if spin were all' is DRAM-only's CPU per request over "
                  "itself plus that spin: the ratio the emulated latency "
                  "alone leaves")
    r["plots"].append({"file": "tputlong.png", "kind": "line",
                       "title": "DRAM-only's CPU per request over each "
                       "tiered server's, window by window",
                       "xlabel": "window (1: right after the preload)",
                       "ylabel": "CPU ratio",
                       "hline": 0.95, "series": series})
    return [r]


def exp_fig7(ctx: Ctx) -> list:
    sc = ctx.scale
    r = base_result("fig7", "NVM-latency sweep",
                    "Fig. 7: throughput falls roughly linearly with the NVM "
                    "read/write latency; only slightly for Uni-3-2K, faster "
                    "for larger objects.", ctx)
    ds = sc.datasets[0]
    g = sc.get_ratios[0]
    wl = "%s %d%% GET" % (ds, round(100 * g))
    ctx.log("fig7: " + wl)
    mb, nvm = dram_mb(ds, 0.25), nvm_mb_for(ds)
    specs = [plain("DRAM-only", ctx.server, full_mb(ds))]
    specs += [tiered("HMCached %s" % lat, ctx, mb, nvm, "hmcached", lat)
              for lat in sc.latencies]
    load = Load(ds, g, sc.requests, sc.conns, sc.depth)
    runs, notes = interleave(specs, lambda s: load, ctx)
    r["notes"] += notes
    sums = {n: summarise(v, ctx.tier_reason is None) for n, v in runs.items()}
    ref = sums["DRAM-only"]["throughput"]
    zero = sums["HMCached " + sc.latencies[0]]["throughput"]
    rows, pts = [], []
    for s in specs:
        sm = sums[s.name]
        r["configs"][s.name] = {"server": s.cmdline(), "summary": sm,
                                "runs": runs[s.name]}
        lat = s.name.split()[-1] if s.name != "DRAM-only" else ""
        rows.append([s.name, lat, fmt(sm["throughput"], "ops"),
                     fmt(ratio(sm["throughput"], zero)) if lat else "",
                     fmt(ratio(sm["throughput"], ref)),
                     fmt(sm.get("nvm_lines_read"), "int"),
                     fmt(sm.get("nvm_lines_written"), "int"),
                     sm.get("error", "")])
        if lat:
            pts.append([int(lat.split(":")[0]), sm["throughput"] or 0])
    if ctx.tier_reason:
        r["not_available"].append(na("NVM line counts: " + ctx.tier_reason))
    r["tables"].append({"columns": [
        "config", "nvm_emulate R:W ns", "median ops/s", "vs 0:0",
        "vs DRAM-only", "NVM lines read", "NVM lines written", "error"],
        "rows": rows})
    r["bound"] = ("physical: with L lines per request the emulated stall is "
                  "about R*L_read + W*L_written ns on top of the 0:0 cost")
    r["plots"].append({"file": "fig7.png", "kind": "line",
                       "title": "Fig. 7: NVM latency sweep (%s)" % wl,
                       "xlabel": "injected read ns (write = ~4.1x)",
                       "ylabel": "ops/s (median)",
                       "series": {"HMCached": pts,
                                  "DRAM-only": [[p[0], ref or 0] for p in pts]}})
    return [r]


def exp_choices(ctx: Ctx) -> list:
    """The two defaults doc/tiering.md "Stores" weighs: promotion in
    the request (sync) or by the tier thread (async), and placement of new
    keys in D while it has free chunks (dram_first) or in N (the paper)."""
    sc = ctx.scale
    r = base_result("choices", "Design choices: promotion mode and placement",
                    "Not in the paper (it promotes immediately and places "
                    "new keys in the N-zone); both variants are measured "
                    "for the default doc/tiering.md chose.", ctx)
    if ctx.tier_reason:
        r["not_available"].append(na("tier stats: " + ctx.tier_reason))
        return [r]
    ds = sc.datasets[0]
    mb, nvm = dram_mb(ds, 0.25), nvm_mb_for(ds)
    variants = [("async, dram_first (default)", ""),
                ("sync, dram_first", "tier_promote=sync"),
                ("async, nvm placement", "tier_placement=nvm"),
                ("sync, nvm placement", "tier_promote=sync,tier_placement=nvm")]
    rows = []
    for g in sc.get_ratios:
        wl = "%s %d%% GET" % (ds, round(100 * g))
        ctx.log("choices: " + wl)
        specs = [tiered(n, ctx, mb, nvm, "hmcached", extra=e)
                 for n, e in variants]
        load = Load(ds, g, sc.requests, sc.conns, sc.depth)
        runs, notes = interleave(specs, lambda s: load, ctx)
        r["notes"] += notes
        sums = {n: summarise(v, True) for n, v in runs.items()}
        ref = sums[variants[0][0]]["throughput"]
        for s in specs:
            sm = sums[s.name]
            r["configs"]["%s / %s" % (wl, s.name)] = {
                "server": s.cmdline(), "summary": sm, "runs": runs[s.name]}
            rd, wr = sm.get("nvm_lines_read"), sm.get("nvm_lines_written")
            ops = sm.get("ops") or None
            rows.append([wl, s.name, fmt(sm["throughput"], "ops"),
                         fmt(ratio(sm["throughput"], ref)),
                         fmt(sm.get("d_share")),
                         fmt(ratio(rd, ops)), fmt(ratio(wr, ops)),
                         fmt(sm.get("promotions"), "int"),
                         sm.get("error", "")])
    r["tables"].append({"columns": [
        "workload", "variant", "median ops/s", "vs default", "D-zone share",
        "NVM lines read / request", "NVM lines written / request",
        "promotions", "error"], "rows": rows})
    r["bound"] = ("D-zone share and NVM lines per request are the "
                  "deterministic figures; throughput is noisy on 2 cores")
    return [r]


def exp_fig9(ctx: Ctx) -> list:
    sc = ctx.scale
    r = base_result("fig9", "Index: DRAM bytes per item, NVM lines per "
                    "N-zone GET hit",
                    "Fig. 9: vs HMCached-LRU / HMCached-CLOCK (memcached's "
                    "index on NVM) HMCached reads 10%/6% fewer and writes "
                    "58%/36% fewer NVM lines; ~12% of GETs are served by "
                    "the N-zone. Sec. 3.2: a descriptor costs 19 B of DRAM "
                    "(three per 64-byte line).", ctx)
    r["not_available"].append(na(
        "the paper's HMCached-LRU and HMCached-CLOCK index variants: "
        "tiercached builds one index for both zones (doc/tiering.md "
        "\"Index and descriptors\"), "
        "there is no switch to memcached's index on NVM"))
    ds = sc.datasets[0]
    mb, nvm = dram_mb(ds, 0.25), nvm_mb_for(ds)
    specs = [tiered("NVM-only, 100% GET", ctx, mb, nvm, "nvm"),
             tiered("HMCached, 95% GET", ctx, mb, nvm, "hmcached")]
    loads = {specs[0].name: Load(ds, 1.0, sc.requests, sc.conns, sc.depth),
             specs[1].name: Load(ds, 0.95, sc.requests, sc.conns, sc.depth)}
    ctx.log("fig9: " + ds)
    runs, notes = interleave(specs, lambda s: loads[s.name], ctx, reps=1)
    r["notes"] += notes + ["line counts are deterministic figures: one run "
                           "per configuration"]
    rows = []
    for s in specs:
        sm = summarise(runs[s.name], ctx.tier_reason is None)
        bound = payload_lines(loads[s.name], ctx)
        r["configs"][s.name] = {"server": s.cmdline(), "summary": sm,
                                "runs": runs[s.name]}
        if ctx.tier_reason or "error" in sm:
            why = sm.get("error") or ctx.tier_reason
            rows.append([s.name, na(why), "", "", "", "", fmt(bound), ""])
            continue
        nh, dh = sm.get("n_hits"), sm.get("d_hits")
        rows.append([s.name, fmt(sm.get("index_bytes"), "int"),
                     fmt(sm.get("index_bytes_per_item")),
                     fmt(nh, "int"),
                     fmt(ratio(nh, (nh or 0) + (dh or 0)), "pct"),
                     fmt(ratio(sm.get("nvm_lines_read"), nh)),
                     fmt(bound),
                     fmt(ratio(sm.get("nvm_lines_written"), nh))])
    if ctx.tier_reason:
        r["not_available"].append(na("index_bytes, n_hits, NVM lines: "
                                     + ctx.tier_reason))
    r["tables"].append({"columns": [
        "run", "index_bytes", "index bytes per item", "N-zone hits",
        "N share of hits", "NVM lines read per N hit",
        "key+value lines per GET (bound)", "NVM lines written per N hit"],
        "rows": rows})
    r["bound"] = ("a GET hit in the N-zone must read at least the lines of "
                  "its key and value (mean of ceil((10 + size) / 64) over "
                  "the GETs of the stream); the project's goal: the item's own "
                  "lines + < 0.01, and <= 16 DRAM bytes of index per N item "
                  "(paper: ~21). In the NVM-only 100%-GET run every hit is "
                  "an N hit and nothing should be written.")
    return [r]


def exp_fig10(ctx: Ctx) -> list:
    sc = ctx.scale
    r = base_result("fig10", "Slab calcification: phases switching datasets",
                    "Fig. 10: datasets A (normal 4K+-1K) and B (uniform "
                    "1..8K), 1M objects each, 1 GB DRAM, 5 phases A B A B A "
                    "of 120M Zipf 0.99 requests: throughput drops at each "
                    "switch; HMCached (DP reassignment) and PSA recover, "
                    "Calcific does not; HMCached > PSA.", ctx)
    a, b = sc.calc_a, sc.calc_b
    mb = dram_mb(a, 0.25)
    nvm = math.ceil((item_bytes(a) + item_bytes(b)) * 2 / MIB) + 32
    # the paper's periods scaled to a segment (120M requests there): decay
    # 30M = a quarter segment; reassignment (unspecified there) 1/20
    periods = ("tier_decay_period=%d,tier_reassign_period=%d"
               % (sc.calc_segment // 4, sc.calc_segment // 20))
    specs = []
    for opt in ("dp", "greedy", "psa", "none"):
        s = tiered("tier_reassign=%s" % opt, ctx, mb, nvm, "hmcached",
                   extra="tier_reassign=%s,%s" % (opt, periods))
        # -f 2: with -f 1.25, 1..8K values span ~30 classes and a small
        # -m gives each class its one first page: nothing could move
        s.args += ["-f", "2"]
        reason = probe(s, ctx)
        if reason is None:
            specs.append(s)
        else:
            r["not_available"].append(na("tier_reassign=%s: %s" % (opt, reason)))
    if not specs:
        specs.append(tiered("hmcached (no tier_reassign)", ctx, mb, nvm,
                            "hmcached"))
        r["notes"].append("no tier_reassign option is accepted yet: only the "
                          "server's default behaviour is measured")
    sub = sc.calc_segment // sc.calc_sub
    phases = ["dataset=%s,ns=b,preload=1,requests=1,get=1" % b,
              "dataset=%s,ns=a,preload=1,requests=1,get=1" % a]
    labels = []
    for seg, (ds, ns) in enumerate([(a, "a"), (b, "b"), (a, "a"), (b, "b"),
                                    (a, "a")]):
        for k in range(sc.calc_sub):
            phases.append("dataset=%s,ns=%s,requests=%d,set-on-miss=1"
                          % (ds, ns, sub))
            labels.append("%s%d.%d" % ("AB"[ns == "b"], seg + 1, k + 1))
    load = Load(a, 0.95, sub, sc.conns, sc.depth, phases=tuple(phases))
    ctx.log("fig10: %s / %s, -m %d" % (a, b, mb))
    runs, notes = interleave(specs, lambda s: load, ctx)
    r["notes"] += notes
    r["notes"].append("phases 0-1 preload B then A (1 request each, not "
                      "shown); then 5 segments A B A B A of %d requests, "
                      "each split in %d sub-phases; 95%% GET, set on miss"
                      % (sc.calc_segment, sc.calc_sub))
    r["notes"].append("servers run with -f 2 (so that -m %d MB holds "
                      "several pages per class) and %s" % (mb, periods))
    series: dict = {}
    cols = ["phase", "requests so far"]
    per: dict = {}
    for s in specs:
        ok = [x for x in runs[s.name] if "error" not in x and x.get("phases")]
        r["configs"][s.name] = {"server": s.cmdline(), "runs": runs[s.name]}
        cols += [s.name + " ops/s", s.name + " hit ratio"]
        per[s.name] = []
        for i in range(len(labels)):
            idx = i + 2
            t = median(x["phases"][idx]["throughput"] for x in ok
                       if len(x["phases"]) > idx)
            h = median(x["phases"][idx]["hit_ratio"] for x in ok
                       if len(x["phases"]) > idx)
            per[s.name].append((t, h))
            series.setdefault(s.name, []).append([(i + 1) * sub, t or 0])
        if not ok and runs[s.name]:
            r["not_available"].append(na("%s: %s" % (s.name,
                                                     runs[s.name][0]["error"])))
    rows = []
    for i, lab in enumerate(labels):
        row = [lab, (i + 1) * sub]
        for s in specs:
            t, h = per[s.name][i]
            row += [fmt(t, "ops"), fmt(h)]
        rows.append(row)
    r["tables"].append({"columns": cols, "rows": rows})
    srows = []
    for s in specs:
        ok = [x for x in runs[s.name] if "error" not in x and x.get("tier")]
        def med(key, ok=ok):
            return median(x["tier"].get(key) for x in ok)
        share = median(ratio(x["tier"].get("d_hits"),
                             (x["tier"].get("d_hits") or 0)
                             + (x["tier"].get("n_hits") or 0)) for x in ok)
        srows.append([s.name, fmt(share), fmt(med("reassign_moves"), "int"),
                      fmt(med("reassign_periods"), "int"),
                      fmt(med("reassign_page_demotions"), "int"),
                      fmt(med("nvm_lines_read"), "int")])
    r["tables"].append({"title": "whole run (medians): D-zone share of "
                        "hits, reassignment work, NVM lines read",
                        "columns": ["config", "D share", "page moves",
                                    "periods", "items demoted by moves",
                                    "NVM lines read"], "rows": srows})
    r["bound"] = ("n/a (a static oracle does not bound a workload that "
                  "changes; phase A's hit ratio at the end of the run vs "
                  "phase 1 shows what calcification costs)")
    r["plots"].append({"file": "fig10.png", "kind": "line",
                       "title": "Fig. 10: A B A B A (%s / %s)" % (a, b),
                       "xlabel": "requests", "ylabel": "ops/s (median)",
                       "series": series})
    return [r]


def shift_phase_run(srv: "Server", spec: str, load: Load, ctx: Ctx,
                    jpath: Path) -> dict:
    """One tcload phase against a running server, with the `stats tier`
    deltas it caused."""
    before = srv.stats("tier") or {}
    j = tcload(["-s", "127.0.0.1:%d" % srv.port] + load.common()
               + ["-n", str(load.requests), "--phase", spec], jpath, 600)
    delta = tier_delta(before, srv.stats("tier") or {}) or {}
    run = [ph for ph in j["phases"] if ph.get("run")]
    res = run_summary(run[0]["run"]) if run else {}
    res["d_share"] = ratio(delta.get("d_hits"), (delta.get("d_hits") or 0)
                           + (delta.get("n_hits") or 0))
    res["moves"] = delta.get("reassign_moves")
    return res


def shift_run(spec: Spec, ctx: Ctx) -> dict:
    """Preload A, measure A, preload B (the shift), measure B phase by
    phase, on one server."""
    sc = ctx.scale
    a, b = sc.shift_a, sc.shift_b
    load = Load(a, 0.95, sc.shift_phase, sc.conns, sc.depth)
    jpath = ctx.work / ("tc-%s.json" % re.sub(r"\W", "_", spec.name))
    out: dict = {"config": spec.name, "server": spec.cmdline(), "phases": []}
    try:
        with Server(spec, ctx.work) as srv:
            for ds, ns, count in ((a, "a", sc.shift_phases[0]),
                                  (b, "b", sc.shift_phases[1])):
                shift_phase_run(srv, "dataset=%s,ns=%s,preload=1,requests=1,"
                                "get=1" % (ds, ns), load, ctx, jpath)
                for k in range(count):
                    r = shift_phase_run(srv, "dataset=%s,ns=%s,requests=%d,"
                                        "set-on-miss=1" % (ds, ns,
                                                           sc.shift_phase),
                                        load, ctx, jpath)
                    r["label"] = "%s%d" % (ns.upper(), k + 1)
                    out["phases"].append(r)
                    ctx.log("  %-24s %s: D share %s, %s ops/s, %s moves" % (
                        spec.name, r["label"], fmt(r["d_share"]),
                        fmt(r.get("throughput"), "ops"),
                        fmt(r.get("moves"), "int")))
            out["tier_after"] = srv.stats("tier")
    except ServerError as e:
        out["error"] = str(e)
    except (RuntimeError, subprocess.TimeoutExpired, OSError, KeyError) as e:
        out["error"] = "run failed: %s" % e
    return out


def requests_to_reach(phases: list, first_b: int, frac: float,
                      per_phase: int) -> Optional[int]:
    """Requests after the shift until a phase's D share is at least frac
    of the last phase's (the end of the phase that first gets there)."""
    b = phases[first_b:]
    if not b or b[-1].get("d_share") is None:
        return None
    goal = frac * b[-1]["d_share"]
    for i, p in enumerate(b):
        if (p.get("d_share") or 0) >= goal:
            return (i + 1) * per_phase
    return None


def exp_calcscale(ctx: Ctx) -> list:
    sc = ctx.scale
    a, b = sc.shift_a, sc.shift_b
    r = base_result("calcscale", "Calcification at operator scale: one "
                    "shift of the size mix",
                    "Fig. 10's shape on a cache of many pages: after the "
                    "size mix shifts, DRAM pages must follow the new "
                    "classes; DP reassignment recovers, a calcified "
                    "allocator (none) does not.", ctx)
    nvm = math.ceil((item_bytes(a) + item_bytes(b)) * 1.5 / MIB) + 64
    fixed = "tier_reassign_period=1000000,tier_reassign_rate=4"
    counters = "tier_reassign_weight=counters"
    configs = [("dp (auto)", "tier_reassign=dp"),
               ("dp (counters)", "tier_reassign=dp," + counters),
               ("dp (counters, fixed 1M/4)",
                "tier_reassign=dp,%s,%s" % (counters, fixed)),
               ("greedy (auto)", "tier_reassign=greedy"),
               ("psa (auto)", "tier_reassign=psa"),
               ("none", "tier_reassign=none")]
    specs = []
    for name, extra in configs:
        s = tiered(name, ctx, sc.shift_mb, nvm, "hmcached", extra=extra)
        reason = probe(s, ctx)
        if reason is None:
            specs.append(s)
        else:
            r["not_available"].append(na("%s: %s" % (name, reason)))
    ctx.log("calcscale: %s then %s, -m %d" % (a, b, sc.shift_mb))
    runs = {s.name: shift_run(s, ctx) for s in specs}
    n_a = sc.shift_phases[0]
    labels = ["A%d" % (k + 1) for k in range(n_a)] + \
        ["B%d" % (k + 1) for k in range(sc.shift_phases[1])]
    cols = ["phase", "requests after the shift"]
    for s in specs:
        cols += [s.name + " D share", s.name + " ops/s", s.name + " moves"]
    rows = []
    series: dict = {}
    for i, lab in enumerate(labels):
        after = (i - n_a + 1) * sc.shift_phase if i >= n_a else 0
        row = [lab, "{:,}".format(after) if after else "-"]
        for s in specs:
            ph = runs[s.name].get("phases", [])
            p = ph[i] if i < len(ph) else {}
            row += [fmt(p.get("d_share")), fmt(p.get("throughput"), "ops"),
                    fmt(p.get("moves"), "int")]
            if i >= n_a and p.get("d_share") is not None:
                series.setdefault(s.name, []).append([after, p["d_share"]])
        rows.append(row)
    r["tables"].append({"columns": cols, "rows": rows})
    srows = []
    for s in specs:
        run = runs[s.name]
        r["configs"][s.name] = {"server": s.cmdline(), "runs": [run]}
        if "error" in run:
            r["not_available"].append(na("%s: %s" % (s.name, run["error"])))
            continue
        t = run.get("tier_after") or {}
        srows.append([s.name, fmt(requests_to_reach(run["phases"], n_a, 0.9,
                                                     sc.shift_phase), "int"),
                      fmt(t.get("reassign_moves"), "int"),
                      fmt(t.get("reassign_periods"), "int"),
                      fmt(t.get("reassign_period_requests"), "int")])
    r["tables"].append({"title": "after the shift: requests until a phase's "
                        "D share is 90% of the last phase's, and the "
                        "reassignment work of the whole run",
                        "columns": ["config", "requests to 90%",
                                    "page moves", "periods",
                                    "last period (requests)"],
                        "rows": srows})
    r["notes"].append("one server per config (one run: the D share is "
                      "deterministic for a seed; ops/s are single runs on "
                      "a shared machine): preload %s, %d phases of %d "
                      "requests (95%% GET, set on miss, Zipf 0.99), then "
                      "preload %s (the shift) and %d phases of B"
                      % (a, n_a, sc.shift_phase, b, sc.shift_phases[1]))
    r["notes"].append("-m %d, nvm_size=%dm, nvm_emulate=%s, -t %d; dp "
                      "(counters) weighs classes by their access counters "
                      "alone (%s, the paper's), dp (counters, fixed 1M/4) "
                      "adds %s: the defaults before tier_reassign_weight="
                      "recent and tier_reassign_period/_rate=auto"
                      % (sc.shift_mb, nvm, PAPER_EMULATE, SERVER_THREADS,
                         counters, fixed))
    r["bound"] = ("n/a (the workload changes; the last phase of each "
                  "config is its own reference)")
    r["plots"].append({"file": "calcscale.png", "kind": "line",
                       "title": "D-zone share after the shift (%s -> %s)"
                       % (a, b), "xlabel": "requests after the shift",
                       "ylabel": "D-zone share of hits", "series": series})
    return [r]


def callgrind(binary: Path, args: list, ctx: Ctx) -> dict:
    env = dict(os.environ, REQUESTS=str(ctx.scale.ipr_requests), SMALL="1000",
               TCLOAD=str(TCLOAD))
    argv = [str(CALLGRIND_IPR), str(binary)] + args
    try:
        p = subprocess.run(argv, capture_output=True, text=True, env=env,
                           timeout=600)
    except subprocess.TimeoutExpired:
        return {"cmd": " ".join(argv), "error": "callgrind-ipr timed out"}
    m = re.search(r"Ir/request \(marginal[^)]*\): ([0-9.]+)", p.stdout)
    res = {"cmd": "REQUESTS=%d SMALL=1000 %s" % (ctx.scale.ipr_requests,
                                                 " ".join(argv))}
    if m:
        res["ir_per_request"] = float(m.group(1))
    else:
        res["error"] = (p.stderr or p.stdout).strip()[-300:]
    return res


def exp_fig11(ctx: Ctx) -> list:
    sc = ctx.scale
    r = base_result("fig11", "Overhead against stock memcached, DRAM only",
                    "Fig. 11: HMCached on a DRAM-only server vs vanilla "
                    "memcached: overhead (T1 - T2) / T1 below 5% for all "
                    "workloads (ratio >= 0.95).", ctx)
    if not ctx.stock.exists():
        r["not_available"].append(na("stock memcached %s not installed"
                                     % ctx.stock))
        return [r]
    ds = sc.datasets[0]
    full = full_mb(ds)
    specs = [plain("stock memcached", ctx.stock, full),
             plain("tiercached, no N-zone", ctx.server, full),
             tiered("tiercached hmcached, all in DRAM", ctx, full,
                    nvm_mb_for(ds), "hmcached", emulate="0:0")]
    rows, series = [], {}
    for g in sc.get_ratios:
        wl = "%s %d%% GET" % (ds, round(100 * g))
        ctx.log("fig11: " + wl)
        load = Load(ds, g, sc.requests, sc.conns, sc.depth)
        runs, notes = interleave(specs, lambda s: load, ctx)
        r["notes"] += notes
        sums = {n: summarise(v, False) for n, v in runs.items()}
        ref = sums["stock memcached"]["throughput"]
        for s in specs:
            sm = sums[s.name]
            r["configs"]["%s / %s" % (wl, s.name)] = {
                "server": s.cmdline(), "summary": sm, "runs": runs[s.name]}
            rt = ratio(sm["throughput"], ref)
            rows.append([wl, s.name, fmt(sm["throughput"], "ops"),
                         ", ".join(fmt(x, "ops") for x in sm["throughputs"]),
                         fmt(rt), fmt(1 - rt, "pct") if rt is not None else "n/a",
                         sm.get("error", "")])
            series.setdefault(s.name, []).append([wl, rt or 0])
    r["tables"].append({"title": "throughput, interleaved", "columns": [
        "workload", "server", "median ops/s", "runs ops/s", "vs stock",
        "overhead", "error"], "rows": rows})
    quiet = "no_lru_crawler,no_lru_maintainer,no_hashexpand,no_slab_reassign"
    ipr_cfgs = [("stock memcached", ctx.stock, ["-t", "1", "-o", quiet]),
                ("tiercached, no N-zone", ctx.server, ["-t", "1", "-o", quiet]),
                ("tiercached hmcached, all in DRAM", ctx.server,
                 ["-t", "1", "-m", "64", "-o", quiet + ",nvm_size=64m"])]
    ipr_rows, base = [], None
    for name, binary, args in ipr_cfgs:
        ctx.log("fig11: callgrind %s" % name)
        c = callgrind(binary, args, ctx)
        r["configs"]["callgrind / " + name] = c
        ir = c.get("ir_per_request")
        if base is None:
            base = ir
        ipr_rows.append([name, fmt(ir), fmt(ratio(ir, base)), c["cmd"],
                         c.get("error", "")])
    r["tables"].append({"title": "callgrind instructions per request "
                        "(deterministic)", "columns": [
                            "server", "Ir/request", "vs stock", "command",
                            "error"], "rows": ipr_rows})
    r["bound"] = "stock memcached 1.6.18 (Debian) is the reference: ratio 1"
    r["plots"].append({"file": "fig11.png", "kind": "bar",
                       "title": "Fig. 11: throughput / stock memcached",
                       "ylabel": "ratio (median)", "series": series,
                       "hline": 0.95})
    return [r]


# ------------------------------------------------------------------ ycsb

YCSB = ROOT / "scripts" / "ycsb"
YCSB_WORKLOADS = (("a", "A: 50/50 read/update, zipfian"),
                  ("b", "B: 95/5 read/update, zipfian"),
                  ("c", "C: read only, zipfian"),
                  ("d", "D: 95/5 read/insert, latest"),
                  ("e", "E: 95/5 scan/insert, zipfian (no scan)"),
                  ("f", "F: 50/50 read/read-modify-write, zipfian"))
YCSB_OPS = ("READ", "UPDATE", "INSERT", "READ-MODIFY-WRITE")
# Records (10 fields of 100 B: ~1.2 KB items, slab class 1.5 KB),
# operations per workload, -m of stock memcached and of tiercached DRAM
# only (the records and D's inserts fit with room to spare), the tiered
# server's -m (about half of them) and N-zone, and the time after which
# the experiment stops repeating.
YCSB_SIZES = {"small": {"records": 10000, "ops": 20000, "mb": 64,
                        "tier_mb": 8, "nvm_mb": 32, "budget_s": 420},
              "full": {"records": 100000, "ops": 200000, "mb": 320,
                       "tier_mb": 64, "nvm_mb": 256, "budget_s": 3600}}
YCSB_LINE = re.compile(r"^workload (\w+) (-load|-t): \[([A-Z-]+)\], "
                       r"([^,]+), (\S+)$")


def ycsb_parse(text: str) -> dict:
    """scripts/ycsb's lines as {phase: {throughput, runtime_ms, ops: {OP:
    {operations, avg_us, p99_us, returns}}}}; phase "load" or a workload."""
    phases: dict = {}
    for line in text.splitlines():
        m = YCSB_LINE.match(line)
        if not m:
            continue
        wl, phase, op, metric, val = m.groups()
        ph = phases.setdefault("load" if phase == "-load" else wl, {"ops": {}})
        v = float(val)
        v = None if math.isnan(v) else v
        if op == "OVERALL":
            key = "throughput" if metric.startswith("Throughput") else \
                "runtime_ms" if metric.startswith("RunTime") else None
            if key:
                ph[key] = v
            continue
        o = ph["ops"].setdefault(op, {})
        if metric == "Operations":
            o["operations"] = int(v or 0)
        elif metric == "AverageLatency(us)":
            o["avg_us"] = v
        elif metric == "99thPercentileLatency(us)":
            o["p99_us"] = v
        elif metric.startswith("Return="):
            o.setdefault("returns", {})[metric[len("Return="):]] = int(v or 0)
    return phases


def ycsb_failed(phase: dict) -> int:
    """Operations that did not return OK, but for E's scans, which the
    binding answers NOT_IMPLEMENTED by design."""
    n = 0
    for op, o in phase.get("ops", {}).items():
        for status, count in o.get("returns", {}).items():
            if status != "OK" and not (op == "SCAN"
                                       and status == "NOT_IMPLEMENTED"):
                n += count
    return n


def ycsb_env(sz: dict, load: bool) -> list:
    return (([] if load else ["LOAD=0"])
            + ["RECORDS=%d" % sz["records"], "OPS=%d" % sz["ops"],
               "MVN_OFFLINE=%s" % os.environ.get("MVN_OFFLINE", "1")])


def ycsb_call(port: int, wl: str, load: bool, sz: dict) -> tuple:
    """scripts/ycsb on one workload (after the load when asked); returns
    (its phases, an error or None, its stderr lines: the binding's
    messages for failed operations).  On a time-out the whole process
    group goes, the JVM with it."""
    env_args = ycsb_env(sz, load)
    env = dict(os.environ, **dict(a.split("=", 1) for a in env_args))
    timeout = 60 + (sz["records"] * load + sz["ops"]) / 200
    p = subprocess.Popen([str(YCSB), "127.0.0.1:%d" % port, wl],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out, err = "", "timed out after %d s" % timeout
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
    phases = ycsb_parse(out)
    lines = err.strip().splitlines()[-20:]
    if p.returncode != 0 or wl not in phases:
        return phases, "scripts/ycsb %s exited %s: %s" % (
            wl, p.returncode, (err or out).strip()[-300:]), lines
    return phases, None, lines


def ycsb_round(specs: list, sz: dict, ctx: Ctx, rep: int) -> dict:
    """Every server fresh, side by side; the load and A on each in turn,
    then B on each, ... F on each (the order rotates round by round);
    `stats tier` of the tiered ones at the end.  {name: run}."""
    k = rep % len(specs)
    order = specs[k:] + specs[:k]
    runs = {s.name: {"config": s.name, "server": s.cmdline(), "phases": {}}
            for s in specs}
    with contextlib.ExitStack() as stack:
        srvs = {}
        for s in order:
            try:
                srvs[s.name] = stack.enter_context(Server(s, ctx.work))
            except ServerError as e:
                runs[s.name]["error"] = str(e)
        for i, (wl, _) in enumerate(YCSB_WORKLOADS):
            for s in order:
                res = runs[s.name]
                if s.name not in srvs or "error" in res:
                    continue
                phases, err, lines = ycsb_call(srvs[s.name].port, wl,
                                               i == 0, sz)
                res["phases"].update(phases)
                res.setdefault("stderr", []).extend(lines)
                if err:
                    res["error"] = err
        for name, srv in srvs.items():
            if "nvm_size=" in " ".join(srv.spec.args) \
                    and ctx.tier_reason is None:
                runs[name]["tier_after"] = srv.stats("tier")
    for s in specs:
        res = runs[s.name]
        tput = " ".join("%s %.0f" % (w.upper(), res["phases"].get(w, {}).get(
            "throughput") or 0) for w, _ in YCSB_WORKLOADS)
        ctx.log("  %-30s %s" % (s.name, "error: " + res["error"]
                                if "error" in res else tput))
    return runs


def ycsb_summary(runs: list, wl: str) -> dict:
    ok = [r["phases"][wl] for r in runs
          if r["phases"].get(wl, {}).get("throughput")]
    s: dict = {"n": len(ok),
               "throughput": median(p["throughput"] for p in ok),
               "throughputs": [p["throughput"] for p in ok],
               "failed": sum(ycsb_failed(p) for p in ok), "ops": {}}
    for op in YCSB_OPS:
        have = [p["ops"][op] for p in ok
                if p["ops"].get(op, {}).get("operations")]
        if have:
            s["ops"][op] = {
                "operations": median(o["operations"] for o in have),
                "avg_us": median(o.get("avg_us") for o in have),
                "p99_us": median(o.get("p99_us") for o in have)}
    errors = [r["error"] for r in runs if "error" in r]
    if errors and not ok:
        s["error"] = errors[0]
    return s


def stock_version(stock: Path) -> str:
    try:
        return subprocess.run([str(stock), "-V"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "memcached"


def exp_ycsb(ctx: Ctx) -> list:
    sc = ctx.scale
    sz = dict(YCSB_SIZES[sc.name])
    if sc.requests != (FULL if sc.name == "full" else SMALL).requests:
        sz["ops"] = sc.requests           # --requests: operations per workload
    r = base_result("ycsb", "YCSB workloads A-F against stock memcached",
                    "No figure in the paper: YCSB's core workloads A to F "
                    "(read/update/insert/scan/read-modify-write mixes) "
                    "through a spymemcached binding, tiercached against "
                    "Debian's memcached.", ctx)
    if not ctx.stock.exists():
        r["not_available"].append(na("stock memcached %s not installed"
                                     % ctx.stock))
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            r["not_available"].append(na("%s not installed (scripts/ycsb "
                                         "needs Java and Maven)" % tool))
    if r["not_available"]:
        return [r]
    specs = [plain("stock memcached", ctx.stock, sz["mb"]),
             plain("tiercached DRAM only", ctx.server, sz["mb"]),
             tiered("tiercached tiered, DRAM %d MB" % sz["tier_mb"], ctx,
                    sz["tier_mb"], sz["nvm_mb"], "hotter")]
    runs: dict = {s.name: [] for s in specs}
    deadline = time.monotonic() + sz["budget_s"]
    ctx.log("ycsb: %d records, %d operations per workload, A-F"
            % (sz["records"], sz["ops"]))
    for rep in range(sc.reps):
        if rep > 0 and time.monotonic() > deadline:
            r["notes"].append("time bound (%d s) reached: %d of %d "
                              "repetitions" % (sz["budget_s"], rep, sc.reps))
            break
        live = [s for s in specs if not any(
            x.get("error", "").startswith("option refused")
            for x in runs[s.name])]   # it will not start next time either
        for name, res in ycsb_round(live, sz, ctx, rep).items():
            runs[name].append(res)
    sums = {(s.name, w): ycsb_summary(runs[s.name], w)
            for s in specs for w, _ in YCSB_WORKLOADS}
    for s in specs:
        r["configs"][s.name] = {
            "server": s.cmdline(), "runs": runs[s.name],
            "summary": {w: sums[(s.name, w)] for w, _ in YCSB_WORKLOADS}}
    rows, lat_rows, series = [], [], {}
    for w, label in YCSB_WORKLOADS:
        ref = sums[(specs[0].name, w)]
        for s in specs:
            sm = sums[(s.name, w)]
            rt = ratio(sm["throughput"], ref["throughput"])
            rows.append([label, s.name, fmt(sm["throughput"], "ops"),
                         ", ".join(fmt(x, "ops") for x in sm["throughputs"]),
                         fmt(rt), fmt(sm["failed"], "int"),
                         sm.get("error", "")])
            if s is not specs[0] and w != "e":
                series.setdefault(s.name, []).append([w.upper(), rt or 0])
        for op in YCSB_OPS:
            ro = ref["ops"].get(op, {})
            for s in specs:
                o = sums[(s.name, w)]["ops"].get(op)
                if o is not None:
                    lat_rows.append([
                        w.upper(), op, s.name, fmt(o["avg_us"]),
                        fmt(o["p99_us"], "int"),
                        fmt(ratio(o["avg_us"], ro.get("avg_us"))),
                        fmt(ratio(o["p99_us"], ro.get("p99_us")))])
    r["tables"].append({"title": "throughput (YCSB [OVERALL] ops/s), "
                        "interleaved", "columns": [
                            "workload", "server", "median ops/s",
                            "runs ops/s", "vs stock", "failed ops",
                            "error"], "rows": rows})
    r["tables"].append({"title": "latency per operation (medians of YCSB's "
                        "AverageLatency and 99thPercentileLatency)",
                        "columns": ["workload", "operation", "server",
                                    "avg us", "p99 us", "avg vs stock",
                                    "p99 vs stock"], "rows": lat_rows})
    tier_name = specs[2].name
    shares = [ratio(t.get("d_hits"), (t.get("d_hits") or 0)
                    + (t.get("n_hits") or 0))
              for t in (x.get("tier_after") for x in runs[tier_name]) if t]
    if shares:
        r["notes"].append(
            "%s: %s of its hits were D-zone hits (median over rounds, "
            "`stats tier` after the load and A-F); the rest were N-zone "
            "hits at nvm_emulate=%s" % (tier_name,
                                        fmt(median(shares), "pct"),
                                        PAPER_EMULATE))
    elif ctx.tier_reason:
        r["not_available"].append(na("D-zone share of %s: %s"
                                     % (tier_name, ctx.tier_reason)))
    failed = sum(sm["failed"] for sm in sums.values())
    said = next((line for s in specs for x in runs[s.name]
                 for line in x.get("stderr", [])
                 if line.startswith("memcached ")), None)
    if failed:
        r["notes"].append(
            "failed ops: %d operations in all returned ERROR (YCSB -t "
            "phases; the binding returns ERROR on an exception)%s" % (
                failed, ", e.g. `%s`" % said[:200] if said else ""))
    r["notes"] += [
        "E: memcached has no scan (no ordered keys): the binding answers "
        "a scan NOT_IMPLEMENTED without sending a request, so 95% of E's "
        "operations are no-ops (YCSB's SCAN-FAILED, not counted in "
        "failed ops). E's ops/s is no server figure and E is left out of "
        "the plot; its INSERT latency is one.",
        "Each round starts the servers fresh, side by side, then runs "
        "`%s scripts/ycsb HOST:PORT a` (load %d records, then A) on each "
        "in turn, then `%s scripts/ycsb HOST:PORT b` on each, and so on to "
        "F, %d operations per workload, one JVM per phase, 1 client "
        "thread; the order of the servers rotates round by round. A "
        "synchronous single-thread client is latency-bound: ops/s is "
        "client + loopback round trip + server per request, so a ratio "
        "near 1 means no per-request difference the client can see, not "
        "equal capacity." % (" ".join(ycsb_env(sz, True)), sz["records"],
                             " ".join(ycsb_env(sz, False)), sz["ops"]),
        "D inserts new keys after the loaded ones and reads the latest "
        "most; E's inserts start at the same key as D's (each YCSB run "
        "counts from recordcount), so they overwrite them. F's "
        "read-modify-write is a read and an update, and the binding's "
        "update is itself gets + cas: 3 requests."]
    r["bound"] = ("%s (Debian) is the reference: ratio 1; a latency ratio "
                  "above 1 is slower than it" % stock_version(ctx.stock))
    r["plots"].append({"file": "ycsb.png", "kind": "bar",
                       "title": "YCSB ops/s / stock memcached (E: no scan, "
                       "left out)", "ylabel": "ratio (median)",
                       "series": series, "hline": 1.0})
    return [r]


def thread_counts() -> list:
    """1, 2, 4, ... up to the online CPUs, and the CPU count itself."""
    cpus = os.cpu_count() or 1
    counts = [1]
    while counts[-1] * 2 <= cpus:
        counts.append(counts[-1] * 2)
    if counts[-1] != cpus:
        counts.append(cpus)
    return counts


# Requests per key of the dataset a scaling run's servers serve after the
# preload and before the measured run: a preload leaves whatever it stored
# first in the tiered server's DRAM, and the hot set then moves in (about
# half of D's items promoted, as many demoted) over roughly the first 3-4
# requests a key; doc/scaling.md "Where the time goes".
SCALING_WARMUP_PER_KEY = 4


def exp_scaling(ctx: Ctx) -> list:
    sc = ctx.scale
    r = base_result("scaling", "Thread scaling: ops/s and p99 by -t",
                    "No figure in the paper: its servers ran a fixed thread "
                    "count.", ctx)
    ds = sc.datasets[0]
    full, quarter, nvm = full_mb(ds), dram_mb(ds, 1 / 4), nvm_mb_for(ds)
    counts = thread_counts()
    warmup = SCALING_WARMUP_PER_KEY * dataset_info(ds)[0]
    specs, load_of = [], {}
    for get in sc.get_ratios:
        for t in counts:
            threads = ["-t", str(t)]
            point = "%d%% GET, -t %d / " % (round(get * 100), t)
            specs += [
                Spec(point + "stock memcached", ctx.stock,
                     ["-m", str(full)] + threads),
                Spec(point + "tiercached DRAM only", ctx.server,
                     ["-m", str(full)] + threads),
                Spec(point + "tiercached tiered, DRAM 1/4", ctx.server,
                     ["-m", str(quarter)] + threads
                     + ["-o", "nvm_size=%dm,nvm_emulate=%s"
                        % (nvm, PAPER_EMULATE)]),
                Spec(point + "tiered, no emulated latency", ctx.server,
                     ["-m", str(quarter)] + threads
                     + ["-o", "nvm_size=%dm,nvm_emulate=0:0" % nvm])]
            for sp in specs[-4:]:
                load_of[sp.name] = Load(ds, get, sc.requests, conns=4 * t,
                                        depth=8, client_threads=counts[-1],
                                        warmup=warmup)
    if not ctx.stock.exists():
        r["not_available"].append(na("stock memcached %s not installed"
                                     % ctx.stock))
        specs = [sp for sp in specs if sp.binary != ctx.stock]
    ctx.log("scaling: -t %s, %s, GET %s, %d warm-up requests"
            % (counts, ds, sc.get_ratios, warmup))
    runs, notes = interleave(specs, lambda sp: load_of[sp.name], ctx)
    r["notes"] += notes
    rows, series = [], {}
    for get in sc.get_ratios:
        for t in counts:
            point = "%d%% GET, -t %d / " % (round(get * 100), t)
            sums = {}
            for sp in specs:
                if sp.name.startswith(point):
                    sums[sp.name[len(point):]] = (sp, summarise(
                        runs[sp.name], False))
            stock = sums.get("stock memcached",
                             (None, {}))[1].get("throughput")
            dram = sums["tiercached DRAM only"][1].get("throughput")
            for name, (sp, sm) in sums.items():
                r["configs"][sp.name] = {"server": sp.cmdline(),
                                         "summary": sm,
                                         "runs": runs[sp.name]}
                rows.append(["%d%%" % round(get * 100), str(t), name,
                             fmt(sm["throughput"], "ops"),
                             ", ".join(fmt(x, "ops")
                                       for x in sm["throughputs"]),
                             fmt(sm["get_p99_us"]),
                             fmt(ratio(sm["throughput"], stock)),
                             fmt(ratio(sm["throughput"], dram)),
                             sm.get("error", "")])
                series.setdefault("%s, %d%% GET" % (name, round(get * 100)),
                                  []).append([str(t),
                                              sm["throughput"] or 0])
    r["tables"].append({"title": "throughput and GET p99 by server threads, "
                        "interleaved, after %d warm-up requests" % warmup,
                        "columns": [
                            "GET", "-t", "server", "median ops/s",
                            "runs ops/s", "GET p99 us", "vs stock",
                            "vs DRAM only", "error"], "rows": rows})
    r["bound"] = ("ops/s should grow with -t up to the CPUs the client "
                  "leaves free; the tiered server's goal is >= 0.95 of "
                  "DRAM only at 95% GET and >= 0.90 at 50% GET at every -t")
    r["notes"].append("%d CPUs; the load generator (a tcload thread per "
                      "CPU, 4 connections per server thread, depth 8) "
                      "shares them, so on a small machine the figures "
                      "bound the server from below" % (os.cpu_count() or 1))
    r["notes"].append("every server gets the preload, then %d requests (%d "
                      "a key, seed 2) before the measured run, which sees "
                      "the tiered server after its hot set moved into "
                      "DRAM; measured right after the preload, while it "
                      "moves, tiered was 0.79-0.83 of DRAM only here "
                      "(doc/scaling.md, scripts/tier-profile)"
                      % (warmup, SCALING_WARMUP_PER_KEY))
    r["notes"].append("tiered, no emulated latency: the same tiered server "
                      "with nvm_emulate=0:0, what the engine costs without "
                      "the spin that stands in for the slower memory (the "
                      "paper's 300 ns a line read and 1000 ns a line "
                      "written, serial, doc/nvm.md)")
    r["plots"].append({"file": "scaling.png", "kind": "bar",
                       "title": "ops/s by server threads",
                       "ylabel": "ops/s (median)", "series": series})
    return [r]


def exp_fogcached(ctx: Ctx) -> list:
    sc = ctx.scale
    r = base_result("fogcached", "Against Fogcached's baselines: extstore "
                    "and a memory file",
                    "Fogcached (IEICE 2021, sec. 5.2): 4 GB DRAM + 28 GB "
                    "DCPM, 1 KB values, GETs: mean GET latency 311 us for "
                    "Fogcached vs 460 us for memcached + extstore on DCPM "
                    "(peak of the distribution ~40% lower); memcached "
                    "DRAM-only peak 250-260 us, DCPM-only 330-340 us.", ctx)
    if not ctx.stock.exists():
        r["not_available"].append(na("stock memcached not installed"))
        return [r]
    ds = sc.fog_dataset
    mb = dram_mb(ds, 1 / 8)
    second = math.ceil(payload_bytes(ds) * 7 / 8 * 1.6 / MIB) + 64
    fdir = Path(tempfile.mkdtemp(prefix="tc-fog-", dir="/dev/shm"
                                 if Path("/dev/shm").is_dir() else None))
    os.chmod(fdir, 0o1777)
    nvm_file, ext_file, mem_file = (fdir / "tier.nvm", fdir / "ext.dat",
                                    fdir / "mem.file")
    ours = tiered("tiercached hmcached (nvm_path file)", ctx, mb,
                  nvm_mb_for(ds), "hmcached", emulate="0:0",
                  extra="nvm_path=%s" % nvm_file)
    ours.files = (str(nvm_file),)
    specs = [ours,
             plain("stock + extstore", ctx.stock, mb,
                   ("-o", "ext_path=%s:%dm" % (ext_file, second))),
             plain("stock -e memory file", ctx.stock, full_mb(ds),
                   ("-e", str(mem_file))),
             plain("stock DRAM-only, same -m", ctx.stock, mb),
             plain("stock DRAM-only, whole dataset", ctx.stock, full_mb(ds))]
    reason = probe(tiered("probe", ctx, 8, 16, "duallru"), ctx)
    if reason is None:
        d = tiered("tiercached duallru (nvm_path file)", ctx, mb,
                   nvm_mb_for(ds), "duallru", emulate="0:0",
                   extra="nvm_path=%s" % (fdir / "dual.nvm"))
        d.files = (str(fdir / "dual.nvm"),)
        specs.insert(1, d)
    else:
        r["not_available"].append(na("tier_policy=duallru (Fogcached's "
                                     "Dual-LRU): " + reason))
    load = Load(ds, 1.0, sc.requests, sc.conns, sc.depth)
    ctx.log("fogcached: %s, -m %d" % (ds, mb))
    try:
        runs, notes = interleave(specs, lambda s: load, ctx)
    finally:
        shutil.rmtree(fdir, ignore_errors=True)
    r["notes"] += notes + [
        "files under %s (tmpfs: every second tier runs at DRAM speed here, "
        "nvm_emulate=0:0, so the comparison is of software paths and hit "
        "ratios, not of media)" % fdir.parent,
        "-e maps the file as all item memory, so that server gets -m = the "
        "whole dataset in the file (NVM-only in Fogcached's table)",
        "extstore writes values > ext_item_size (512 B) to the file "
        "asynchronously; the pipelined preload (depth 64) can outrun it"]
    orc = oracle(load, mb * MIB, ctx)
    r["oracle"] = orc
    sums = {n: summarise(v, ctx.tier_reason is None) for n, v in runs.items()}
    ref = sums[ours.name]["throughput"]
    rows, series = [], {}
    for s in specs:
        sm = sums[s.name]
        r["configs"][s.name] = {"server": s.cmdline(), "summary": sm,
                                "runs": runs[s.name]}
        rows.append([s.name, s.args[1], fmt(sm["throughput"], "ops"),
                     fmt(ratio(sm["throughput"], ref)), fmt(sm["hit_ratio"]),
                     fmt(sm["get_mean_us"]), fmt(sm["get_p50_us"]),
                     fmt(sm["get_p99_us"]),
                     fmt(sm.get("d_share")) if s is ours else "",
                     fmt(orc.get("share")) if s is ours else "",
                     sm.get("error", "")])
        series.setdefault("ops/s", []).append([s.name, sm["throughput"] or 0])
    r["tables"].append({"columns": [
        "server", "-m MB", "median ops/s", "vs ours", "GET hit ratio",
        "GET mean us", "GET p50 us", "GET p99 us", "D-zone share (ours)",
        "D-zone share (oracle)", "error"], "rows": rows})
    r["bound"] = ("oracle static D-zone share for -m %d MB; the whole-"
                  "dataset DRAM-only server is the throughput and hit-ratio "
                  "bound" % mb)
    r["plots"].append({"file": "fogcached.png", "kind": "bar",
                       "title": "Fogcached comparison (%s, 100%% GET)" % ds,
                       "ylabel": "ops/s (median)", "series": series})
    if ctx.tier_reason:
        r["not_available"].append(na("our D-zone share: " + ctx.tier_reason))
    return [r]


# -------------------------------------------------------------- hitratio
# -m X of the hit-ratio experiment, requests a key in the Zipf streams'
# phases, requests a CacheLib model's phase, and rounds (every config once
# per stream a round, the order rotating).  Small: about 5 minutes on 2
# cores (--hit-mb 32: about a quarter).
HITRATIO_SIZES = {"small": {"mb": 64, "zipf_per_key": 3,
                            "model_requests": 300000, "reps": 1},
                  "full": {"mb": 128, "zipf_per_key": 7,
                           "model_requests": 1000000, "reps": 3}}
HIT_DEPTH = 4


def hit_streams(mb: int, sz: dict) -> tuple:
    """({stream: tcload phases}, [(row label, stream, measured phase)])."""
    n = int(sz["zipf_per_key"] * hitscen.zipf_keys(mb))
    # the model phases shrink with the cache as the zipf ones do
    m = sz["model_requests"] * mb // HITRATIO_SIZES["small"]["mb"]
    streams = {"zipf": hitscen.zipf_stream(mb, n),
               "onehit": hitscen.onehit_stream(mb, n)}
    rows = [("Zipf 0.99, stationary", "zipf", 1),
            ("Zipf 0.99, after the move", "zipf", 2),
            ("one-hit wonders + absent GETs", "onehit", 1)]
    for name in hitscen.MODELS:
        streams[name] = hitscen.model_stream(name, mb, m)
        rows.append(("CacheLib " + name, name, 1))
    return streams, rows


def hit_configs(ctx: Ctx, x: int) -> list:
    """(label, binary, args): the servers of every stream."""
    return [("memcached -m X", ctx.stock, ["-m", str(x)]),
            ("DRAM-only -m X", ctx.server, ["-m", str(x)]),
            ("tiered D+N=X", ctx.server,
             ["-m", str(x // 4), "-o", "nvm_size=%dm" % (x - x // 4)]),
            ("tiered D+N=2X", ctx.server,
             ["-m", str(x // 2), "-o", "nvm_size=%dm" % (2 * x - x // 2)]),
            ("memcached -m 2X", ctx.stock, ["-m", str(2 * x)])]


def hit_server_runs(ctx: Ctx, streams: dict, reps: int) -> dict:
    """{config: {stream: [{"hr": [hit ratio per phase], "malloced_mb",
    "errors"} per round]}}: the slab pages the server held at the end
    (`stats slabs` total_malloced) and tcload's error replies."""
    configs = hit_configs(ctx, ctx.hit_mb)
    runs: dict = {c[0]: {s: [] for s in streams} for c in configs}
    for rep in range(reps):
        k = rep % len(configs)
        for sname, phases in streams.items():
            for label, binary, args in configs[k:] + configs[:k]:
                t0 = time.monotonic()
                try:
                    with hitscen.Server(binary, args) as srv:
                        res = hitscen.lookaside(srv.sock, phases, HIT_DEPTH)
                        slabs = hitscen.stats(srv.sock, "slabs")
                    got = {"hr": [hitscen.hit_ratio(x) for x in res],
                           "malloced_mb": int(slabs.get(
                               "total_malloced", 0)) / MIB,
                           "errors": sum(x["errors"]["total"] for x in res),
                           "first_error": next((x["first_error"] for x in res
                                                if x["first_error"]), "")}
                    what = "%s, %.0f MB of pages, %d errors" % (
                        " ".join("%.4f" % h for h in got["hr"]),
                        got["malloced_mb"], got["errors"])
                except (RuntimeError, subprocess.CalledProcessError,
                        OSError, ValueError) as e:
                    got, what = None, "failed: %s" % e
                runs[label][sname].append(got)
                ctx.log("  round %d %-10s %-16s %s (%.0f s)" % (
                    rep + 1, sname, label, what, time.monotonic() - t0))
    return runs


def hit_sims(ctx: Ctx, streams: dict) -> tuple:
    """({stream: {policy: [per phase]}}, why not) from tcload --dry-run
    of the same phases and seed, at X MiB."""
    try:
        import libcachesim  # noqa: F401
    except ImportError as e:
        return {}, "libcachesim not importable (scripts/install-deps): %s" % e
    out = {}
    for sname, phases in streams.items():
        t0 = time.monotonic()
        trace = hitsim.parse(hitscen.dry_run(phases))
        out[sname] = hitsim.simulate(trace, ctx.hit_mb * MIB, hitsim.KNOWN)
        ctx.log("  simulated %-26s %d requests (%.0f s)" % (
            sname, len(trace["objs"]), time.monotonic() - t0))
    return out, None


def exp_hitratio(ctx: Ctx) -> list:
    sz = HITRATIO_SIZES[ctx.scale.name]
    x = ctx.hit_mb = ctx.hit_mb or sz["mb"]
    reps = ctx.reps_given or sz["reps"]
    r = base_result("hitratio", "Hit ratios against memcached and "
                    "libCacheSim's policies on the same streams",
                    "No figure in the paper (issue 22): a bounded cache, "
                    "a working set that moves, keys asked for once, keys "
                    "never stored, and CacheLib's production-derived "
                    "models; the same request stream against the servers "
                    "and libCacheSim's offline and online policies.", ctx)
    r["reps"] = reps
    if x != sz["mb"]:
        r["command"] += " --hit-mb %d" % x
    if reps != sz["reps"]:
        r["command"] += " --reps %d" % reps
    if not ctx.stock.exists():
        r["not_available"].append(na("stock memcached %s not installed"
                                     % ctx.stock))
        return [r]
    streams, rows = hit_streams(x, sz)
    ctx.log("hitratio: X = %d MB, %d round(s), tcload depth %d"
            % (x, reps, HIT_DEPTH))
    sims, why = hit_sims(ctx, streams)
    if why:
        r["not_available"].append(na("libCacheSim's figures: " + why))
    runs = hit_server_runs(ctx, streams, reps)
    configs = [c[0] for c in hit_configs(ctx, x)]
    policies = list(hitsim.POLICIES) if sims else []
    table, diffs, pages, series = [], [], [], {}
    errors: dict = {}      # (stream, first error): [(config, count)]
    for c in configs:
        for sname, v in runs[c].items():
            for g in v:
                if g and g["errors"]:
                    errors.setdefault((sname, g["first_error"]), []).append(
                        (c, g["errors"]))
    checks = {"dram": [], "tiered X": [], "tiered 2X": [], "dram/best": [],
              "tiered/best": [], "dram/slab": [], "tiered/slab": []}
    # each contender's ratio to the scenario's best online policy, by
    # scenario: does any one policy reach 0.98 of the best everywhere?
    against_best: dict = {}
    for label, sname, ph in rows:
        fig = {}
        for c in configs:
            fig[c] = median(g["hr"][ph] for g in runs[c][sname] if g)
        pages.append([label] + [fmt(median(
            g["malloced_mb"] for g in runs[c][sname] if g), "int")
            for c in configs])
        for p in policies:
            fig[p] = sims[sname][p][ph]["hit_ratio"]
        best = max(hitsim.ONLINE, key=lambda p: fig[p]) if sims else None
        for p in (hitsim.ONLINE_SLAB if sims else ()):
            fig[p] = sims[sname][p][ph]["hit_ratio"]
        best_slab = (max(hitsim.ONLINE_SLAB, key=lambda p: fig[p]) if sims
                     else None)
        table.append([label] + [fmt(fig[c], "hr") for c in configs]
                     + [fmt(fig[p], "hr") for p in policies])
        d = [fig["DRAM-only -m X"], fig["tiered D+N=X"],
             fig["tiered D+N=2X"]]
        ref = [fig["memcached -m X"], fig["memcached -m X"],
               fig["memcached -m 2X"]]
        dd = [None if a is None or b is None else a - b
              for a, b in zip(d, ref)]
        for key, v in zip(("dram", "tiered X", "tiered 2X"), dd):
            checks[key].append(v)
        row = [label] + [fmt(v, "diff") for v in dd]
        if best:
            rb = [ratio(fig["DRAM-only -m X"], fig[best]),
                  ratio(fig["tiered D+N=X"], fig[best])]
            checks["dram/best"].append(rb[0])
            checks["tiered/best"].append(rb[1])
            rs = [ratio(fig["DRAM-only -m X"], fig[best_slab]),
                  ratio(fig["tiered D+N=X"], fig[best_slab])]
            checks["dram/slab"].append(rs[0])
            checks["tiered/slab"].append(rs[1])
            for who in list(hitsim.ONLINE) + ["DRAM-only -m X",
                                              "tiered D+N=X"]:
                against_best.setdefault(who, []).append(
                    (ratio(fig[who], fig[best]), label))
            row += ["%s %s" % (best, fmt(fig[best], "hr")),
                    fmt(rb[0], "hr"), fmt(rb[1], "hr"),
                    "%s %s" % (best_slab, fmt(fig[best_slab], "hr")),
                    fmt(rs[0], "hr"), fmt(rs[1], "hr"),
                    fmt(ratio(fig["DRAM-only -m X"], fig["BeladySize"]),
                        "hr")]
        diffs.append(row)
        short = label.replace("CacheLib graph_cache_", "").replace(
            "CacheLib ", "").replace("Zipf 0.99, ", "zipf ").replace(
            "one-hit wonders + absent GETs", "one-hit")
        for name in ["memcached -m X", "DRAM-only -m X", "tiered D+N=X"] \
                + ([best, "BeladySize"] if best else []):
            key = "best online (libCacheSim)" if name == best else name
            series.setdefault(key, []).append([short, fig[name] or 0])
    r["tables"].append({
        "title": "hit ratio of the measured phase (X = %d MB; median of %d "
        "round(s) for the servers; libCacheSim at X MiB)" % (x, reps),
        "columns": ["scenario"] + configs + policies, "rows": table})
    r["tables"].append({
        "title": "against memcached (difference) and the best online "
        "libCacheSim policy at X (ratio)",
        "columns": ["scenario", "DRAM-only - memcached X",
                    "tiered D+N=X - memcached X",
                    "tiered D+N=2X - memcached 2X"]
        + (["best online at X", "DRAM-only / best", "tiered D+N=X / best",
            "best online, chunks charged", "DRAM-only / it",
            "tiered D+N=X / it", "DRAM-only / BeladySize"] if sims else []),
        "rows": diffs})
    def held(vals, floor) -> str:
        ok = [v for v in vals if v is not None]
        miss = sum(1 for v in ok if v < floor)
        return "%d of %d scenarios" % (len(ok) - miss, len(ok))

    if against_best:
        r["tables"].append({
            "title": "each online policy and server against the best online "
            "policy of every scenario: the worst ratio, where, and in how "
            "many scenarios it is at least 0.98",
            "columns": ["policy or server", "worst ratio", "worst scenario",
                        "scenarios at 0.98 or more"],
            "rows": [[who, fmt(min(v for v, _ in got if v is not None), "hr"),
                      min((v, lab) for v, lab in got if v is not None)[1],
                      held([v for v, _ in got], 0.98)]
                     for who, got in against_best.items()]})
    r["tables"].append({
        "title": "MB of slab pages the server held at the end of the stream "
        "(`stats slabs` total_malloced; D and N pages when tiered): a slab "
        "class gets its first page whatever -m says",
        "columns": ["scenario"] + configs, "rows": pages})
    for (sname, first), got in errors.items():
        who = [c for c in configs if c in {g[0] for g in got}]
        r["notes"].append(
            "%s: %s error replies a run from %s, the first `%s` (tcload "
            "checks every value it reads: none was wrong)" % (
                sname, " or ".join(str(n) for n in sorted({g[1]
                                                          for g in got})),
                "every server" if len(who) == len(configs)
                else ", ".join(who), first))

    r["notes"].append(
        "issue 22's done-when figures: DRAM-only >= memcached -m X - 0.005 "
        "in %s; tiered D+N=X >= memcached -m X - 0.005 in %s; tiered "
        "D+N=2X >= memcached -m 2X - 0.005 in %s; DRAM-only >= 0.98 of the "
        "best online policy in %s; tiered D+N=X in %s" % (
            held(checks["dram"], -0.005), held(checks["tiered X"], -0.005),
            held(checks["tiered 2X"], -0.005),
            held(checks["dram/best"], 0.98),
            held(checks["tiered/best"], 0.98)))
    r["notes"].append(
        "charged memcached's slab chunks, as the servers are (the *-slab "
        "policies: one queue over the whole cache, no page owned by a "
        "class), the best online policy is matched to 0.98 by DRAM-only in "
        "%s, by tiered D+N=X in %s" % (held(checks["dram/slab"], 0.98),
                                       held(checks["tiered/slab"], 0.98)))
    r["notes"] += [
        "streams (bench/hitscen.py, the scenarios scripts/hitratio runs): "
        "tcload -c 1 --seed 1 -d %d over a unix socket, lookaside (GET, "
        "SET on a miss). Zipf: Uni-%d-2K, three phases of %s requests: "
        "from empty, again (stationary), new keys (after the move, "
        "measured over the whole phase). One-hit: the first two with "
        "one-hit=0.25 (keys asked for once, stored on their miss) and "
        "absent=0.1 (GETs of keys never stored, outside the ratio). "
        "CacheLib models (bench/cachelib, tcload --model-mb %d): two "
        "phases of %s requests, the second measured. Phases: %s" % (
            HIT_DEPTH, hitscen.zipf_keys(x), fmt(n_of(streams["zipf"][0]),
                                                 "int"), x,
            fmt(n_of(streams[hitscen.MODELS[0]][0]), "int"),
            "; ".join("%s: %s" % (k, " / ".join(v))
                      for k, v in streams.items())),
        "depth %d: a miss's SET reaches the server up to %d requests after "
        "its GET, where the simulators insert at once (memcached's hit "
        "ratio on graph_cache_leader_fbobj moved by 0.0002 between depth 1 "
        "and 4)" % (HIT_DEPTH, HIT_DEPTH - 1),
        "libCacheSim (PyPI libcachesim, bench/hitsim.py) on `tcload "
        "--dry-run` of the same phases and seed; an object costs key + "
        "value + 59 bytes (memcached's item header, CAS, NUL and CRLF), "
        "slab rounding not charged; the cache is X MiB of that. LRU-slab "
        "(and ARC-slab, S3FIFO-slab, WTinyLFU-slab, Sieve-slab, in the "
        "second table) charge memcached's slab chunk instead. Default "
        "parameters; "
        "BeladySize samples 128 objects an eviction and admits no object "
        "that is not requested again"]
    r["bound"] = ("BeladySize (offline, size-aware) above the online "
                  "policies; issue 22 asks DRAM-only and tiered for at "
                  "least memcached's hit ratio (within 0.005) and at least "
                  "0.98 of the best online libCacheSim policy")
    r["configs"] = {label: {"server": " ".join([str(b)] + a),
                            "listen": "-s SOCKET", "rounds": runs[label]}
                    for label, b, a in hit_configs(ctx, x)}
    r["notes"].append("commands, e.g. the Zipf stream: `%s` against each "
                      "server; `%s | bench/hitsim.py - --mb %d` for "
                      "libCacheSim (the experiment calls the same code "
                      "in-process)" % (
                          " ".join(hitscen.lookaside_argv(
                              "SOCKET", streams["zipf"], HIT_DEPTH,
                              "OUT.json")),
                          " ".join(hitscen.dry_run_argv(streams["zipf"])),
                          x))
    r["simulated"] = sims
    r["plots"].append({"file": "hitratio.png", "kind": "bar",
                       "title": "hit ratio, X = %d MB" % x,
                       "ylabel": "hit ratio", "series": series,
                       "ymax": 1.3, "legend_cols": 3})
    return [r]


def n_of(phase: str) -> int:
    return int(re.search(r"requests=(\d+)", phase).group(1))


# ------------------------------------------------------------------ output

def plot(spec: dict, path: Path) -> Optional[str]:
    """Draw a bar or line chart; returns an error text or None."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return "matplotlib not importable: %s" % e
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=80)
    series = spec["series"]
    if spec["kind"] == "bar":
        cats: list = []
        for pts in series.values():
            for x, _ in pts:
                if x not in cats:
                    cats.append(x)
        width = 0.8 / max(1, len(series))
        for i, (name, pts) in enumerate(series.items()):
            d = dict((x, y) for x, y in pts)
            xs = [j + i * width for j in range(len(cats))]
            ax.bar(xs, [d.get(c, 0) for c in cats], width, label=name)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(cats))])
        ax.set_xticklabels(cats, fontsize=7, rotation=10 if len(cats) > 2 else 0)
    else:
        for name, pts in series.items():
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    label=name)
        if spec.get("logx"):
            ax.set_xscale("log", base=2)
        ax.set_xlabel(spec.get("xlabel", ""))
    if spec.get("hline"):
        ax.axhline(spec["hline"], color="grey", linestyle="--", linewidth=1)
    ax.set_ylabel(spec.get("ylabel", ""))
    ax.set_title(spec.get("title", ""), fontsize=10)
    if spec.get("ymax"):        # room above the bars for the legend
        ax.set_ylim(0, spec["ymax"])
    ax.legend(fontsize=7, ncol=spec.get("legend_cols", 1),
              loc="upper center" if spec.get("legend_cols") else "best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return None


def md_escape(v) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


# Top-level directories of the repository that command lines name: an
# absolute path that runs into one of them is the repository's checkout on
# the machine that ran the suite.
REPO_DIRS = r"(?:build[\w-]*|bench|scripts|out|\.devrun)/"


def shown(text: str) -> str:
    """Text for doc/results.md without what only the machine that ran the
    suite had: paths into the repository become relative to it (this
    checkout's, and, in sections kept from an earlier run, any absolute
    path that runs into one of its directories), the random part of the
    suite's temporary directories (tc-exp-*, tc-fog-*) becomes XXXXXX, and
    tcload's server port becomes PORT, as the server lines say."""
    text = text.replace(str(ROOT) + "/", "")
    text = re.sub(r"(?<![^\s`=(])/(?:[\w.-]+/)+?(?=" + REPO_DIRS + ")", "",
                  text)
    text = re.sub(r"(/tc-(?:exp|fog)-)\w+/", r"\1XXXXXX/", text)
    return re.sub(r"(\btcload -s 127\.0\.0\.1:)\d+", r"\1PORT", text)


def render_md(results: list, meta: dict) -> str:
    out = ["# Experiment results", "",
           "Generated by `bench/experiments.py` (`scripts/experiments`); "
           "regenerated on every run, do not edit by hand. Method: "
           "bench/README.md (interleaved configurations, repeated, "
           "medians). Deterministic figures (NVM lines, D-zone shares, "
           "callgrind Ir/request) are the primary evidence; throughput on a "
           "shared 2-core machine is noisy.", ""]
    out += ["| | |", "|---|---|"]
    m = meta["machine"]
    out += ["| machine | nproc %s, %s, kernel %s |" % (m["nproc"], m["cpu"],
                                                        m["kernel"]),
            "| last run | %s, `%s`, %s suite, %.0f s |" % (
                meta["date"], meta["command"], meta["suite"], meta["elapsed_s"]),
            "| git commit | %s |" % meta["commit"], ""]
    for r in results:
        if isinstance(r, list):     # a section kept as it stood
            out += r + ([""] if r and r[-1].strip() else [])
        else:
            out += render_section(r)
    return "\n".join(out).rstrip() + "\n"


def section_key(r: dict) -> str:
    """A section's name in doc/results.md: the experiment, and the tag of
    a run made elsewhere (--tag), so both can stand side by side."""
    return "%s (%s)" % (r["name"], r["tag"]) if r.get("tag") else r["name"]


def result_file(r: dict) -> str:
    return "%s.%s.json" % (r["name"], r["tag"]) if r.get("tag") \
        else "%s.json" % r["name"]


def render_section(r: dict) -> list:
    m = r.get("machine") or {}
    out = ["## %s: %s" % (section_key(r), r["title"]), "",
           "**Paper.** " + r["paper"], "",
           "**Command.** `%s` (%s suite, %d repetitions, run %s, commit "
           "%s, %.0f s, nproc %s)" % (r["command"], r["suite"], r["reps"],
                                      r.get("date", "?"), r.get("commit", "?"),
                                      r.get("elapsed_s", 0),
                                      m.get("nproc", "?")), ""]
    for t in r["tables"]:
        if t.get("title"):
            out += ["*%s*" % t["title"], ""]
        out.append("| " + " | ".join(t["columns"]) + " |")
        out.append("|" + "---|" * len(t["columns"]))
        for row in t["rows"]:
            out.append("| " + " | ".join(md_escape(c) for c in row) + " |")
        out.append("")
    if r.get("bound"):
        out += ["**Bound.** " + r["bound"], ""]
    for p in r["plots"]:
        if p.get("committed"):
            out += ["![%s](results/%s)" % (r["name"], p["file"]), ""]
    if r["not_available"]:
        out += ["**Not available.**", ""]
        out += ["- " + md_escape(x) for x in r["not_available"]]
        out.append("")
    if r["notes"]:
        out += ["**Notes.**", ""]
        out += ["- " + md_escape(x) for x in r["notes"]]
        out.append("")
    servers = [(k, v["server"]) for k, v in r["configs"].items()
               if isinstance(v, dict) and "server" in v]
    if servers:
        out += ["<details><summary>server command lines</summary>", ""]
        out += ["- %s: `%s %s`" % (md_escape(k), s, r["configs"][k].get(
            "listen", "-p PORT -U 0 -l 127.0.0.1")) for k, s in servers]
        first = next((run["tcload"] for v in r["configs"].values()
                      if isinstance(v, dict)
                      for run in v.get("runs", []) if "tcload" in run), None)
        if first:
            out += ["", "load (first run): `%s`" % first]
        out += ["", "</details>", ""]
    return out


def write_outputs(results: list, ctx: Ctx, meta: dict, to_doc: bool) -> None:
    """JSON and plots into the out dir; the plots also into doc/results/
    unless --no-doc (which leaves doc/ as it is)."""
    DOC_PLOTS.mkdir(parents=True, exist_ok=True)
    for r in results:
        r.update(date=meta["date"], commit=meta["commit"],
                 machine=meta["machine"])
        if ctx.tag:
            r.update(tag=ctx.tag, command=ctx.command)
        for p in r["plots"]:
            if ctx.tag:
                p["file"] = p["file"].replace(".png", ".%s.png" % ctx.tag)
            err = plot(p, ctx.out / p["file"])
            if err:
                r["not_available"].append(na("plot %s: %s" % (p["file"], err)))
                continue
            if not to_doc:
                continue
            shutil.copyfile(ctx.out / p["file"], DOC_PLOTS / p["file"])
            p["committed"] = True
        (ctx.out / result_file(r)).write_text(
            json.dumps(r, indent=1, default=str) + "\n")


def doc_sections(text: str) -> dict:
    """The sections of doc/results.md as they stand, by section_key: a
    section whose JSON is not in the out dir (run on another machine or by
    an earlier session) is kept as it is rather than dropped."""
    sections, key = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            key = line[3:].split(":", 1)[0]
            sections[key] = []
        if key is not None:
            sections[key].append(line)
    return sections


def regenerate_doc(ctx: Ctx, meta: dict) -> None:
    kept = doc_sections(DOC.read_text()) if DOC.exists() else {}
    fresh = {}
    for f in sorted(ctx.out.glob("*.json")):
        try:
            r = json.loads(f.read_text())
        except ValueError:
            continue
        if isinstance(r, dict) and r.get("name") in EXPERIMENTS:
            fresh[section_key(r)] = r
    results = []
    for name in EXPERIMENTS:
        keys = sorted(k for k in set(fresh) | set(kept)
                      if k.split(" ", 1)[0] == name)
        for k in keys:
            results.append(fresh[k] if k in fresh else kept[k])
    DOC.write_text(shown(render_md(results, meta)))


# -------------------------------------------------------------------- main

RUNNERS = (("fig4", exp_policies), ("fig6", exp_fig6),
           ("placement", exp_placement), ("placelong", exp_placelong),
           ("tputlong", exp_tputlong),
           ("fig7", exp_fig7),
           ("fig9", exp_fig9), ("fig10", exp_fig10),
           ("calcscale", exp_calcscale), ("fig11", exp_fig11),
           ("ycsb", exp_ycsb),
           ("scaling", exp_scaling), ("fogcached", exp_fogcached),
           ("choices", exp_choices), ("hitratio", exp_hitratio))


def on_sigterm(signum, frame):
    raise KeyboardInterrupt("signal %d" % signum)


def main(argv: list) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true",
                    help="the full suite (5 repetitions, larger datasets)")
    ap.add_argument("--only", default="",
                    help="comma-separated: " + ",".join(EXPERIMENTS))
    ap.add_argument("--out", default=str(ROOT / "out" / "experiments"))
    ap.add_argument("--server", default=str(DEFAULT_SERVER))
    ap.add_argument("--stock", default=str(DEFAULT_STOCK))
    ap.add_argument("--reps", type=int, default=0,
                    help="override the repetitions (development)")
    ap.add_argument("--requests", type=int, default=0,
                    help="override requests per run (development)")
    ap.add_argument("--hit-mb", type=int, default=0,
                    help="hitratio: the cache X in MB (default 64, --full "
                    "128; 32 takes about a quarter of the time)")
    ap.add_argument("--tag", default="",
                    help="name the results as a run made elsewhere (e.g. "
                    "16cpu): their own section beside the untagged one")
    ap.add_argument("--regenerate", action="store_true",
                    help="run nothing: rewrite doc/results.md from OUT's JSON "
                    "(e.g. results fetched from another machine)")
    ap.add_argument("--no-doc", action="store_true",
                    help="do not rewrite doc/results.md or its plots")
    a = ap.parse_args(argv)
    only = [x.strip() for x in a.only.split(",") if x.strip()]
    bad = [x for x in only if x not in EXPERIMENTS]
    if bad:
        ap.error("unknown experiment(s): %s" % ", ".join(bad))
    scale = FULL if a.full else SMALL
    if a.reps or a.requests:
        scale = dataclasses.replace(scale, reps=a.reps or scale.reps,
                                    requests=a.requests or scale.requests)
    for tool in () if a.regenerate else (TCLOAD, Path(a.server)):
        if not os.access(tool, os.X_OK):
            print("experiments: %s is missing (make -C bench; scripts/build "
                  "build)" % tool, file=sys.stderr)
            return 2
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, on_sigterm)
    t0 = time.monotonic()
    command = "scripts/experiments " + " ".join(argv)
    with tempfile.TemporaryDirectory(prefix="tc-exp-") as work:
        os.chmod(work, 0o1777)
        ctx = Ctx(scale=scale, out=out, work=Path(work),
                  server=Path(a.server).resolve(), stock=Path(a.stock),
                  command=command.strip(), tag=a.tag, hit_mb=a.hit_mb,
                  reps_given=a.reps,
                  log=lambda s: print(s, flush=True))
        ctx.tier_reason = None if a.regenerate else tier_stats_reason(ctx)
        ctx.log("suite %s, %d repetitions, server %s; stats tier: %s"
                % (scale.name, scale.reps, ctx.server,
                   ctx.tier_reason or "available"))
        meta = {"machine": machine(), "commit": git_commit(),
                "date": datetime.datetime.now().astimezone().isoformat(
                    timespec="seconds"),
                "command": ctx.command, "suite": scale.name}
        try:
            for name, fn in RUNNERS if not a.regenerate else ():
                wanted = {name, "fig5"} if name == "fig4" else {name}
                if only and not wanted & set(only):
                    continue
                t1 = time.monotonic()
                results = fn(ctx)
                for r in results:
                    r["elapsed_s"] = time.monotonic() - t1
                write_outputs(results, ctx, meta, not a.no_doc)
                ctx.log("%s done in %.0f s" % (name, time.monotonic() - t1))
        except KeyboardInterrupt:
            print("experiments: interrupted; servers stopped", file=sys.stderr)
            return 130
        finally:
            meta["elapsed_s"] = time.monotonic() - t0
            if not a.no_doc:
                regenerate_doc(ctx, meta)
    print("suite took %.0f s; results in %s%s" % (
        time.monotonic() - t0, out,
        "" if a.no_doc else ", " + str(DOC.relative_to(ROOT))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
