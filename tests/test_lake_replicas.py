"""Real `mpsbench serve` replicas on one lake (benchmarks.lake.load.Replicas: processes, HTTP, a named token).

- examples/cpu-quick.json and a copy of it under another run id (two runs of the baseline), and two runs of a
  second build made from it, spread over both replicas: GET /api/v1/compare gives the same JSON from each. With
  several runs of a case on a side this needs each case's runs in run order (db.query.compare.pairs.runs_in_order:
  DuckDB's list() order varies between reads, and the tests on replicates sum in list order).
- kill -9 of a replica mid-upload leaves nothing of the run. The kill lands at a fixed point, not after a guessed
  sleep: the test holds an EXCLUSIVE lock on the catalog table `ducklake_snapshot_changes` (reads still pass),
  so the replica's DuckLake commit — one batch of catalog inserts ending with that table, then COMMIT — blocks
  inside its Postgres transaction after its Parquet files are written, with the replica's advisory write lock
  held. The test sees that in pg_stat_activity/pg_locks, kills the replica's process group, then lets go.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from benchmarks.ingest import build_bundle_bytes
from benchmarks.lake.load import TOKEN, Replicas
from benchmarks.stores.pg_lake import lake_store
from db.store.engine import open_store

ROOT = Path(__file__).resolve().parent.parent
AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
CATALOG = "replicas"  # the catalog database's name
BLOCKED = (
    "SELECT (SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
    "AND query LIKE 'INSERT INTO \"public\".ducklake_snapshot %'), "
    "(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 7265001 AND granted)"
)


@pytest.fixture(scope="module")
def served(postgres, tmp_path_factory):
    folder = tmp_path_factory.mktemp("replicas")
    with pytest.MonkeyPatch.context() as mp:
        store = lake_store(postgres, folder / "data", CATALOG, mp)
        open_store(store).dispose()  # the tables, made once before the replicas start
        servers = Replicas(store, folder / "data", 2, folder)
        try:
            servers.wait_healthy()
            yield store, servers, folder
        finally:
            servers.stop()


def _post(url: str, body: bytes, timeout: float = 120) -> int:
    return httpx.post(url + "/api/v1/runs", content=body, headers=AUTH, timeout=timeout).status_code


def _stored(store: str, run_id: str) -> tuple[int, int]:
    engine = open_store(store)  # a fresh open: the lake still opens
    try:
        with engine.connect() as conn:
            runs = conn.execute(text("SELECT count(*) FROM runs WHERE run_id = :r"), {"r": run_id}).scalar()
            results = conn.execute(text("SELECT count(*) FROM results WHERE run_id = :r"), {"r": run_id}).scalar()
        return runs, results
    finally:
        engine.dispose()


def second_build(body: bytes, run_id: str, torch: str, slower: float) -> bytes:
    """A copy of a bundle under a new run_id and another torch build, its op_time samples × slower."""
    doc = json.loads(body)
    doc["run_id"] = run_id
    doc["build"] |= {"torch_version": torch, "git_hash": "0" * 40}
    for r in doc["results"]:
        if r["metric"] == "op_time":
            r |= {"samples": [s * slower for s in r["samples"]], "summary": None}  # derived again on ingest
    return json.dumps(doc).encode()


def test_examples_uploaded_through_both_replicas_compare_identically(served):
    _, servers, _ = served
    one, two = servers.urls
    example = (ROOT / "examples" / "cpu-quick.json").read_bytes()
    base = json.loads(example)["build"]["torch_version"]
    again = json.loads(example) | {"run_id": "c" * 32}  # a second run of the baseline, the same samples
    assert _post(one, example) == 201 and _post(two, json.dumps(again).encode()) == 201
    assert _post(two, second_build(example, "b" * 32, "9.9.0+cpu", slower=1.3)) == 201
    assert _post(one, second_build(example, "d" * 32, "9.9.0+cpu", slower=1.31)) == 201
    assert _post(one, example) == 200 and _post(two, example) == 200  # each stored once
    query = {"baseline": f"torch={base}", "candidate": "torch=9.9.0+cpu"}
    # each upload's upkeep (its A/A figures) follows its answer: a comparison asked before it is done reads the
    # figures before it, and the next one after it (a new data version), so the replicas agree once it is done
    deadline = time.monotonic() + 60
    while True:
        answers = [httpx.get(u + "/api/v1/compare", params=query, timeout=120) for u in (one, two)]
        assert [a.status_code for a in answers] == [200, 200]
        first, second = (a.json() for a in answers)
        assert first["cases"] and first["empty_reason"] is None
        if first == second or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert first == second
    noise = {c["noise"] for c in first["cases"] if c["metric"] == "op_time"}
    assert noise and all("±0.4 %" in n for n in noise), noise  # the candidates' pair (1.3 vs 1.31) counted


def test_a_replica_killed_mid_commit_leaves_nothing_and_another_stores_the_bundle(served, postgres):
    store, servers, folder = served
    data = folder / "data"
    body, run_id, results = build_bundle_bytes(5000, seed=26), f"{27:032x}", 5000
    (folder / "victim").mkdir()
    victim = Replicas(store, data, 1, folder / "victim")  # a third replica, the one killed
    holder = subprocess.Popen(postgres.psql_args(CATALOG), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    outcome: list = []
    try:
        victim.wait_healthy()
        holder.stdin.write("BEGIN;\nLOCK TABLE ducklake_snapshot_changes IN EXCLUSIVE MODE;\nSELECT 'held';\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "held"
        before = set(data.rglob("*.parquet"))

        def upload() -> None:
            try:
                outcome.append(_post(victim.urls[0], body, timeout=300))
            except httpx.HTTPError as exc:
                outcome.append(type(exc).__name__)

        poster = threading.Thread(target=upload)
        poster.start()
        deadline = time.monotonic() + 180
        while postgres.query(CATALOG, BLOCKED) != "1|1":  # its commit waits on our lock, its write lock held
            assert poster.is_alive() and time.monotonic() < deadline, f"the commit never blocked: {outcome}"
            time.sleep(0.1)
        written = {p.name for p in set(data.rglob("*.parquet")) - before}
        assert written  # its results' Parquet files are written
        os.killpg(victim.procs[0].pid, signal.SIGKILL)
        victim.procs[0].wait(timeout=30)
        poster.join(timeout=60)
        assert outcome and not isinstance(outcome[0], int)  # no answer: the connection dropped
    finally:
        if holder.poll() is None:
            holder.communicate("COMMIT;\n", timeout=60)  # the dead replica's Postgres sessions end, locks with them
        victim.stop()
    deadline = time.monotonic() + 60
    while postgres.query(CATALOG, BLOCKED) != "0|0":
        assert time.monotonic() < deadline, "the killed replica's catalog sessions did not end"
        time.sleep(0.1)
    assert _stored(store, run_id) == (0, 0)  # nothing partial: no run row, no result
    one, two = servers.urls
    assert _post(one, body) == 201  # the bundle again, through a live replica: stored whole, once
    assert _post(two, body) == 200
    assert _stored(store, run_id) == (1, results)
    # the killed commit's files stay behind, named by no snapshot: DuckLake's orphan cleanup finds them
    engine = open_store(store)
    try:
        with engine.connect() as conn:
            orphans = conn.exec_driver_sql("FROM ducklake_delete_orphaned_files('lake', cleanup_all => true)").all()
    finally:
        engine.dispose()
    assert written <= {Path(row[0]).name for row in orphans}
    assert _stored(store, run_id) == (1, results)
