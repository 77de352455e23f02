"""The store as a DuckLake on a throwaway Postgres (db.store.lake): one schema, one ingest, one Compare; the same
run_id uploaded through two replicas (two processes) at once is stored once; a wrong lake is a clear error."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import text

from benchmarks.stores.pg_lake import lake_store
from benchmarks.stores.seed import seed_bundles, seed_store
from db.errors import StoreError
from db.review.comparison import CompareQuery, compare
from db.store.engine import open_store

ROOT = Path(__file__).resolve().parent.parent
KEY = ["scope", "workload", "case_key", "metric", "dtype", "compile"]
QUERY = {"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"}


def test_a_seeded_lake_compares_exactly_as_the_file_store(postgres, tmp_path, monkeypatch):
    lake = open_store(lake_store(postgres, tmp_path / "data", "seeded", monkeypatch))
    file = open_store(tmp_path / "f.duckdb")
    try:
        seed_store(lake)
        seed_store(file)
        on_lake, on_file = (
            compare(e, CompareQuery.from_params(QUERY)).cases.sort_values(KEY).reset_index(drop=True)
            for e in (lake, file)
        )
        assert len(on_lake) == 26
        pd.testing.assert_frame_equal(on_lake, on_file, rtol=1e-12)  # sums may differ in the last bit
        with lake.connect() as conn:
            assert conn.execute(text("SELECT count(*), count(DISTINCT run_id) FROM runs")).one() == (12, 12)
            assert conn.execute(text("SELECT current_database()")).scalar() == "lake"
        assert list((tmp_path / "data").rglob("*.parquet"))  # the results live as Parquet under MPSBENCH_LAKE_DATA
    finally:
        lake.dispose()
        file.dispose()


_REPLICA = """
import sys, time
from db.errors import StoreError
from db.ingest.core import ingest_bundle
from db.store.engine import open_store
engine = open_store(sys.argv[1])
body = open(sys.argv[2], 'rb').read()
while time.time() < float(sys.argv[3]):
    time.sleep(0.001)
try:
    print('201' if ingest_bundle(engine, body).created else '200')
except StoreError as exc:
    print(exc.status)
"""


def _replicas(store: str, bodies: list[Path], tmp_path: Path) -> list[str]:
    """Each body uploaded by its own process (a replica), all released at the same instant."""
    start = time.time() + 8  # every process has opened the lake by then
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _REPLICA, store, str(b), str(start)],
            cwd=ROOT,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for b in bodies
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e[-2000:] for _, e in outs]
    return [o.strip().splitlines()[-1] for o, _ in outs]


def test_one_run_id_uploaded_to_two_replicas_at_once_is_stored_once(postgres, tmp_path, monkeypatch):
    store = lake_store(postgres, tmp_path / "data", "replicas", monkeypatch)
    open_store(store).dispose()  # created once, before the replicas race
    bundle = seed_bundles()[0]
    same = tmp_path / "same.json"
    same.write_text(bundle.model_dump_json())
    assert sorted(_replicas(store, [same, same], tmp_path)) == ["200", "201"]

    # the stored run_id with other content, and a new run, at once
    other = bundle.model_copy(update={"machine": bundle.machine.model_copy(update={"name": "another-mac"})})
    changed, fresh = tmp_path / "changed.json", tmp_path / "fresh.json"
    changed.write_text(other.model_dump_json())
    fresh.write_text(seed_bundles()[1].model_dump_json())
    assert _replicas(store, [changed, fresh], tmp_path) == ["409", "201"]

    engine = open_store(store)
    try:
        with engine.connect() as conn:
            runs = conn.execute(text("SELECT run_id, machine_name, run_seq FROM runs ORDER BY run_seq")).all()
            results = conn.execute(
                text("SELECT count(*) FROM results WHERE run_id = :r"), {"r": bundle.run_id}
            ).scalar()
        assert [r.run_id for r in runs] == [bundle.run_id, seed_bundles()[1].run_id]
        assert runs[0].machine_name == bundle.machine.name and [r.run_seq for r in runs] == [1, 2]
        assert results == len(bundle.results)  # never two copies
    finally:
        engine.dispose()


def test_a_wrong_connection_string_is_a_clear_error_naming_the_variable(postgres, tmp_path, monkeypatch):
    monkeypatch.setenv("MPSBENCH_LAKE_DATA", str(tmp_path / "data"))
    with pytest.raises(StoreError) as err:
        open_store(f"ducklake:postgres:host={postgres.socket} user=mps dbname=no_such_catalog")
    assert err.value.status == 503 and "Postgres catalog cannot be reached" in str(err.value)
    assert 'database "no_such_catalog" does not exist' in str(err.value) and [p.field for p in err.value.problems] == [
        "MPSBENCH_STORE"
    ]


def test_a_lake_without_its_data_folder_names_mpsbench_lake_data(monkeypatch):
    monkeypatch.delenv("MPSBENCH_LAKE_DATA", raising=False)
    with pytest.raises(StoreError) as err:
        open_store("ducklake:postgres:host=/nowhere dbname=x")
    assert err.value.status == 400 and "MPSBENCH_LAKE_DATA" in str(err.value)


def test_postgres_stopped_is_a_503_with_the_reason_and_the_store_recovers_when_it_returns(tmp_path, monkeypatch):
    from benchmarks.stores.pg_lake import Postgres, why_not
    from db.ingest.core import ingest_bundle
    from db.store.faults import as_store_error

    if why_not():
        pytest.skip(why_not())
    own = Postgres(Path(tempfile.mkdtemp(prefix="mpsbench-pg-")))  # its own server: this test stops it
    own.init()
    own.start()
    try:
        engine = open_store(lake_store(own, tmp_path / "data", "faults", monkeypatch))
        first, second = seed_bundles()[:2]
        ingest_bundle(engine, first.model_dump_json().encode())
        own.stop()
        with pytest.raises(Exception) as write:  # what the API turns into its JSON 503 (db.store.faults)
            ingest_bundle(engine, second.model_dump_json().encode())
        fault = write.value if isinstance(write.value, StoreError) else as_store_error(write.value)
        assert fault.status == 503 and "Postgres catalog cannot be reached" in str(fault)
        assert str(own.folder) not in str(fault)  # the connection string stays in the log
        with pytest.raises(Exception) as read:
            with engine.connect() as conn:
                conn.execute(text("SELECT count(*) FROM runs")).scalar()
        fault = as_store_error(read.value)
        assert fault is not None and fault.status == 503 and "Postgres catalog cannot be reached" in str(fault)
        own.start()
        assert ingest_bundle(engine, second.model_dump_json().encode()).created
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM runs")).scalar() == 2
        engine.dispose()
    finally:
        own.stop()
        shutil.rmtree(own.folder, ignore_errors=True)


def test_migrate_store_copies_a_file_store_into_a_new_lake_with_its_row_counts(postgres, tmp_path, monkeypatch, capsys):
    from db.cli import main
    from db.store.writers.retract import retract_run

    path = tmp_path / "team.duckdb"
    file = open_store(path)
    answers = seed_store(file)
    retract_run(
        file, answers["run_ids"][-1], "a broken machine", "cli:test", admin=True
    )  # retracted_results travels too
    with file.connect() as conn:
        expected = {
            t: conn.execute(text(f'SELECT count(*) FROM "{t}"')).scalar()
            for t in ("runs", "results", "run_tags", "aa_pairs", "aa_noise", "aa_cases", "retracted_results")
        }
    on_file = compare(file, CompareQuery.from_params(QUERY)).cases.sort_values(KEY).reset_index(drop=True)
    file.dispose()
    lake = lake_store(postgres, tmp_path / "data", "migrated", monkeypatch)
    monkeypatch.setenv("MPSBENCH_STORE", str(path))
    assert main(["migrate-store", "--to", lake]) == 0
    assert f"results {expected['results']} rows" in capsys.readouterr().out
    engine = open_store(lake)
    try:
        with engine.connect() as conn:
            assert {t: conn.execute(text(f'SELECT count(*) FROM "{t}"')).scalar() for t in expected} == expected
        on_lake = compare(engine, CompareQuery.from_params(QUERY)).cases.sort_values(KEY).reset_index(drop=True)
        pd.testing.assert_frame_equal(on_lake, on_file, rtol=1e-12)
    finally:
        engine.dispose()
    assert main(["migrate-store", "--to", lake]) == 1  # into a lake that holds runs: refused, nothing added
    assert "already holds 12 run(s)" in capsys.readouterr().out


def test_a_retraction_and_a_triage_note_through_one_replica_are_seen_by_the_other(postgres, tmp_path, monkeypatch):
    from db.store.writers.retract import retract_run
    from db.store.writers.tokens import local_token, local_token_path
    from db.store.writers.triage import latest_notes, save_note

    store = lake_store(postgres, tmp_path / "data", "shared", monkeypatch)
    monkeypatch.setenv("MPSBENCH_STORE", store)
    one, two = open_store(store), open_store(store)  # two replicas' engines (each its own DuckDB database)
    try:
        answers = seed_store(one)
        before = compare(one, CompareQuery.from_params(QUERY)).cases
        retracted = answers["run_ids"][0]
        retract_run(two, retracted, "ran on battery", "alice", admin=True)
        key = {
            "workload": "softmax",
            "case_key": "{}",
            "dtype": "float32",
            "compile": "eager",
            "metric": "op_time",
            "scope": "studio-1",
        }
        save_note(two, "torch=2.14.1", "torch=2.15.0rc1", key, "confirmed", "bob", "seen on both")
        with one.connect() as conn:
            assert (
                conn.execute(text("SELECT retracted_by FROM runs WHERE run_id = :r"), {"r": retracted}).scalar()
                == "alice"
            )
            assert conn.execute(text("SELECT count(*) FROM results WHERE run_id = :r"), {"r": retracted}).scalar() == 0
        after = compare(one, CompareQuery.from_params(QUERY)).cases
        assert after.baseline_n.sum() < before.baseline_n.sum()  # the retracted baseline run left the comparison
        notes = latest_notes(one, "torch=2.14.1", "torch=2.15.0rc1")
        assert notes.author.tolist() == ["bob"] and notes.state.tolist() == ["confirmed"]
    finally:
        one.dispose()
        two.dispose()
    # the generated token lives in the shared data folder, so every replica accepts it
    assert local_token_path() == (tmp_path / "data").resolve() / "mpsbench-token"
    assert local_token() == local_token(create=False)


def test_serve_on_a_wrong_lake_stops_at_start_naming_the_variable(postgres, tmp_path, monkeypatch, capsys):
    from mpsbench.cli import main

    monkeypatch.setenv("MPSBENCH_STORE", f"ducklake:postgres:host={postgres.socket} user=mps dbname=not_created")
    monkeypatch.setenv("MPSBENCH_LAKE_DATA", str(tmp_path / "data"))
    assert main(["serve", "--port", "1"]) == 1  # returns before binding anything
    out = capsys.readouterr().out
    assert out.startswith("ERROR: store unavailable: the lake's Postgres catalog cannot be reached")
    assert 'database "not_created" does not exist' in out and "MPSBENCH_STORE" in out
