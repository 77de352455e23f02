"""Issue 25 item 1: what one upload may cost is bounded by design. A bundle holds each case once (a repeat is a
422 naming both positions, in the API and the CLI, before anything joins on it); a run's A/A pairs are bounded
(db.store.derived.aa_pairs.PARTNERS), so the pairs grow linearly with the runs; DuckDB runs under a memory limit, and a
request past it is a 503 naming the limit, after which the next request works."""

from __future__ import annotations

import json
import os

import pytest
from sqlalchemy import text

import db.store.engine
import db.store.pool
from db.cli import main as db_cli
from db.ingest.core import ingest_bundle
from db.store.derived.aa_pairs import PARTNERS, backfill
from db.store.engine import open_store
from tests.bundles import make_bundle, make_result
from tests.store_fixtures import api_client

JSON = {"content-type": "application/json", "authorization": "Bearer tok-bounds"}


@pytest.fixture
def client(tmp_path, monkeypatch):
    """The API on a store under a 256 MB DuckDB memory limit."""
    with api_client(
        monkeypatch, tmp_path / "store.duckdb", "bounds=tok-bounds", MPSBENCH_DUCKDB_MEMORY="256MB"
    ) as found:
        yield found


def _upload(client, bundle: dict):
    return client.post("/api/v1/runs", content=json.dumps(bundle).encode(), headers=JSON)


def _repeating(copies: int) -> dict:
    """The issue's upload: one case and `copies` more copies of it (6,000: 1.15 MB)."""
    one = make_result()
    return make_bundle(results=[one] + [dict(one) for _ in range(copies)])


def _count(sql: str) -> int:
    with db.store.engine.shared_store().connect() as conn:
        return int(conn.execute(text(sql)).scalar())


def test_a_bundle_repeating_a_case_is_a_422_naming_both_positions_and_stores_nothing(client):
    first = _repeating(6000)
    assert 1_000_000 < len(json.dumps(first)) < 1_300_000
    for bundle in (first, _repeating(6000)):  # the second one's join with the first made 36 M rows, then OOM: 500
        response = _upload(client, bundle)
        body = response.json()
        assert response.status_code == 422, body
        assert body["ok"] is False and body["error"] == "invalid bundle"
        assert body["errors"][0] == {
            "field": "results[1]",
            "rule": "results[1] repeats the case of results[0] (same "
            "workload, case_key, dtype, compile, metric); a bundle holds each case once "
            "(fold repeated measurements into one result's samples)",
        }
        assert body["errors"][-1] == {
            "field": "results",
            "rule": "6000 results repeat a case in all; the first 100 are listed",
        }
    assert _count("SELECT count(*) FROM runs") == 0
    # the same size without repeats, twice (one build, one machine): stored under the 256 MB limit, 6,000 pairs
    distinct = [make_bundle(results=[make_result(params={"n": i}) for i in range(6001)]) for _ in range(2)]
    assert [_upload(client, b).status_code for b in distinct] == [201, 201]
    assert _count("SELECT count(*) FROM aa_pairs") == 6001


def test_the_repeat_named_is_the_first_copy_and_the_repeated_one(client):
    results = [make_result(params={"n": i}) for i in range(5)]
    results.insert(4, make_result(params={"n": 2}, unit="ms", samples=[0.007]))  # the case of results[2], in ms
    body = _upload(client, make_bundle(results=results)).json()
    assert [e["field"] for e in body["errors"]] == ["results[4]"]
    assert body["errors"][0]["rule"].startswith("results[4] repeats the case of results[2]")


def test_the_cli_ingest_says_error_naming_both_positions(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MPSBENCH_DB", str(tmp_path / "cli.duckdb"))
    path = tmp_path / "repeat.json"
    path.write_text(json.dumps(_repeating(2)))
    assert db_cli(["ingest", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{path}: ERROR: invalid bundle"
    assert out[1].startswith("  results[1]: results[1] repeats the case of results[0]")
    assert out[2].startswith("  results[2]: results[2] repeats the case of results[0]")


def _runs_of_one_build(conn, runs: int, cases: int) -> None:
    """`runs` runs of torch 2.10.0 on mac-0 with `cases` ok op_time cases each (1 % apart from run to run)."""
    conn.exec_driver_sql(f"""INSERT INTO runs (run_seq, run_id, schema_version, bundle_sha256, ingested_at,
        started_at, complete, machine_name, chip, os, torch_version, channel, python_version, collector_version,
        command_line, device_type, device_name, env_json, libraries_json, tags_json, warnings_json, n_results)
      SELECT i + 1, md5('run' || i), 1, md5('sha' || i), now(), now(), true, 'm3u', 'Apple M3 Ultra', 'macOS',
        '2.15.0rc1', 'rc', '3.11', '0.1', '', 'mps', 'Apple M3 Ultra', '{{}}', '{{}}', '{{}}', '[]', {cases}
      FROM range({runs}) t(i)""")
    conn.exec_driver_sql(f"""INSERT INTO results (run_seq, result_id, run_id, workload, suite, case_key, params_json,
        dtype, compile, metric, unit, status, warnings_json, samples, n, median)
      SELECT r + 1, md5('run' || r) || ':' || j, md5('run' || r), 'softmax', 'kernels', '{{"n":' || j || '}}',
        '{{"n":' || j || '}}', 'float32', 'eager', 'op_time', 'µs', 'ok', '[]', [10.0 * (1 + 0.01 * (r % 3))], 1,
        10.0 * (1 + 0.01 * (r % 3))
      FROM range({runs}) a(r), range({cases}) b(j)""")


def test_pairs_at_200_runs_of_one_build_grow_linearly_and_a_new_run_pairs_with_its_10_latest():
    runs, cases = 199, 3
    engine = open_store(":memory:")
    try:
        with engine.begin() as conn:
            _runs_of_one_build(conn, runs, cases)
            backfill(conn)  # what the migration stores for runs already there: the same bound as ingest
        with engine.connect() as conn:
            stored = conn.exec_driver_sql("SELECT count(*) FROM aa_pairs").scalar()
        # every run pairs with at most its 10 predecessors: 3 × (0 + 1 + … + 9 + 10 × 189), not 3 × 199 · 198 / 2
        assert stored == cases * (sum(range(PARTNERS)) + PARTNERS * (runs - PARTNERS)) == 5805
        results = [make_result(params={"n": j}, samples=[10.0]) for j in range(cases)]
        new = make_bundle(machine={"name": "m3u", "os": "macOS", "chip": "Apple M3 Ultra"}, results=results)
        ingest_bundle(engine, new)  # the 200th run, through the real ingest
        with engine.connect() as conn:
            partners = (
                conn.execute(
                    text(
                        "SELECT DISTINCT p.seq_a FROM aa_pairs p JOIN runs n ON n.run_seq = p.seq_b "
                        "WHERE n.run_id = :r ORDER BY 1"
                    ),
                    {"r": new["run_id"]},
                )
                .scalars()
                .all()
            )
            total = conn.exec_driver_sql("SELECT count(*) FROM aa_pairs").scalar()
            cases_pairs = conn.exec_driver_sql("SELECT sum(pairs) FROM aa_cases").scalar()
        assert partners == list(range(runs - PARTNERS + 1, runs + 1))  # the 10 most recent: run_seq 190 … 199
        assert total == stored + cases * PARTNERS == cases_pairs
    finally:
        engine.dispose()


def test_a_request_past_the_memory_limit_is_a_503_naming_it_and_the_next_one_works(client, monkeypatch):
    monkeypatch.setenv("MPSBENCH_DUCKDB_MEMORY", "64MB")  # the store opens at the first request
    assert _upload(client, make_bundle()).status_code == 201
    big = make_bundle(
        results=[make_result(params={"n": i}, samples=[1.0 + k for k in range(200)]) for i in range(6000)]
    )  # 8 MB of JSON: DuckDB's parse needs more than 64 MB
    response = _upload(client, big)
    body = response.json()
    assert response.status_code == 503, body
    assert "more memory than the store may use (MPSBENCH_DUCKDB_MEMORY)" in body["error"]
    assert body["errors"][0]["field"] == "store" and response.headers["retry-after"]
    assert _upload(client, make_bundle()).status_code == 201
    assert client.get("/api/v1/health").json()["store"]["state"] == "ok"
    assert _count("SELECT count(*) FROM runs") == 2


def test_the_limits_come_from_the_machine_or_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("MPSBENCH_DUCKDB_MEMORY", raising=False)
    monkeypatch.setenv("MPSBENCH_DUCKDB_TEMP", "3GiB")
    engine = open_store(tmp_path / "s.duckdb")
    try:
        with engine.connect() as conn:
            memory, temp = conn.exec_driver_sql(
                "SELECT current_setting('memory_limit'), current_setting('max_temp_directory_size')"
            ).one()
    finally:
        engine.dispose()
    ram_gib = db.store.pool.MEMORY_SHARE * os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
    assert memory.endswith("GiB") and float(memory.split()[0]) == pytest.approx(ram_gib, rel=0.01)
    assert temp == "3.0 GiB"


def test_a_limit_that_is_not_a_size_is_refused_naming_the_variable(tmp_path, monkeypatch):
    from db.errors import StoreError

    monkeypatch.setenv("MPSBENCH_DUCKDB_MEMORY", "lots")
    with pytest.raises(StoreError) as refused:
        open_store(tmp_path / "s.duckdb")
    assert "MPSBENCH_DUCKDB_MEMORY='lots'" in refused.value.message
    assert refused.value.problems[0].field == "MPSBENCH_DUCKDB_MEMORY"
