"""hitscen.py - the hit-ratio scenarios that scripts/hitratio and
`scripts/experiments --only hitratio` share (doc/tiering.md "Aging and
probation"): servers started fresh on a unix socket, bench/tcload's
lookaside streams over one connection with a fixed seed and the same
streams printed by `tcload --dry-run` for a simulator (bench/hitsim.py),
the stream definitions (Zipf with a working-set move, one-hit wonders
with absent GETs, CacheLib's models), and the clients of the scenarios
tcload does not generate (keys read long ago then new keys, large-item
rounds).
"""
import json
import os
import random
import socket
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TCLOAD = ROOT / "bench" / "tcload"
CACHELIB = ROOT / "bench" / "cachelib"
MODELS = ("kvcache_reg", "graph_cache_leader_fbobj",
          "graph_cache_leader_assocs", "graph_cache_follower_fbobj")
# the stream: one connection and seed 1, whoever consumes it
STREAM_ARGS = ["-c", "1", "--seed", "1"]


class Server:
    """A server on a unix socket of its own; a context manager."""

    def __init__(self, binary: str, args: list):
        self.dir = tempfile.mkdtemp(prefix="tc-hit-")
        os.chmod(self.dir, 0o1777)    # a server that drops to nobody
        self.sock = os.path.join(self.dir, "mc.sock")
        self.argv = [str(binary)] + [str(a) for a in args] + ["-s", self.sock]
        if os.geteuid() == 0:
            self.argv += ["-u", "nobody"]
        self.proc = None
        self.log = tempfile.TemporaryFile()

    def __enter__(self):
        try:
            self.proc = subprocess.Popen(self.argv, stdout=self.log,
                                         stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        except OSError as e:
            self.stop()
            raise RuntimeError("%s did not start: %s" % (self.argv[0], e))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(self.sock)
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        self.log.seek(0)
        raise RuntimeError("%s did not start: %s" % (
            " ".join(self.argv), self.log.read().decode(errors="replace")))

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        if os.path.isdir(self.dir):
            os.rmdir(self.dir)

    def __exit__(self, *exc):
        self.stop()


class Client:
    """A blocking text-protocol client that pipelines a batch at a time."""

    def __init__(self, sock_path: str):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(sock_path)
        self.rfile = self.sock.makefile("rb")

    def set_many(self, items):
        """items: (key, size) pairs; returns how many were STORED."""
        out = bytearray()
        for key, size in items:
            out += b"set %s 0 0 %d\r\n" % (key, size)
            out += b"v" * size + b"\r\n"
        self.sock.sendall(out)
        stored = 0
        for _ in items:
            stored += self.rfile.readline() == b"STORED\r\n"
        return stored

    def get_many(self, keys):
        """Returns how many of keys hit (one get per key, pipelined)."""
        self.sock.sendall(b"".join(b"get %s\r\n" % k for k in keys))
        hits = 0
        for _ in keys:
            while True:
                line = self.rfile.readline()
                if not line:
                    raise RuntimeError("connection closed")
                if line.startswith(b"VALUE "):
                    self.rfile.read(int(line.split()[3]) + 2)
                    hits += 1
                elif line == b"END\r\n":
                    break
                else:
                    raise RuntimeError("unexpected reply %r" % line)
        return hits

    def command(self, cmd: bytes) -> bytes:
        self.sock.sendall(cmd)
        return self.rfile.readline()

    def close(self):
        self.sock.close()


# ------------------------------------------------------------- streams

def zipf_keys(mb: int) -> int:
    """Keys of the Zipf streams: about 2.5 times what -m mb holds."""
    # odd: tcload's scrambled zipfian takes FNV-1a(rank) mod keys, whose
    # low bits repeat for small ranks, so a key count with a large power of
    # two folds hot ranks together (149,760 keys gave memcached 0.98 where
    # 150,000 gave 0.92)
    return 2340 * mb + 1


def zipf_phase(mb: int, requests: int, extra: str = "") -> str:
    """A lookaside Zipf 0.99 phase (its tcload --phase spec without ns=)."""
    return "dataset=Uni-%d-2K,requests=%d,get=1,set-on-miss=1%s" % (
        zipf_keys(mb), requests, extra)


def zipf_stream(mb: int, requests: int) -> list:
    """From an empty cache, the same keys again, new keys (ns=b: the
    working set moved)."""
    base = zipf_phase(mb, requests)
    return [base + ",ns=a", base + ",ns=a", base + ",ns=b"]


def onehit_stream(mb: int, requests: int) -> list:
    """zipf's first two phases with a quarter of the requests for keys
    asked for once and a tenth GETs of keys never stored."""
    base = zipf_phase(mb, requests, ",one-hit=0.25,absent=0.1")
    return [base + ",ns=a", base + ",ns=a"]


def model_keys(name: str, mb: int) -> int:
    """The keys of a CacheLib model scaled to -m mb, as tcload says."""
    r = subprocess.run([str(TCLOAD), "--dump-keys", "1", "--model",
                        str(CACHELIB / name), "--model-mb", str(mb)],
                       check=True, capture_output=True, text=True)
    return int(r.stdout.split(" keys=", 1)[1].split()[0])


def model_stream(name: str, mb: int, requests: int) -> list:
    """A CacheLib model scaled to -m mb: a phase to fill, one measured."""
    base = "model=%s,model-mb=%d,requests=%d,ns=a" % (CACHELIB / name, mb,
                                                      requests)
    return [base, base]


def lookaside_argv(sock_path: str, phases: list, depth: int,
                   json_path: str) -> list:
    cmd = ([str(TCLOAD), "-S", sock_path, "-d", str(depth), "-q", "--json",
            json_path, "--max-duration", "3600"] + STREAM_ARGS)
    for ph in phases:
        cmd += ["--phase", ph]
    return cmd


def lookaside(sock_path: str, phases: list, depth: int = 1) -> list:
    """Runs tcload's phases against a server; each phase's run stats."""
    with tempfile.NamedTemporaryFile(suffix=".json") as js:
        subprocess.run(lookaside_argv(sock_path, phases, depth, js.name),
                       check=True)
        with open(js.name) as f:
            return [p["run"] for p in json.load(f)["phases"]]


def dry_run_argv(phases: list) -> list:
    cmd = [str(TCLOAD), "--dry-run"] + STREAM_ARGS
    for ph in phases:
        cmd += ["--phase", ph]
    return cmd


def dry_run(phases: list) -> list:
    """The same phases' stream as tcload --dry-run prints it: lines."""
    r = subprocess.run(dry_run_argv(phases), check=True, capture_output=True,
                       text=True)
    return r.stdout.splitlines()


def stats(sock_path: str, sub: str = "") -> dict:
    """A server's `stats SUB` as {name: text}."""
    c = Client(sock_path)
    c.sock.sendall(("stats %s\r\n" % sub).strip().encode() + b"\r\n")
    out = {}
    while True:
        line = c.rfile.readline()
        if not line or line in (b"END\r\n", b"ERROR\r\n"):
            break
        p = line.decode(errors="replace").split()
        if len(p) == 3 and p[0] == "STAT":
            out[p[1]] = p[2]
    c.close()
    return out


def hit_ratio(run: dict) -> float:
    """Hits over GETs of the stream's own keys (absent GETs are apart)."""
    n = run["hits"] + run["misses"]
    return run["hits"] / n if n else 0.0


# ------------------------------------------------- scenarios of clients

def run_reread(sock_path: str, mb: int) -> dict:
    """60,000 mb/64 keys of 1 KB read three times, then 30,000 mb/64 new
    keys stored in batches of 100, each batch read right after."""
    old = 60000 * mb // 64
    new = 30000 * mb // 64
    c = Client(sock_path)
    batch = 500
    for i in range(0, old, batch):
        c.set_many([(b"old%d" % k, 1024)
                    for k in range(i, min(i + batch, old))])
    for _ in range(3):
        for i in range(0, old, batch):
            c.get_many([b"old%d" % k for k in range(i, min(i + batch, old))])
    hits = 0
    for i in range(0, new, 100):
        keys = [b"new%d" % k for k in range(i, min(i + 100, new))]
        c.set_many([(k, 1024) for k in keys])
        hits += c.get_many(keys)
    c.close()
    return {"new_read_hits": hits / new}


def run_large(sock_path: str, flush: bool = False) -> dict:
    """60 rounds of 12 new keys of 100 B to 1 MB, each round read back
    after it was stored (flush_all before each round with flush)."""
    rnd = random.Random(7)
    c = Client(sock_path)
    lost = 0
    lost_sizes = []
    for r in range(60):
        if flush and c.command(b"flush_all\r\n") != b"OK\r\n":
            raise RuntimeError("flush_all failed")
        items = []
        for i in range(12):
            size = (rnd.randint(100, 1000000) if rnd.random() < 0.5
                    else int(10 ** rnd.uniform(2, 6)))
            items.append((b"r%dk%d" % (r, i), size))
        c.set_many(items)
        for key, size in items:
            if c.get_many([key]) == 0:
                lost += 1
                lost_sizes.append(size)
    c.close()
    return {"lost": lost, "lost_min_size": min(lost_sizes, default=0)}
