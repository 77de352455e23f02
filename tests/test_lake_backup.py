"""A lake's backup taken while it is written, as README "A store for many teams" documents it: pg_dump -Fc of the
catalog, then a copy of MPSBENCH_LAKE_DATA; restored (createdb + pg_restore, the catalog's data_path pointed at
the copy) into a new database and folder, the lake opens, holds every run committed before the dump, each whole,
none begun after it, answers Compare as the live lake does, and takes new uploads; opened with the copy's folder
before that update, it is a clear error naming MPSBENCH_LAKE_DATA."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time

import pandas as pd
import pytest
from sqlalchemy import text

from benchmarks.stores.pg_lake import BIN, lake_store
from benchmarks.stores.seed import seed_store
from db.errors import StoreError
from db.ingest.core import ingest_bundle
from db.review.comparison import CompareQuery, clear_cache, compare
from db.store.engine import open_store
from tests.bundles import make_bundle

KEY = ["scope", "workload", "case_key", "metric", "dtype", "compile"]
QUERY = {"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"}
OTHER_BUILD = {"torch_version": "2.16.0rc1", "channel": "rc", "python_version": "3.11.7", "collector_version": "0.1.0"}
PER_RUN = 6  # tests.bundles' results


def _body(i: int) -> bytes:
    """A writer's bundle, of a build the Compare below does not select (its answer stays the seed's)."""
    return json.dumps(make_bundle(run_id=f"{0xBAC0000 + i:032x}", build=OTHER_BUILD)).encode()


class Writer(threading.Thread):
    """Ingests one bundle after another through its own engine (a replica) until stopped; records when each
    ingest began and that it committed."""

    def __init__(self, store: str) -> None:
        super().__init__(daemon=True)
        self.engine, self.stop, self.lock = open_store(store), threading.Event(), threading.Lock()
        self.began: dict[str, float] = {}
        self.committed: list[str] = []
        self.failure: BaseException | None = None

    def run(self) -> None:
        i = 0
        try:
            while not self.stop.is_set():
                body, run_id = _body(i), f"{0xBAC0000 + i:032x}"
                with self.lock:
                    self.began[run_id] = time.monotonic()
                assert ingest_bundle(self.engine, body).created
                with self.lock:
                    self.committed.append(run_id)
                i += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.failure = exc

    def wait_for(self, n: int, limit_s: float = 120.0) -> None:
        deadline = time.monotonic() + limit_s
        while len(self.committed) < n:
            assert self.failure is None and time.monotonic() < deadline, self.failure or "the writer stalled"
            time.sleep(0.05)


def _pg(tool: str, *args: str) -> None:  # a client: runs as this user, over the throwaway server's socket
    done = subprocess.run([str(BIN / tool), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{tool}: {done.stderr[-2000:]}"


def _cases(engine) -> pd.DataFrame:
    clear_cache()
    return compare(engine, CompareQuery.from_params(QUERY)).cases.sort_values(KEY).reset_index(drop=True)


def test_a_backup_taken_while_writing_restores_every_run_committed_before_it(postgres, tmp_path, monkeypatch):
    live_data, copy = tmp_path / "live", tmp_path / "restored"
    store = lake_store(postgres, live_data, "live", monkeypatch)
    engine = open_store(store)
    seeded = seed_store(engine)["run_ids"]
    expected = _cases(engine)
    host = ["-h", str(postgres.socket), "-U", "mps"]
    writer = Writer(store)
    writer.start()
    try:
        writer.wait_for(3)  # the dump is taken in the middle of a stream of uploads
        with writer.lock:
            before = list(writer.committed)
        dump = tmp_path / "catalog.dump"
        _pg("pg_dump", *host, "-Fc", "-f", str(dump), "live")
        dumped_at = time.monotonic()
        writer.wait_for(len(writer.committed) + 2)  # runs begun after the dump: not in the backup
        shutil.copytree(live_data, copy)  # while the writer goes on, as the documented backup does
        writer.wait_for(len(writer.committed) + 1)
    finally:
        writer.stop.set()
        writer.join(timeout=120)
        writer.engine.dispose()
    assert writer.failure is None, writer.failure
    after = [r for r, began in writer.began.items() if began > dumped_at and r in writer.committed]
    assert after, "no run was begun after the dump"
    pd.testing.assert_frame_equal(_cases(engine), expected)  # the writer's build is not compared: no change
    engine.dispose()

    _pg("createdb", *host, "restored")
    _pg("pg_restore", *host, "-d", "restored", str(dump))
    target = f"ducklake:postgres:host={postgres.socket} user=mps dbname=restored"
    monkeypatch.setenv("MPSBENCH_LAKE_DATA", str(copy))
    with pytest.raises(StoreError) as err:  # the restored catalog still names the live folder
        open_store(target)
    assert f"its catalog names {live_data.resolve()}/" in str(err.value)
    assert [p.field for p in err.value.problems] == ["MPSBENCH_LAKE_DATA"]
    # the copy lives in another folder: point the restored catalog at it (README), and move the original away
    # so nothing can be read from it
    _pg(
        "psql",
        *host,
        "-d",
        "restored",
        "-v",
        "ON_ERROR_STOP=1",
        "-c",
        f"UPDATE ducklake_metadata SET value = '{copy.resolve()}/' WHERE key = 'data_path'",
    )
    live_data.rename(tmp_path / "live-gone")
    restored = open_store(target)
    try:
        with restored.connect() as conn:
            runs = dict(conn.execute(text("SELECT run_id, count(*) FROM runs GROUP BY run_id")).all())
            results = dict(conn.execute(text("SELECT run_id, count(*) FROM results GROUP BY run_id")).all())
        assert set(seeded) | set(before) <= set(runs) <= set(seeded) | set(writer.committed)
        assert not set(after) & set(runs)
        assert set(runs.values()) == {1}  # each run once
        assert all(results[r] == PER_RUN for r in runs if r in writer.began)  # each writer run whole
        pd.testing.assert_frame_equal(_cases(restored), expected, rtol=1e-12)
        assert ingest_bundle(restored, _body(10_000)).created  # the restored lake takes writes
        with restored.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM runs")).scalar() == len(runs) + 1
    finally:
        restored.dispose()
