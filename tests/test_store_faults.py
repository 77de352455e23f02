"""Faults of issue 17: a crash between a migration and its version stamp leaves an openable store; a full disk,
a locked file and a damaged file are JSON 503s naming the fault (health too), the store is reopened once the
fault clears, and nothing acknowledged is lost."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import duckdb
import pytest
import sqlalchemy.exc
from sqlalchemy import text

import db.ingest.core
import db.store.engine
from db.store import faults
from db.store.engine import open_store
from db.store.tables import STORE_VERSION
from tests.bundles import make_bundle
from tests.store_fixtures import api_client
from tests.test_store_migrate import V0_DDL

ROOT = Path(__file__).resolve().parent.parent
JSON = {"content-type": "application/json", "authorization": "Bearer tok-faults"}
V0_RUN = "0123456789abcdef0123456789abcdef"


def _version(path: Path) -> str:
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        if "meta" not in tables:
            return "none"
        return con.execute("SELECT value FROM meta WHERE key='store_version'").fetchall()[0][0]
    finally:
        con.close()


# a real crash (os._exit: no cleanup, no rollback) at two points inside the open of a v0 file
CRASH = textwrap.dedent("""
    import os, sys
    import db.store.engine as engine, db.store.migrate as migrate
    point = sys.argv[2]
    if point == "stamp":
        engine._stamp = lambda conn: os._exit(9)
    else:
        real = migrate.migrate
        def crash_after(conn):
            real(conn)
            os._exit(9)
        migrate.migrate = crash_after
    engine.open_store(sys.argv[1])
""")


@pytest.mark.parametrize("point", ["after_migrate", "stamp"])
def test_a_crash_inside_the_migration_leaves_a_store_that_opens_migrated_with_its_data(tmp_path, point):
    path = tmp_path / "v0.duckdb"
    con = duckdb.connect(str(path))
    con.execute(V0_DDL)
    con.close()
    crashed = subprocess.run(
        [sys.executable, "-c", CRASH, str(path), point], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert crashed.returncode == 9, crashed.stderr
    assert _version(path) == "none"  # the crash rolled everything back: still the v0 file it was
    engine = open_store(path)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT value FROM meta WHERE key='store_version'")).scalar() == str(STORE_VERSION)
            assert conn.execute(text("SELECT run_id FROM runs")).scalars().all() == [V0_RUN]
            assert conn.execute(text("SELECT count(*) FROM results")).scalar() == 2
        db.ingest.core.ingest_bundle(engine, make_bundle())
    finally:
        engine.dispose()


def test_a_failed_stamp_rolls_the_migration_back(tmp_path, monkeypatch):
    path = tmp_path / "v0.duckdb"
    con = duckdb.connect(str(path))
    con.execute(V0_DDL)
    con.close()

    def fail(conn):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(db.store.engine, "_stamp", fail)
    with pytest.raises(OSError):
        open_store(path)
    assert _version(path) == "none"
    monkeypatch.undo()
    engine = open_store(path)
    engine.dispose()
    assert _version(path) == str(STORE_VERSION)


@pytest.fixture
def server(tmp_path, monkeypatch):
    """An API client on a store at MPSBENCH_DB (set it before the first request), faults forgotten after."""
    with api_client(monkeypatch, tmp_path / "store.duckdb", "faults=tok-faults") as found:
        yield found


def _upload(client, bundle):
    return client.post("/api/v1/runs", content=json.dumps(bundle).encode(), headers=JSON)


def _assert_503(response, words: str) -> None:
    body = response.json()
    assert response.status_code == 503, body
    assert body["ok"] is False and body["status"] == 503 and words in body["error"], body
    assert body["errors"][0]["field"] == "store" and response.headers["retry-after"]
    assert "/" not in body["error"]  # the reason only: no server path


def _stored(client) -> set[str]:
    response = client.get("/api/v1/runs", params={"limit": "10000"})
    assert response.status_code == 200, response.json()
    return {r["run_id"] for r in response.json()["runs"]}


def test_simulated_disk_full_is_a_503_then_uploads_work_again_and_nothing_acknowledged_is_lost(server, monkeypatch):
    first = make_bundle()
    assert _upload(server, first).status_code == 201
    real = db.ingest.core._store

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(db.ingest.core, "_store", full)
    refused = make_bundle()
    _assert_503(_upload(server, refused), "disk holding the store is full")
    health = server.get("/api/v1/health").json()
    assert health["store"]["state"] == "degraded" and "full" in health["store"]["last_write_fault"]["reason"]
    monkeypatch.setattr(db.ingest.core, "_store", real)  # the disk has room again
    second = make_bundle()
    assert _upload(server, second).status_code == 201
    assert server.get("/api/v1/health").json()["store"]["state"] == "ok"
    assert _stored(server) == {first["run_id"], second["run_id"]}
    assert _upload(server, refused).status_code == 201  # the collector's retry of the refused one lands


def test_an_invalidated_database_is_reopened_by_the_next_request(server, monkeypatch):
    """DuckDB refuses every statement after a fatal error until the database is reopened (the 500-forever of
    issue 17); the guard disposes the engine, so the request after the 503 works."""
    kept = make_bundle()
    assert _upload(server, kept).status_code == 201
    with db.store.engine.shared_store().connect() as conn:
        root = conn.connection.driver_connection.root  # the open database's root connection
    real = db.ingest.core._store

    def fatal(*args, **kwargs):
        raise duckdb.FatalException(
            "FATAL Error: Failed to create checkpoint because of error: "
            'Could not write file "/srv/x.duckdb": No space left on device'
        )

    monkeypatch.setattr(db.ingest.core, "_store", fatal)
    _assert_503(_upload(server, make_bundle()), "full")
    assert root.retired and root.users == 0  # closed (nothing held it): the next checkout opens the file afresh
    monkeypatch.setattr(db.ingest.core, "_store", real)
    assert server.get("/api/v1/health").status_code == 200
    again = make_bundle()
    assert _upload(server, again).status_code == 201
    assert _stored(server) == {kept["run_id"], again["run_id"]}


def test_a_store_locked_by_another_process_is_a_503_until_it_lets_go(server, tmp_path):
    path = tmp_path / "store.duckdb"
    open_store(path).dispose()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('locked', flush=True); sys.stdin.read()",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        _assert_503(server.get("/api/v1/health"), "locked by another process")
        _assert_503(server.get("/api/v1/runs"), "locked")
        _assert_503(_upload(server, make_bundle()), "locked")
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert server.get("/api/v1/health").status_code == 200
    assert _upload(server, make_bundle()).status_code == 201


def test_a_damaged_store_file_is_a_503_on_every_route_not_a_500(server, tmp_path):
    (tmp_path / "store.duckdb").write_bytes(b"this is not a duckdb file" * 1000)
    for response in (
        server.get("/api/v1/health"),
        server.get("/api/v1/overview"),
        server.get("/api/v1/compare", params={"baseline": "torch=1", "candidate": "torch=2"}),
        _upload(server, make_bundle()),
    ):
        _assert_503(response, "damaged or not a DuckDB database")


def test_an_unexpected_error_is_a_json_500_without_details(server, monkeypatch):
    import api.query

    def broken(*args):
        raise RuntimeError("/srv/secret/path.py line 3")

    monkeypatch.setattr(api.query, "list_runs", broken)
    response = server.get("/api/v1/runs")
    assert response.status_code == 500 and response.json() == {
        "ok": False,
        "status": 500,
        "error": "internal error (logged on the server)",
        "errors": [{"field": "server", "rule": "an unexpected error; nothing was stored"}],
    }


def test_a_read_out_of_memory_outside_duckdb_is_a_503_with_retry_after_not_a_500(server, monkeypatch):
    """pandas or numpy running out (a MemoryError: what a 6 GB address-space limit gave for an unbounded read) is
    the documented 503, and the store stays open: the next request is answered."""
    import api.query

    def greedy(*args):
        raise MemoryError("Unable to allocate 6.1 GiB for an array")

    real = api.query.list_runs
    monkeypatch.setattr(api.query, "list_runs", greedy)
    response = server.get("/api/v1/runs")
    body = response.json()
    assert response.status_code == 503 and response.headers["retry-after"], body
    assert (
        body["error"].startswith("server busy: the answer needed more memory")
        and body["errors"][0]["field"] == "memory"
    )
    monkeypatch.setattr(api.query, "list_runs", real)
    assert server.get("/api/v1/runs").status_code == 200


def _mount_tmpfs(where: Path, size: str) -> str | None:
    """Mount a small tmpfs (root only); None when mounted, else why not."""
    where.mkdir()
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True
    )
    return None if done.returncode == 0 else f"mount -t tmpfs failed: {done.stderr.strip()}"


def _fill(where: Path) -> Path:
    filler = where / "filler"
    with open(filler, "wb") as out:
        try:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


@contextmanager
def _on_small_tmpfs(tmp_path: Path, monkeypatch, instead: str) -> Iterator[tuple]:
    """(the API on a store in an 8 MB tmpfs, the mount point, {"umount": its result after}); skips naming
    `instead` where no tmpfs can be mounted."""
    mnt = tmp_path / "mnt"
    why = _mount_tmpfs(mnt, "8m")
    if why:
        pytest.skip(f"no small tmpfs to fill ({why}); {instead} covers the same path")
    after: dict = {}
    try:
        with api_client(monkeypatch, mnt / "store.duckdb", "faults=tok-faults") as client:
            yield client, mnt, after
    finally:
        after["umount"] = subprocess.run(["umount", str(mnt)], check=False, capture_output=True, text=True)


def test_a_real_full_disk_on_a_small_tmpfs(tmp_path, monkeypatch):
    with _on_small_tmpfs(tmp_path, monkeypatch, "test_simulated_disk_full_…") as (client, mnt, _):
        kept = [make_bundle(), make_bundle()]
        for bundle in kept:
            assert _upload(client, bundle).status_code == 201
        filler = _fill(mnt)
        _assert_503(_upload(client, make_bundle()), "disk holding the store is full")
        with pytest.raises((duckdb.Error, sqlalchemy.exc.DBAPIError)):  # the checkpoint DuckDB runs when its WAL
            # grows: fatal on a full disk
            with db.store.engine.shared_store().connect() as conn:
                conn.exec_driver_sql("CHECKPOINT")
        _assert_503(client.get("/api/v1/health"), "full")  # the invalidated database: closed, reopened next time
        assert _stored(client) == {b["run_id"] for b in kept}  # reopened: reads work on the full disk
        _assert_503(_upload(client, make_bundle()), "full")  # writes still cannot
        assert client.get("/api/v1/health").json()["store"]["state"] == "degraded"
        filler.unlink()  # the operator frees space; no restart
        assert client.get("/api/v1/health").json()["store"]["state"] in ("ok", "degraded")
        late = make_bundle()
        assert _upload(client, late).status_code == 201
        assert client.get("/api/v1/health").json()["store"]["state"] == "ok"
        assert _stored(client) == {b["run_id"] for b in kept} | {late["run_id"]}


def _concurrently(client, bundles: list[dict]) -> list[int]:
    """Upload every bundle at once, one thread each; their statuses in order."""
    with ThreadPoolExecutor(len(bundles)) as pool:
        return [r.status_code for r in pool.map(lambda b: _upload(client, b), bundles)]


def test_a_fault_answered_while_other_uploads_are_in_flight_breaks_none_of_them(server, monkeypatch):
    """Issue 25 item 2, made deterministic: the first of 8 concurrent uploads hits a full disk; the store is
    disposed (for reopening) only once the next upload holds its connection and is ingesting. Closing the
    connection under that upload made it a 500 ("Connection already closed"); now it finishes on it."""
    assert _upload(server, make_bundle()).status_code == 201  # the store is open
    real_store, real_stage, real_dispose = db.ingest.core._store, db.ingest.core._stage, faults._dispose_shared
    faulted, in_flight, disposed = threading.Event(), threading.Event(), threading.Event()
    lock = threading.Lock()

    def full_once(*args, **kwargs):
        with lock:
            first = not faulted.is_set()
            faulted.set()
        if first:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_store(*args, **kwargs)

    def stage(*args, **kwargs):
        if faulted.is_set() and not disposed.is_set():  # the upload after the fault, holding its connection
            in_flight.set()
            disposed.wait(30)
        return real_stage(*args, **kwargs)

    def dispose_later():
        in_flight.wait(30)
        real_dispose()
        disposed.set()

    monkeypatch.setattr(db.ingest.core, "_store", full_once)
    monkeypatch.setattr(db.ingest.core, "_stage", stage)
    monkeypatch.setattr(faults, "_dispose_shared", dispose_later)
    bundles = [make_bundle() for _ in range(8)]
    statuses = _concurrently(server, bundles)
    assert in_flight.is_set() and disposed.is_set()  # the race happened
    assert sorted(statuses) == [201] * 7 + [503]
    refused = bundles[statuses.index(503)]
    assert _upload(server, refused).status_code == 201  # the collector's retry lands
    assert len(_stored(server)) == 9


def test_a_real_full_disk_with_8_concurrent_uploaders_answers_no_500(tmp_path, monkeypatch):
    with _on_small_tmpfs(tmp_path, monkeypatch, "test_a_fault_answered_while_…") as (client, mnt, after):
        kept = [make_bundle(), make_bundle()]
        assert [_upload(client, b).status_code for b in kept] == [201, 201]
        filler = _fill(mnt)
        for _ in range(3):  # three waves at the full disk
            wave = [make_bundle() for _ in range(8)]
            statuses = _concurrently(client, wave)
            assert 500 not in statuses and set(statuses) <= {201, 503}, statuses
            kept += [b for b, s in zip(wave, statuses) if s == 201]
        filler.unlink()  # the operator frees space; no restart
        late = make_bundle()
        assert _upload(client, late).status_code == 201
        assert _stored(client) == {b["run_id"] for b in kept} | {late["run_id"]}
    # every connection of every root the faults retired is closed: nothing holds the file system
    assert after["umount"].returncode == 0, after["umount"].stderr
