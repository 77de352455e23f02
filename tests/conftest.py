"""Session-wide test settings, and the fixtures more than one module uses (a module that needs a store of its own
defines a fixture of the same name, which wins there)."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

# Collector runs in the tests (CLI, sweeps, benchmarks at tiny size) use two worker processes: the multi-process
# path is exercised, at a fifth of the default's cost on a 2-core machine. Tests of the default set their own.
os.environ.setdefault("MPSBENCH_PROCESSES", "2")


@pytest.fixture(autouse=True)
def not_a_server():
    """A page test runs app.py in this process, and app.py marks the process a server (db.store.pool.serve_limits:
    its stores read with 256 MiB of DuckDB memory): each test starts as the CLI does, with its share of the RAM."""
    from db.store import pool

    serving = pool._serving
    pool._serving = False
    yield
    pool._serving = serving


@pytest.fixture
def engine(tmp_path):
    """An empty store of the newest version, on disk."""
    from db.store.engine import open_store

    engine = open_store(tmp_path / "store.duckdb")
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """benchmarks/stores/seed.py's store (two builds, two chips), read-only."""
    from benchmarks.stores.seed import seed_store
    from db.store.engine import open_store

    engine = open_store(tmp_path_factory.mktemp("seeded") / "s.duckdb")
    seed_store(engine)
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def verdict_engine(tmp_path_factory):
    """tests/verdict_store.py's store of known verdicts, read-only."""
    from db.store.engine import open_store
    from tests.verdict_store import verdict_store

    engine = open_store(tmp_path_factory.mktemp("verdicts") / "v.duckdb")
    verdict_store(engine)
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def postgres():
    """A PostgreSQL server of benchmarks/stores/pg_lake.py's (DuckLake's catalog), skipped where none can run."""
    from benchmarks.stores.pg_lake import Postgres, why_not

    reason = why_not()
    if reason:
        pytest.skip(reason)
    # a short path of its own: pytest's tmp folders are private to root (unreadable to `nobody`), and a unix
    # socket's path must stay under ~100 characters
    folder = Path(tempfile.mkdtemp(prefix="mpsbench-pg-"))
    pg = Postgres(folder)
    try:
        pg.init()
        pg.start()
        yield pg
    finally:
        pg.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def server(tmp_path):
    """benchmarks/stores/seed.py's store served by `streamlit run app.py` (the browser tests' server): its base URL."""
    from tests.test_browser_compare import serving

    with serving(tmp_path) as base:
        yield base
