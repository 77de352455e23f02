"""A real v0 store file (before the meta table; results without passed/tolerance) opens, migrates, keeps its
data and takes new bundles; a store from a newer mpsbench is refused."""

import duckdb
import pytest
from sqlalchemy import text

from db.errors import StoreError
from db.ingest.core import ingest_bundle
from db.store.engine import open_store
from db.store.tables import STORE_VERSION
from tests.bundles import make_bundle

V0_DDL = """
CREATE TABLE runs (run_id VARCHAR PRIMARY KEY, schema_version INTEGER NOT NULL, bundle_sha256 VARCHAR NOT NULL,
  ingested_at TIMESTAMPTZ NOT NULL, started_at TIMESTAMPTZ NOT NULL, ended_at TIMESTAMPTZ, complete BOOLEAN NOT NULL,
  machine_name VARCHAR NOT NULL, chip VARCHAR, hw_model VARCHAR, gpu_name VARCHAR, gpu_cores INTEGER, cpu_model VARCHAR,
  memory_bytes BIGINT, os VARCHAR NOT NULL, os_version VARCHAR, arch VARCHAR, power_source VARCHAR,
  low_power_mode BOOLEAN, thermal_state VARCHAR, torch_version VARCHAR NOT NULL, git_hash VARCHAR,
  channel VARCHAR NOT NULL, nightly_date VARCHAR, local_variant VARCHAR, debug BOOLEAN, python_version VARCHAR NOT NULL,
  collector_version VARCHAR NOT NULL, command_line VARCHAR NOT NULL, device_type VARCHAR NOT NULL,
  device_name VARCHAR NOT NULL, env_json VARCHAR NOT NULL, tags_json VARCHAR NOT NULL, warnings_json VARCHAR NOT NULL,
  n_results INTEGER NOT NULL);
CREATE TABLE run_tags (run_id VARCHAR, key VARCHAR, value VARCHAR NOT NULL, PRIMARY KEY (run_id, key));
CREATE TABLE results (result_id VARCHAR PRIMARY KEY, run_id VARCHAR NOT NULL, workload VARCHAR NOT NULL,
  suite VARCHAR NOT NULL, case_key VARCHAR NOT NULL, params_json VARCHAR NOT NULL, dtype VARCHAR NOT NULL,
  compile VARCHAR NOT NULL, metric VARCHAR NOT NULL, unit VARCHAR NOT NULL, status VARCHAR NOT NULL, message VARCHAR,
  warnings_json VARCHAR NOT NULL, samples DOUBLE[], n INTEGER NOT NULL, median DOUBLE, mean DOUBLE, min DOUBLE,
  max DOUBLE, p25 DOUBLE, p75 DOUBLE, stdev DOUBLE);
INSERT INTO runs VALUES ('0123456789abcdef0123456789abcdef', 1, 'f00d', '2026-01-02 10:00:00+00',
  '2026-01-02 09:00:00+00', '2026-01-02 09:05:00+00', TRUE, 'old-m1', 'Apple M1', NULL, NULL, 8, NULL, 17179869184,
  'macOS', '14.6', 'arm64', 'ac', FALSE, NULL, '2.14.1', NULL, 'stable', NULL, NULL, FALSE, '3.11.7', '0.0.9', '',
  'mps', 'Apple M1', '{}', '{"role": "baseline"}', '[]', 2);
INSERT INTO run_tags VALUES ('0123456789abcdef0123456789abcdef', 'role', 'baseline');
INSERT INTO results VALUES
  ('0123456789abcdef0123456789abcdef:0', '0123456789abcdef0123456789abcdef', 'softmax', 'kernels',
   '{"rows":1,"vocab":128256}', '{"rows": 1, "vocab": 128256}', 'float32', 'eager', 'op_time', 'µs', 'ok', NULL, '[]',
   [7.0, 8.0, 9.0], 3, 8.0, 8.0, 7.0, 9.0, 7.5, 8.5, 1.0),
  ('0123456789abcdef0123456789abcdef:1', '0123456789abcdef0123456789abcdef', 'softmax', 'kernels',
   '{"rows":1,"vocab":128256}', '{"rows": 1, "vocab": 128256}', 'float32', 'eager', 'memory_reserved_peak', 'B',
   'unavailable', 'device has no allocator API', '[]', [], 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
"""


@pytest.fixture
def v0_file(tmp_path):
    path = tmp_path / "v0.duckdb"
    raw = duckdb.connect(str(path))
    raw.execute(V0_DDL)
    raw.close()
    return path


def _tables(conn) -> set[str]:
    return {r[0] for r in conn.execute(text("SELECT table_name FROM information_schema.tables"))}


def test_v0_file_is_migrated_in_place_and_keeps_its_data(v0_file):
    with duckdb.connect(str(v0_file)) as raw:  # the fixture really is v0
        assert "meta" not in {r[0] for r in raw.execute("SHOW TABLES").fetchall()}
        assert "passed" not in {r[0] for r in raw.execute("DESCRIBE results").fetchall()}
    engine = open_store(v0_file)
    with engine.connect() as conn:
        version = conn.execute(text("SELECT value FROM meta WHERE key='store_version'")).scalar()
        run = conn.execute(text("SELECT machine_name, torch_version, memory_bytes, n_results FROM runs")).one()
        rows = conn.execute(
            text("SELECT metric, unit, status, median, samples, passed, tolerance FROM results ORDER BY result_id")
        ).fetchall()
        tag = conn.execute(text("SELECT key, value FROM run_tags")).one()
        assert {"meta", "review_notes"} <= _tables(conn)
    engine.dispose()
    assert version == str(STORE_VERSION) and STORE_VERSION >= 1
    assert tuple(run) == ("old-m1", "2.14.1", 16 * 1024**3, 2) and tuple(tag) == ("role", "baseline")
    assert [tuple(r) for r in rows] == [
        ("op_time", "µs", "ok", 8.0, [7.0, 8.0, 9.0], None, None),
        ("memory_reserved_peak", "B", "unavailable", None, [], None, None),
    ]


def test_migrated_file_takes_a_new_bundle_and_reopens_at_the_current_version(v0_file):
    engine = open_store(v0_file)
    build = make_bundle()["build"] | {"libraries": {"transformers": "5.25.0"}}
    out = ingest_bundle(engine, make_bundle(build=build))
    engine.dispose()
    engine = open_store(v0_file)  # second open: already current, nothing migrated twice
    with engine.connect() as conn:
        runs = conn.execute(text("SELECT count(*) FROM runs")).scalar()
        psnr = conn.execute(
            text("SELECT passed, tolerance FROM results WHERE run_id=:r AND metric='psnr_vs_cpu'"), {"r": out.run_id}
        ).one()
        versions = conn.execute(text("SELECT count(*) FROM meta WHERE key='store_version'")).scalar()
        libraries = dict(conn.execute(text("SELECT run_id, libraries_json FROM runs")).fetchall())
    engine.dispose()
    assert (out.created, out.n_results, runs, tuple(psnr), versions) == (True, 6, 2, (True, 40.0), 1)
    # the v0 run recorded no library versions; the new one keeps its own
    assert libraries == {"0123456789abcdef0123456789abcdef": "{}", out.run_id: '{"transformers": "5.25.0"}'}


def test_store_from_a_newer_mpsbench_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "future.duckdb"
    engine = open_store(path)
    with engine.begin() as conn:
        conn.execute(text("UPDATE meta SET value=:v WHERE key='store_version'"), {"v": str(STORE_VERSION + 1)})
    engine.dispose()
    with pytest.raises(StoreError) as caught:
        open_store(path)
    expected = f"store version {STORE_VERSION + 1} is newer than this mpsbench ({STORE_VERSION}); upgrade"
    assert caught.value.message == expected
    with duckdb.connect(str(path)) as raw:  # not overwritten with this code's version
        assert raw.execute("SELECT value FROM meta WHERE key='store_version'").fetchone()[0] == str(STORE_VERSION + 1)


def test_a_reading_command_migrates_an_old_store_once_then_reads_it(v0_file):
    """open_reader opens read-only, so an old store is first migrated by a writer (as every open did before), then
    read: its one run is there, and the file is left at the current version, checkpointed."""
    from db.store.engine import reading

    with reading(str(v0_file)) as engine, engine.connect() as conn:
        assert conn.execute(text("SELECT run_id FROM runs")).scalars().all() == ["0123456789abcdef0123456789abcdef"]
    with duckdb.connect(str(v0_file), read_only=True) as raw:
        assert raw.execute("SELECT value FROM meta WHERE key='store_version'").fetchone()[0] == str(STORE_VERSION)
    assert not v0_file.with_name(v0_file.name + ".wal").exists()


def test_a_reading_command_refuses_a_store_from_a_newer_mpsbench(tmp_path):
    from db.store.engine import reading

    path = tmp_path / "future.duckdb"
    engine = open_store(path)
    with engine.begin() as conn:
        conn.execute(text("UPDATE meta SET value=:v WHERE key='store_version'"), {"v": str(STORE_VERSION + 1)})
    engine.dispose()
    with pytest.raises(StoreError) as caught, reading(str(path)):
        pass
    assert caught.value.message.startswith(f"store version {STORE_VERSION + 1} is newer than this mpsbench")
