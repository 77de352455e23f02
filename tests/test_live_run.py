"""The dashboard is up while the first run collects (issue 44, item 5): `mpsbench run --status-file` keeps the run's
live status (collector.console.live), the Overview and its twin show it (db.views.release.live_run), and a file that is not a
status is no live run, never an error."""

from __future__ import annotations

import json
import time

import pytest

from collector.console.live import LiveStatus
from db.views.release.live_run import STALE_S, live_run
from tests.page_store import open_page, page_store


@pytest.fixture(autouse=True)
def fake_catalog(monkeypatch):
    monkeypatch.setenv("MPSBENCH_CATALOG", "tests.fake_workloads")
    monkeypatch.setenv("MPSBENCH_PROCESSES", "2")


def test_a_run_keeps_its_status_to_the_end_with_each_finished_case_and_its_unit(tmp_path, capsys):
    from collector.cli.main import main

    status = tmp_path / "live.json"
    code = main(
        ["run", "--out", str(tmp_path), "--workload", "fake_add", "--idle-wait", "0", "--status-file", str(status)]
    )
    assert code == 0, capsys.readouterr().out
    found = json.loads(status.read_text())
    assert found["state"] == "finished" and found["doing"].startswith("written to ")
    assert found["done"] == found["total"] > 0  # every case in each of the 2 worker processes
    [bundle] = [p for p in tmp_path.glob("*.json") if p != status]
    assert found["run_id"] in bundle.name
    first = found["finished_cases"][-1]  # newest first: the last one listed finished first
    assert first["case"].startswith("fake_add") and first["unit"] and first["median"] > 0
    assert live_run(str(status)).state == "finished" and not live_run(str(status)).running


def test_a_running_status_is_live_a_silent_one_is_stopped_and_garbage_is_none(tmp_path):
    path = tmp_path / "live.json"
    live = LiveStatus(path, "ab" * 16, "Apple M4 Pro", 20)
    live.doing("waiting up to 30 s for an idle machine: other processes take 70 % of the cores")
    now = live_run(str(path))
    assert now.running and now.doing.startswith("waiting up to 30 s") and (now.done, now.total) == (0, 20)
    quiet = json.loads(path.read_text()) | {"updated_at": time.time() - STALE_S - 1}
    path.write_text(json.dumps(quiet))
    assert live_run(str(path)).state == "stopped"  # a run that died without a word is not "collecting"
    for garbage in ("{not json", json.dumps({"run_id": "x"}), json.dumps([1, 2]), ""):
        path.write_text(garbage)
        assert live_run(str(path)) is None
    assert live_run(str(tmp_path / "absent.json")) is None and live_run("") is None


def test_the_overview_shows_the_collecting_run_before_any_run_is_stored(tmp_path, monkeypatch):
    from db.store.engine import open_store
    from db.views.release.overview import overview

    status = tmp_path / "live.json"
    live = LiveStatus(status, "cd" * 16, "Apple M4 Pro", 330)
    live.doing("softmax · 1×128256 · fp32 · process 3/10")
    monkeypatch.setenv("MPSBENCH_LIVE", str(status))
    path = page_store(tmp_path, monkeypatch)
    engine = open_store(path)
    assert overview(engine).live["doing"] == "softmax · 1×128256 · fp32 · process 3/10"  # the JSON twin
    engine.dispose()
    at = open_page("overview.py")
    texts = " ".join(m.value for m in at.markdown) + " ".join(t.value for t in at.text)
    assert not at.exception and "Collecting on this machine" in texts and "process 3/10" in texts
    live.end("finished", "stored")
    engine = open_store(path)
    assert overview(engine).live is None  # once stored, the page reads the run itself
    engine.dispose()
