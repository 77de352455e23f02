"""A clean stop (SIGTERM to `mpsbench serve`) checkpoints the store: the `.duckdb` alone — copied without
its `.wal`, as a file backup would — holds every run the server acknowledged. Before, they sat only in the WAL."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import httpx
from sqlalchemy import text

from db.store.engine import open_store
from tests.bundles import make_bundle
from tests.test_browser_compare import ROOT, _free_port, _wait_healthy

TOKEN = "stop-test-token"


def test_a_sigterm_leaves_every_acknowledged_run_in_the_store_file(tmp_path):
    path = tmp_path / "stop.duckdb"
    open_store(path).dispose()
    port = _free_port()
    env = {**os.environ, "MPSBENCH_DB": str(path), "MPSBENCH_UPLOAD_TOKENS": f"stop={TOKEN}", "PYTHONPATH": str(ROOT)}
    env.pop("MPSBENCH_NOTIFY_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpsbench", "serve", "--address", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(base, proc)
        bundle = make_bundle()
        answer = httpx.post(
            f"{base}/api/v1/runs",
            json=bundle,
            timeout=60.0,
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        )
        assert answer.status_code == 201, answer.text
        wal = path.with_name(path.name + ".wal")
        assert wal.exists() and wal.stat().st_size > 0  # acknowledged: in the WAL so far
        os.killpg(proc.pid, signal.SIGTERM)  # our own process group, started above
        _, err = proc.communicate(timeout=60)
        # uvicorn re-raises the signal it handled once its shutdown (the lifespan's too) is done: -SIGTERM
        assert proc.returncode in (0, -signal.SIGTERM), err[-2000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    assert not wal.exists() or wal.stat().st_size == 0, ("the stop left the run in the WAL only", err[-2000:])
    alone = tmp_path / "copy" / "alone.duckdb"
    alone.parent.mkdir()
    shutil.copyfile(path, alone)  # the file alone, no WAL beside it
    engine = open_store(alone)
    try:
        with engine.connect() as conn:
            stored = conn.execute(text("SELECT run_id FROM runs")).scalars().all()
        assert stored == [bundle["run_id"]]
    finally:
        engine.dispose()
