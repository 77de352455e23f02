"""Replicas under load, over HTTP (benchmarks/lake/, part `load`): real `mpsbench serve` processes on one lake.

R replicas (default 2) start on one DuckLake (its catalog in the throwaway Postgres), seeded with benchmarks/stores/seed.py's
store. Then, in this process: T uploader threads per replica (default 8), each POSTing rounds of B bundles
(default 5; benchmarks/ingest.build_bundle_bytes, 40 results, a distinct run_id each, machine `ci-mac-<r>-<t>`)
to its replica's /api/v1/runs with a named token; a thread starts another round while `seconds` (default 120)
have not passed since the start, so the run lasts `seconds` plus the last round (at least one round: R·T·B
uploads). Meanwhile C readers (default 2, one per replica in turn) GET /api/v1/compare (seed's builds) in a loop
until the uploaders stop: each upload changes the data, so most answers are computed, not cached.
Reported: uploads acknowledged (201/200), errors (non-2xx by status, or the exception's name), upload and read
latency p50/p95 (ms, client side: request sent to answer read), and the store afterwards: every acknowledged
run_id stored exactly once with its 40 results.
Then the race: the same bundle POSTed to two replicas at one moment (a barrier) → one 201 + one 200; the same
run_id with other content → one 201 + one 409; each stored once.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
from sqlalchemy import text

from benchmarks.ingest import build_bundle_bytes
from benchmarks.stores.seed import seed_store
from db.store.engine import open_store

ROOT = Path(__file__).resolve().parents[2]
QUERY = {"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"}
RESULTS = 40
TOKEN = "load-" + secrets.token_hex(16)
_CLEARED = (
    "MPSBENCH_DB",
    "MPSBENCH_UPLOAD_TOKENS_FILE",
    "MPSBENCH_ADMIN_TOKENS",
    "MPSBENCH_READ_TOKENS",
    "MPSBENCH_NOTIFY_URL",
    "MPSBENCH_ALLOWED_HOSTS",
    "MPSBENCH_TRUSTED_PROXIES",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bundle(seed: int, machine: str) -> bytes:
    return build_bundle_bytes(RESULTS, seed=seed).replace(b'"name": "bench"', f'"name": "{machine}"'.encode(), 1)


class Replicas:
    """`python -m mpsbench serve` × n on `store`, each in its own process group (stopped by its pid)."""

    def __init__(self, store: str, data: Path, n: int, logs: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
        env |= {"MPSBENCH_STORE": store, "MPSBENCH_LAKE_DATA": str(data), "MPSBENCH_UPLOAD_TOKENS": f"load={TOKEN}"}
        self.procs, self.urls, self.logs = [], [], []
        for i in range(n):
            port, log = _free_port(), logs / f"replica-{i}.log"
            self.procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "mpsbench", "serve", "--port", str(port)],
                    cwd=ROOT,
                    env=env,
                    stdout=log.open("w"),
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
            self.urls.append(f"http://127.0.0.1:{port}")
            self.logs.append(log)

    def wait_healthy(self, limit_s: float = 180.0) -> float:
        start = time.monotonic()
        for proc, url, log in zip(self.procs, self.urls, self.logs):
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"replica {url} exited ({proc.returncode}): {log.read_text()[-2000:]}")
                try:
                    if httpx.get(url + "/api/v1/health", timeout=5).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() - start > limit_s:
                    raise RuntimeError(f"replica {url} did not answer health in {limit_s:.0f} s")
                time.sleep(0.25)
        return time.monotonic() - start

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=20)


def _post(client: httpx.Client, url: str, body: bytes) -> tuple[int | str, float]:
    start = time.perf_counter()
    try:
        status = client.post(
            url + "/api/v1/runs",
            content=body,
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        ).status_code
    except httpx.HTTPError as exc:
        status = type(exc).__name__
    return status, time.perf_counter() - start


def _ms(times: list[float]) -> dict:
    if not times:
        return {"p50_ms": None, "p95_ms": None}
    p50, p95 = np.percentile(np.array(times) * 1000, [50, 95])
    return {"p50_ms": round(float(p50), 1), "p95_ms": round(float(p95), 1)}


def _errors(statuses: list) -> dict:
    out: dict[str, int] = {}
    for s in statuses:
        if not (isinstance(s, int) and 200 <= s < 300):
            out[str(s)] = out.get(str(s), 0) + 1
    return out


def _figures(
    uploads: list, reads: list, upload_s: float, seconds: float, replicas: int, threads: int, bundles: int, readers: int
) -> dict:
    """The load's figures: every upload's (run_id, status, seconds) and every read's (status, seconds)."""
    ok = [took for _, s, took in uploads if s in (200, 201)]
    return {
        "seconds": seconds,
        "wall_s": round(upload_s, 1),
        "replicas": replicas,
        "uploaders_per_replica": threads,
        "bundles_per_round": bundles,
        "uploads": len(uploads),
        "acknowledged": len(ok),
        "created_201": sum(s == 201 for _, s, _ in uploads),
        "upload_errors": _errors([s for _, s, _ in uploads]),
        "upload_latency": _ms(ok),
        "uploads_per_s": round(len(ok) / upload_s, 2),
        "readers": readers,
        "reads": len(reads),
        "read_errors": _errors([s for s, _ in reads]),
        "read_latency": _ms([t for s, t in reads if s == 200]),
        "_acknowledged_ids": sorted({rid for rid, s, _ in uploads if s in (200, 201)}),
        "_sent_ids": sorted({rid for rid, _, _ in uploads}),
    }


def load(urls: list[str], seconds: float, threads: int, bundles: int, readers: int) -> dict:
    """The uploaders and readers; every request's status and latency."""
    uploads: list[tuple[str, int | str, float]] = []  # (run_id, status, seconds)
    reads: list[tuple[int | str, float]] = []
    lock, done = threading.Lock(), threading.Event()
    start = time.monotonic()

    def uploader(r: int, t: int) -> None:
        with httpx.Client(timeout=300) as client:
            n = 0
            while n == 0 or time.monotonic() - start < seconds:
                for _ in range(bundles):
                    seed = 1_000_000 + r * 100_000 + t * 10_000 + n
                    body = bundle(seed, f"ci-mac-{r}-{t}")
                    status, took = _post(client, urls[r], body)
                    with lock:
                        uploads.append((f"{seed + 1:032x}", status, took))
                    n += 1

    def reader(c: int) -> None:
        with httpx.Client(timeout=300) as client:
            while True:  # at least one read, however short the load
                t0 = time.perf_counter()
                try:
                    status = client.get(urls[c % len(urls)] + "/api/v1/compare", params=QUERY).status_code
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                with lock:
                    reads.append((status, time.perf_counter() - t0))
                if done.is_set():
                    break

    workers = [threading.Thread(target=uploader, args=(r, t)) for r in range(len(urls)) for t in range(threads)]
    watchers = [threading.Thread(target=reader, args=(c,)) for c in range(readers)]
    for th in watchers + workers:
        th.start()
    for th in workers:
        th.join()
    upload_s = time.monotonic() - start
    done.set()
    for th in watchers:
        th.join()
    return _figures(uploads, reads, upload_s, seconds, len(urls), threads, bundles, readers)


def race(urls: list[str], trials: int) -> dict:
    """Per trial, two bundles of one new run_id POSTed to two replicas at one moment: the same bytes, then (a new
    run_id) two contents. Statuses sorted per pair."""
    same, other, ids = [], [], []
    clients = [httpx.Client(timeout=300) for _ in range(2)]
    try:
        for c, url in zip(clients, urls):
            c.get(url + "/api/v1/health")  # connections open before the barrier
        for i in range(trials):
            for kind, out in (("same", same), ("other", other)):
                seed = 9_000_000 + 2 * i + (kind == "other")
                a = bundle(seed, "race-a")
                b = a if kind == "same" else bundle(seed, "race-b")
                gate, got = threading.Barrier(2), [None, None]

                def post(k: int, body: bytes) -> None:
                    gate.wait()  # noqa: B023 - the threads are joined within this iteration
                    got[k] = _post(clients[k], urls[k % len(urls)], body)[0]  # noqa: B023 - joined within it

                pair = [threading.Thread(target=post, args=(0, a)), threading.Thread(target=post, args=(1, b))]
                for th in pair:
                    th.start()
                for th in pair:
                    th.join()
                out.append(sorted(got, key=str))
                ids.append(f"{seed + 1:032x}")
    finally:
        for c in clients:
            c.close()
    return {
        "trials": trials,
        "same_bundle": same,
        "other_content": other,
        "ok": all(p == [200, 201] for p in same) and all(p == [201, 409] for p in other),
        "_ids": ids,
    }


def stored(store: str, acknowledged: list[str], sent: list[str], raced: list[str]) -> dict:
    """What the store holds afterwards: each acknowledged (and raced) run_id once, with its RESULTS results."""
    engine = open_store(store)
    try:
        with engine.connect() as conn:
            runs = dict(conn.execute(text("SELECT run_id, count(*) FROM runs GROUP BY run_id")).all())
            results = dict(conn.execute(text("SELECT run_id, count(*) FROM results GROUP BY run_id")).all())
    finally:
        engine.dispose()
    wanted = set(acknowledged) | set(raced)
    return {
        "acknowledged_stored_once": sum(runs.get(r) == 1 and results.get(r) == RESULTS for r in acknowledged),
        "raced_stored_once": sum(runs.get(r) == 1 and results.get(r) == RESULTS for r in raced),
        "duplicated": sorted(r for r, n in runs.items() if n > 1),
        "missing": sorted(r for r in wanted if r not in runs),
        "runs_in_store": sum(runs.values()),
        "unacknowledged_stored": sorted((set(sent) - wanted) & runs.keys()),
    }  # sent, answered other than 2xx


def run_load(
    store: str,
    data: Path,
    folder: Path,
    *,
    seconds: float,
    threads: int,
    bundles: int,
    readers: int,
    trials: int,
    replicas: int = 2,
) -> dict:
    seeded = open_store(store)
    seed_store(seeded)
    seeded.dispose()
    servers = Replicas(store, data, replicas, folder)
    try:
        started = servers.wait_healthy()
        out = load(servers.urls, seconds, threads, bundles, readers)
        raced = race(servers.urls, trials)
    finally:
        servers.stop()
    after = stored(store, out.pop("_acknowledged_ids"), out.pop("_sent_ids"), raced.pop("_ids"))
    return {**out, "replicas_start_s": round(started, 1), "race": raced, "store": after}


def load_report(ld: dict) -> list[str]:
    up, rd, st, rc = ld["upload_latency"], ld["read_latency"], ld["store"], ld["race"]
    return [
        f"load over HTTP: {ld['replicas']} replicas × {ld['uploaders_per_replica']} uploaders, rounds of "
        f"{ld['bundles_per_round']} bundles started for {ld['seconds']:.0f} s (ran {ld['wall_s']:.0f} s; replicas "
        f"up in {ld['replicas_start_s']:.0f} s)",
        f"  uploads {ld['uploads']}: acknowledged {ld['acknowledged']} ({ld['created_201']} × 201), errors "
        f"{ld['upload_errors'] or 0}; latency p50 {up['p50_ms']} ms, p95 {up['p95_ms']} ms; "
        f"{ld['uploads_per_s']} uploads/s",
        f"  store after: {st['acknowledged_stored_once']} of {ld['acknowledged']} acknowledged stored exactly once "
        f"(40 results each), duplicated {len(st['duplicated'])}, missing {len(st['missing'])}, stored without "
        f"acknowledgement {len(st['unacknowledged_stored'])}",
        f"  readers {ld['readers']}: {ld['reads']} Compare requests, errors {ld['read_errors'] or 0}; latency p50 "
        f"{rd['p50_ms']} ms, p95 {rd['p95_ms']} ms",
        f"  race ({rc['trials']} of each): same bundle to both replicas {rc['same_bundle']}, other content "
        f"{rc['other_content']} → {'as expected' if rc['ok'] else 'NOT as expected'}; each stored once: "
        f"{st['raced_stored_once']} of {2 * rc['trials']}",
    ]
