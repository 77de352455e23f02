"""Reads give their memory back (issue 46): answers written in slices are byte for byte what JSONResponse sent, the
memoised reviews stay within their budget, the last read in flight retires the store's buffer pool, an idle server
forgets its memo; the benchmark itself: tests/test_benchmarks.py::test_read_memory_benchmark_tiny."""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import pytest
from starlette.responses import JSONResponse

import db.store.engine as store
from api.stream import ROWS, _body, streamed_json
from db import memory
from db.query.json_values import records
from db.review import cache


def _frame(rows: int) -> pd.DataFrame:
    values = np.arange(rows, dtype=float)
    values[::7] = np.nan  # NaN and inf become null
    values[3::11] = np.inf
    return pd.DataFrame(
        {
            "case": [f"softmax · rows={i} · µs “quoted” \\ / \u2060" for i in range(rows)],
            "value": values,
            "n": np.arange(rows),
            "ok": np.arange(rows) % 2 == 0,
            "when": pd.Timestamp("2026-12-06 08:00", tz="UTC") + pd.to_timedelta(np.arange(rows), "s"),
            "list": [[i, None] for i in range(rows)],
        }
    )


@pytest.mark.parametrize("rows", [0, 1, ROWS - 1, ROWS, 2 * ROWS + 3])
def test_a_streamed_answer_is_the_bytes_jsonresponse_sent(rows):
    frame = _frame(rows)
    content = {
        "ok": True,
        "baseline": "torch=2.14.1",
        "cases": frame,
        "summary": {"groups": frame.head(3), "notes": ["ä", 1.5, None]},
        "counts": {"improved": 1},
        "empty": frame.iloc[:0],
    }
    plain = {
        **content,
        "cases": records(frame),
        "summary": {"groups": records(frame.head(3)), "notes": ["ä", 1.5, None]},
        "empty": [],
    }
    assert b"".join(_body(dict(content))) == JSONResponse(plain).body
    reply = streamed_json(content)
    assert reply.media_type == "application/json" and reply.status_code == 200


def test_the_memo_keeps_each_newest_answer_and_the_rest_within_the_budget(monkeypatch):
    monkeypatch.setattr(cache, "_MEMOS", [])  # these two alone (the review's own memos may hold answers)
    monkeypatch.setattr(cache, "BUDGET_MB", 3.5)
    monkeypatch.setattr(cache, "read_data_version", lambda engine: "v1")
    first, second = cache.Memo(), cache.Memo()
    big = lambda: pd.DataFrame({"x": np.zeros(2**17)})  # noqa: E731 - 1 MiB each
    for i in range(5):
        first.get(None, ("q", i), big)
    assert first.bytes() <= 3.5 * 2**20 and [k[2] for k in first._items] == [("q", 2), ("q", 3), ("q", 4)]
    second.get(None, "huge", lambda: pd.DataFrame({"x": np.zeros(2**20)}))  # 8 MiB: over the budget alone
    assert len(second._items) == 1 and len(first._items) == 1  # each keeps its newest, the rest go
    calls = []
    assert second.get(None, "huge", lambda: calls.append(1)) is not None and calls == []  # still a hit


def test_footprint_counts_frames_arrays_and_nested_answers_once():
    frame = pd.DataFrame({"x": np.zeros(1000)})
    both = {"a": frame, "b": [frame, np.zeros(10)], "c": "text"}
    assert cache.footprint(both) == frame.memory_usage(deep=True).sum() + 80


def test_the_last_read_in_flight_settles_the_process(monkeypatch):
    ran = []
    monkeypatch.setattr(memory, "_settle_hooks", [lambda: ran.append("settled")])
    with memory.busy():
        with memory.busy():
            pass
        assert ran == []  # one still in flight
    assert ran == ["settled"]


def test_an_idle_process_runs_its_idle_hooks_once(monkeypatch):
    fired = threading.Event()
    monkeypatch.setattr(memory, "_idle_hooks", [fired.set])
    monkeypatch.setattr(memory, "_watcher", None)
    monkeypatch.setenv("MPSBENCH_IDLE_RELEASE_S", "0.2")
    memory.watch_idle()
    try:
        with memory.busy():
            time.sleep(0.3)
            assert not fired.is_set()  # never while a read is in flight
        assert fired.wait(5.0)
        fired.clear()
        time.sleep(0.5)
        assert not fired.is_set()  # once an idle spell (then only `release`, every 0.2 s)
    finally:
        memory.stop_watching()  # no idle thread left for the other tests


def test_a_settled_file_store_is_retired_and_reopens_at_the_next_read(tmp_path, monkeypatch):
    from db.query.read import read_frame
    from db.store.pool import buffer_bytes

    monkeypatch.setenv("MPSBENCH_DB", str(tmp_path / "s.duckdb"))
    monkeypatch.setattr(store, "SETTLE_MB", 0)
    engine = store.shared_store()
    try:
        read_frame(engine, "SELECT count(*) FROM results")
        assert buffer_bytes(engine) is not None  # open, holding its blocks
        store.settle_shared()
        assert buffer_bytes(engine) is None  # retired; nothing opened to ask
        assert read_frame(engine, "SELECT count(*) AS n FROM runs")["n"].iloc[0] == 0  # reopened
    finally:
        engine.dispose()
        store._shared.pop(store.store_path(), None)


def test_a_server_reads_with_its_own_duckdb_memory_once_its_store_is_open(tmp_path, monkeypatch):
    from db.query.read import read_frame
    from db.store import pool

    monkeypatch.setattr(pool, "_serving", False)  # this test process is no server, after this test either
    monkeypatch.delenv("MPSBENCH_DUCKDB_MEMORY", raising=False)
    engine = store.open_store(tmp_path / "s.duckdb")
    limit = lambda: read_frame(engine, "SELECT current_setting('memory_limit') AS m")["m"].iloc[0]  # noqa: E731
    try:
        assert limit() != "256.0 MiB"  # opened (a migration would run here) with half the RAM
        pool.serve_limits(engine)
        assert limit() == "256.0 MiB"  # the open database at once
        engine.dispose()
        assert limit() == "256.0 MiB"  # and every reopened one
        monkeypatch.setenv("MPSBENCH_DUCKDB_MEMORY", "512MiB")
        engine.dispose()
        assert limit() == "512.0 MiB"  # the variable still decides
    finally:
        engine.dispose()


def test_a_bad_idle_release_names_the_variable_and_zero_turns_it_off(monkeypatch):
    monkeypatch.setattr(memory, "_watcher", None)
    monkeypatch.setenv("MPSBENCH_IDLE_RELEASE_S", "soon")
    with pytest.raises(ValueError, match="MPSBENCH_IDLE_RELEASE_S='soon' is not a number of seconds"):
        memory.watch_idle()
    assert memory._watcher is None
    monkeypatch.setenv("MPSBENCH_IDLE_RELEASE_S", "0")
    memory.watch_idle()
    assert memory._watcher is None  # 0: never
    monkeypatch.delenv("MPSBENCH_IDLE_RELEASE_S")
    assert memory.idle_seconds() == memory.IDLE_S


def test_malloc_arena_max_set_is_glibcs_own_and_left_to_it(monkeypatch):
    monkeypatch.setenv("MALLOC_ARENA_MAX", "not a number")  # glibc reads (or ignores) it itself: never a traceback
    assert memory.limit_arenas() is False
