"""Read memory: the peak RSS of the server (`mpsbench serve`, the process users run) over each read — every GET of
the /api/v1 routes (api/query.py, api/sweeps.py, api/health.py, api/openapi.py) and every page
(pages/navigation.py PAGES, drawn in headless Chromium) — on a freshly started server and on one that has served
a long loop of mixed reads, and the RSS it returns to when idle.

The store: benchmarks/dashboard.py's (default 10 M results with the metric mix: 30 % timing and throughput, 30 %
correctness, 40 % memory records; --timing-only for the older op_time/bandwidth store), generated if absent.

Fresh: for each read a new server is started (`--fresh one`: one new server for every read in turn, what --tiny
does), its RSS read once it answers and has settled (`start_mb`), its peak reset (/proc/PID/clear_refs, Linux),
the read made, then its peak (VmHWM: `peak_mb`) and, after `--settle` seconds, its RSS (`after_mb`).
Long-running: one server, `--rounds` rounds (or rounds until `--minutes` have passed) of every read in a shuffled
order, each round asking other questions (the next pair of builds for Compare, Regressions, Memory, Correctness,
Overview and Claims; another case and metric for Trends and Matrix), so its caches fill as a shared server's do;
each read's worst peak and the idle RSS after each round. At the end the server idles `--idle` seconds with no
browser open: `idle_end_mb`, against a fresh server's RSS after start-up (`fresh_idle_mb`, the median over the
fresh servers); goal: within 1.5× of it, and every read under 1 GB (GOAL_MB) on both servers.

A read answered 503 (a store fault, a memory cap) is reported as such; a 500 fails the benchmark. A server whose
RSS passes --cap-mb (default 8,000) is killed (a guard for the shared box) and that read reported over the cap.
--server-tree DIR runs the server from another checkout (its code, this script): before/after figures on one
store. --tiny: a 20,000-result store, one fresh server for every GET and three pages (TINY_PAGES), one round of
the GETs (what the tests run: a minute or two).
Usage: python -m benchmarks.read_memory [--db PATH] [--rows N] [--timing-only] [--rounds K | --minutes M]
                                         [--fresh each|one] [--no-browser] [--server-tree DIR] [--tiny] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
GOAL_MB = 1024.0
FIRST_VERSION = 10  # dashboard.py's builds: 2.10.0, 2.11.0, …
PAGE_LIMIT_S = 900.0
TINY_PAGES = ("page_overview", "page_compare", "page_memory")
FAILED = "This page failed on the server"  # pages.parts.guard.page_failed: an exception the page did not expect
# Streamlit shows its running indicator while a page's script runs: quiet for a second after a heading is drawn
QUIET = """() => {
  const now = performance.now();
  if (!document.querySelector("h1") || document.querySelector("[data-testid='stStatusWidget']")) {
    window.__quietSince = now; return false; }
  return now - (window.__quietSince ?? now) > 1000;
}"""


@dataclass(frozen=True)
class Read:
    label: str
    kind: str  # "api" or "page"
    path: str  # /api/v1/… or the page's url path
    params: dict = field(default_factory=dict)

    def url(self, base: str) -> str:
        query = urlencode(self.params)
        return f"{base}{self.path}" + (f"?{query}" if query else "")


def reads(round_no: int, builds: int, pages: bool = True) -> list[Read]:
    """Every GET and page, asking round `round_no`'s questions (round 0: the first two builds, defaults)."""
    k = round_no % max(1, builds - 1)
    b, c = f"2.{FIRST_VERSION + k}.0", f"2.{FIRST_VERSION + k + 1}.0"
    pair = {"baseline": f"torch={b}", "candidate": f"torch={c}"}
    labels = {"baseline": f"{b} (stable)", "candidate": f"{c} (stable)"}
    later = round_no > 0  # round 0 asks with each page's defaults (a first visit), later rounds move on
    metric = ["op_time", "psnr_vs_cpu", "memory_driver_peak", "first_call_time"][round_no % 4]
    trend = {"metric": metric, "case_key": json.dumps({"n": round_no % 5}, separators=(",", ":"))} if later else {}
    matrix = {"metric": ["op_time", "memory_driver_peak", "max_abs_error"][round_no % 3]} if later else {}
    chosen = labels if later else {}
    api = [
        Read("health", "api", "/api/v1/health"),
        Read("openapi", "api", "/api/v1/openapi.json"),
        Read("runs", "api", "/api/v1/runs"),
        Read("sweeps", "api", "/api/v1/sweeps"),
        # idle-wait: an API read named "sweep", not a collector run
        Read("sweep", "api", "/api/v1/sweeps/0123456789abcdef"),  # no sweep stored: its 404
        Read("overview", "api", "/api/v1/overview", pair if later else {}),
        Read("trends", "api", "/api/v1/trends", trend),
        Read("matrix", "api", "/api/v1/matrix", matrix),
        Read("memory", "api", "/api/v1/memory", chosen),
        Read("correctness", "api", "/api/v1/correctness", chosen),
        Read("correctness_max_abs", "api", "/api/v1/correctness", {**chosen, "metric": "max_abs_error"}),
        Read("noise", "api", "/api/v1/noise"),
        Read("claims", "api", "/api/v1/claims", pair if later else {}),
        Read("compare", "api", "/api/v1/compare", pair),
        Read("compare_chip", "api", "/api/v1/compare", {**pair, "scope": "chip"}),
        Read("compare_pool", "api", "/api/v1/compare", {**pair, "pool": "1"}),  # the pivot of every sample
        Read("regressions", "api", "/api/v1/regressions", pair),
    ]
    if not pages:
        return api
    from pages.navigation import PAGES

    asks = {
        "compare": pair,
        "regressions": pair,
        "overview": pair if later else {},
        "memory": chosen,
        "correctness": chosen,
        "trends": trend,
        "matrix": matrix,
    }
    return api + [Read(f"page_{path}", "page", f"/{path}", asks.get(path, {})) for _, _, path in PAGES]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status_mb(pid: int, name: str) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(name + ":")) / 1024.0


class Server:
    """`mpsbench serve` on the store (from `tree`), its RSS watched: past cap_mb it is killed."""

    def __init__(self, db: Path, tree: Path, cap_mb: float) -> None:
        self.port, self.cap_mb, self.over_cap = _free_port(), cap_mb, False
        self.base = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "MPSBENCH_DB": str(db), "PYTHONPATH": str(tree)}
        env.pop("MPSBENCH_STORE", None)
        cmd = [sys.executable, "-m", "mpsbench", "serve", "--address", "127.0.0.1", "--port", str(self.port)]
        self.proc = subprocess.Popen(
            cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        self._stop = threading.Event()
        self._watch = threading.Thread(target=self._guard, daemon=True)
        self._watch.start()

    def _guard(self) -> None:
        while not self._stop.wait(0.05):
            try:
                if self.rss() > self.cap_mb:
                    self.over_cap = True
                    self.stop()
                    return
            except (OSError, StopIteration):
                return

    def rss(self) -> float:
        return _status_mb(self.proc.pid, "VmRSS")

    def peak(self) -> float:
        return _status_mb(self.proc.pid, "VmHWM")

    def reset_peak(self) -> None:
        with open(f"/proc/{self.proc.pid}/clear_refs", "w") as f:  # Linux: VmHWM back to the current RSS
            f.write("5")

    def wait_ready(self, settle: float, limit_s: float = 300.0) -> None:
        import httpx

        start = time.perf_counter()
        while time.perf_counter() - start < limit_s:
            if self.proc.poll() is not None:
                raise SystemExit(f"ERROR: mpsbench serve exited with {self.proc.returncode}")
            try:
                if httpx.get(f"{self.base}/api/v1/health", timeout=5.0).status_code == 200:
                    time.sleep(settle)  # the start-up's preload (store, chart library) done
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise SystemExit(f"ERROR: the server did not answer within {limit_s:.0f} s")

    def stop(self) -> None:
        self._stop.set()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # the process group started above
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def _get(server: Server, read: Read) -> tuple[int, int]:
    import httpx

    reply = httpx.get(read.url(server.base), timeout=PAGE_LIMIT_S)
    return reply.status_code, len(reply.content)


def _page(server: Server, read: Read, browser) -> tuple[int, int]:
    from playwright.sync_api import TimeoutError as Timeout

    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    try:
        page.goto(read.url(server.base), timeout=PAGE_LIMIT_S * 1000)
        page.evaluate("window.__quietSince = performance.now()")
        start = time.perf_counter()
        while True:  # in short waits: a server killed at the cap ends the read at once
            try:
                page.wait_for_function(QUIET, timeout=5000, polling=200)
                break
            except Timeout:
                if server.over_cap or server.proc.poll() is not None:
                    raise RuntimeError("the server stopped") from None
                if time.perf_counter() - start > PAGE_LIMIT_S:
                    raise
        failed = page.locator("[data-testid='stException']").count() or page.get_by_text(FAILED).count()
        return (500 if failed else 200), len(page.content())
    finally:
        page.close()


def measure(server: Server, read: Read, browser, settle: float) -> dict:
    """One read on `server`: its peak RSS over the read and its RSS `settle` seconds after."""
    start = server.rss()
    server.reset_peak()
    t0 = time.perf_counter()
    try:
        status, size = _page(server, read, browser) if read.kind == "page" else _get(server, read)
    except Exception as exc:  # noqa: BLE001 - the server killed at the cap, or a page that never settled
        if not server.over_cap:
            raise SystemExit(f"ERROR: {read.label}: {type(exc).__name__}: {str(exc)[:300]}") from None
        status, size = 0, 0
    took = time.perf_counter() - t0
    if server.over_cap:
        return {"status": "over cap", "start_mb": start, "peak_mb": server.cap_mb, "after_mb": None, "s": took}
    # the peak counts the start: Linux syncs a thread's RSS counter lazily, so VmHWM can read ~0.1 MB under an
    # earlier VmRSS (and a server giving memory back between the two reads lowers the reset's mark)
    peak = max(server.peak(), start)
    time.sleep(settle)
    return {"status": status, "start_mb": start, "peak_mb": peak, "after_mb": server.rss(), "s": took, "bytes": size}


def _rounded(d: dict) -> dict:
    return {k: round(v, 1) if isinstance(v, float) else v for k, v in d.items()}


def fresh_phase(db, tree, todo: list[Read], browser, args, say) -> dict:
    out, server = {}, None
    try:
        for read in todo:
            if server is None or args.fresh == "each":
                if server is not None:
                    server.stop()
                server = Server(db, tree, args.cap_mb)
                server.wait_ready(args.start_settle)
            got = measure(server, read, browser, args.settle)
            out[read.label] = _rounded(got)
            say(
                f"fresh  {read.label:24s} {got['status']}  peak {got['peak_mb']:7.0f} MB  "
                f"(start {got['start_mb']:.0f}, after {got['after_mb'] or 0:.0f})  {got['s']:.1f} s"
            )
            if server.over_cap:
                server = None
    finally:
        if server is not None:
            server.stop()
    return out


def long_phase(db, tree, builds: int, browser, args, say) -> dict:
    server = Server(db, tree, args.cap_mb)
    worst: dict[str, dict] = {}
    idle_by_round, started = [], time.perf_counter()
    try:
        server.wait_ready(args.start_settle)
        begin = server.rss()
        shuffle, round_no = random.Random(46), 0
        while True:
            todo = [r for r in reads(round_no, builds, pages=args.long_pages) if _wanted(r, args)]
            shuffle.shuffle(todo)
            for read in todo:
                got = measure(server, read, browser, args.settle)
                if server.over_cap:
                    worst[read.label] = _rounded({**got, "round": round_no})
                    raise _OverCap(read.label)
                mine = worst.get(read.label)
                if mine is None or got["peak_mb"] > mine["peak_mb"]:
                    worst[read.label] = _rounded({**got, "round": round_no, "params": read.params})
            round_no += 1
            idle_by_round.append(round(server.rss(), 1))
            minutes = (time.perf_counter() - started) / 60
            say(
                f"long   round {round_no}: {minutes:.1f} min, RSS {idle_by_round[-1]:.0f} MB, worst peak "
                f"{max(w['peak_mb'] for w in worst.values()):.0f} MB"
            )
            if (args.minutes and minutes >= args.minutes) or (not args.minutes and round_no >= args.rounds):
                break
        time.sleep(args.idle)  # no browser page open: the sessions' memory returned
        idle_end = server.rss()
    except _OverCap as over:
        return {"over_cap": str(over), "reads": worst, "rounds": round_no, "idle_by_round_mb": idle_by_round}
    finally:
        server.stop()
    return {
        "rounds": round_no,
        "minutes": round((time.perf_counter() - started) / 60, 1),
        "start_mb": round(begin, 1),
        "reads": worst,
        "idle_by_round_mb": idle_by_round,
        "idle_end_mb": round(idle_end, 1),
    }


class _OverCap(Exception):
    pass


def _args() -> argparse.Namespace:
    """The command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", type=Path, help="the store to read (generated by benchmarks/dashboard.py if absent)")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--timing-only", action="store_true", help="generate the older op_time/bandwidth store")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of mixed reads on the long-running server")
    ap.add_argument("--minutes", type=float, default=0.0, help="instead of --rounds: rounds until this time passed")
    ap.add_argument("--fresh", choices=("each", "one"), default="each", help="a new server per read, or one for all")
    ap.add_argument("--settle", type=float, default=2.0, help="seconds after a read before its RSS is read")
    ap.add_argument("--start-settle", type=float, default=3.0, help="seconds after the server first answers")
    ap.add_argument("--idle", type=float, default=15.0, help="seconds idle before the long-running server's RSS")
    ap.add_argument("--cap-mb", type=float, default=8000.0, help="kill a server whose RSS passes this")
    ap.add_argument("--only", default="", help="comma-separated read labels (default: every read)")
    ap.add_argument("--skip", default="", help="comma-separated read labels left out (e.g. reads over the cap)")
    ap.add_argument("--no-fresh", action="store_true", help="skip the fresh servers")
    ap.add_argument("--no-long", action="store_true", help="skip the long-running server")
    ap.add_argument("--no-browser", action="store_true", help="GETs only (no pages)")
    ap.add_argument("--server-tree", type=Path, default=ROOT, help="the checkout whose server is measured")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--json", action="store_true")
    return ap.parse_args()


def main() -> None:
    args = _args()
    args.long_pages = not args.no_browser and Path(CHROMIUM).exists()
    if args.tiny:  # every GET, three pages on the fresh server, the GETs on the long-running one
        pages = [r.label for r in reads(0, 2) if r.kind == "page"]
        args.skip, args.long_pages = ",".join(label for label in pages if label not in TINY_PAGES), False
        args.rows, args.rounds, args.minutes, args.fresh = 20_000, 1, 0.0, "one"
        args.settle, args.start_settle, args.idle = 0.2, 0.5, 1.0
    machines = 2 if args.tiny else 50
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if args.json else print
    db = args.db or Path(tempfile.mkdtemp()) / f"read-{args.rows}.duckdb"
    from benchmarks.dashboard import generate, ready

    store: dict = {}
    if not db.exists():
        t0 = time.perf_counter()
        store = generate(db, args.rows, machines=machines, mix=not args.timing_only)
        store["generate_s"] = round(time.perf_counter() - t0, 1)
    else:
        store = {"reused": str(db), "upkeep": ready(db)}  # a settled server's store: no side read from the pivot
    runs, builds = _shape(db)
    store.update(runs=runs, builds=builds, size_MiB=round(db.stat().st_size / 2**20))
    browser_on = not args.no_browser and Path(CHROMIUM).exists()
    todo = [r for r in reads(0, builds, pages=browser_on) if _wanted(r, args)]
    out: dict = {"rows": args.rows, "store": store, "server_tree": str(args.server_tree.resolve()), "load": _load()}
    with _browser(browser_on) as browser:
        if not args.no_fresh:
            out["fresh"] = fresh_phase(db, args.server_tree, todo, browser, args, say)
        if not args.no_long:
            out["long"] = long_phase(db, args.server_tree, builds, browser, args, say)
    out["load_after"] = _load()
    summary(out)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(
            f"worst peak {out['worst_peak_mb']:.0f} MB (fresh {out['worst_fresh_peak_mb']}, long-running "
            f"{out['worst_long_peak_mb']}); over {GOAL_MB:.0f} MB: {out['over_goal'] or 'none'}; idle "
            f"{out.get('idle_end_mb')} MB = {out.get('idle_ratio')}× a fresh server's {out.get('fresh_idle_mb')} MB; "
            f"500s: {out['errors_500'] or 'none'}"
        )
    if out["errors_500"]:
        raise SystemExit(1)


def _wanted(read: Read, args) -> bool:
    only, skip = (set(filter(None, text.split(","))) for text in (args.only, args.skip))
    return (not only or read.label in only) and read.label not in skip


def summary(out: dict) -> None:
    """The figures the README and benchmarks/headline.py quote, from the phases' own."""
    fresh, long = out.get("fresh", {}), out.get("long", {}).get("reads", {})
    everything = [(k, g) for k, g in fresh.items()] + [(k, g) for k, g in long.items()]
    out["worst_fresh_peak_mb"] = max((g["peak_mb"] for g in fresh.values()), default=None)
    out["worst_long_peak_mb"] = max((g["peak_mb"] for g in long.values()), default=None)
    out["worst_peak_mb"] = max((g["peak_mb"] for _, g in everything), default=0.0)
    out["worst_peak_vs_goal"] = round(out["worst_peak_mb"] / GOAL_MB, 3)
    out["over_goal"] = sorted({k for k, g in everything if g["peak_mb"] > GOAL_MB})
    out["errors_500"] = sorted({k for k, g in everything if isinstance(g["status"], int) and g["status"] == 500})
    starts = [g["start_mb"] for g in fresh.values()]
    if starts and "idle_end_mb" in out.get("long", {}):
        out["fresh_idle_mb"] = round(statistics.median(starts), 1)
        out["idle_end_mb"] = out["long"]["idle_end_mb"]
        out["idle_ratio"] = round(out["idle_end_mb"] / out["fresh_idle_mb"], 2)


def _shape(db: Path) -> tuple[int, int]:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        runs, builds = con.execute("SELECT count(*), count(DISTINCT torch_version) FROM runs").fetchone()
    return int(runs), int(builds)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


class _browser:
    """Headless Chromium (None when pages are not measured)."""

    def __init__(self, on: bool) -> None:
        self.on, self.pw, self.browser = on, None, None

    def __enter__(self):
        if not self.on:
            return None
        from playwright.sync_api import sync_playwright

        self.pw = sync_playwright().start()
        self.browser = self.pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        return self.browser

    def __exit__(self, *exc) -> None:
        if self.browser is not None:
            self.browser.close()
            self.pw.stop()


if __name__ == "__main__":
    main()
