""" "Faster but wrong" counts cases, not records: two runs of a candidate whose softmax got 2× faster while all
three correctness figures failed (tests/verdict_store.py, faster=True) are ONE case, with every failing metric."""

from __future__ import annotations

import pytest

import db.store.engine as store
from db.query.browse import CORRECTNESS_METRICS
from db.views.browse.correctness import correctness_view, faster_but_wrong
from tests import verdict_store as v


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    engine = store.open_store(tmp_path_factory.mktemp("fbw") / "v.duckdb")
    v.verdict_store(engine, faster=True)
    yield engine
    engine.dispose()


def test_one_row_per_case_with_every_failing_metric(engine):
    wrong = faster_but_wrong(engine)
    assert (
        len(wrong) == 1
    )  # per record it was 2 runs × 2 failing metrics = 4 rows (max_rel_error sits at its tolerance)
    row = wrong.iloc[0]
    failing = [
        name
        for name, value, tol in zip(("psnr_vs_cpu", "max_abs_error", "max_rel_error"), v.CORRECT[True], v.TOL)
        if (value < tol if name == "psnr_vs_cpu" else value > tol)
    ]
    assert row.failed_metrics == ", ".join(sorted(failing)) and row.runs == 2
    baseline_us = sum(v.NOISE_RUNS[False]) / 2
    assert row.speedup_vs_previous == pytest.approx(baseline_us / v.FASTER_US, rel=0.01)
    assert row.previous_build.startswith("2.14.1") and row.build.startswith("2.15.0rc1")
    assert wrong.columns[0] == "case" and not row.case.startswith("{")  # a name for people, not the raw key
    assert list(wrong.columns[-4:]) == ["workload", "case_key", "dtype", "compile"]  # raw keys pinned last


def test_max_rel_error_is_a_correctness_metric(engine):
    assert "max_rel_error" in CORRECTNESS_METRICS
    view = correctness_view(engine, {"metric": "max_rel_error"})
    assert sorted(view.records["median"]) == sorted([v.CORRECT[False][2]] * 2 + [v.CORRECT[True][2]] * 2)


def test_only_the_op_time_records_of_cases_that_failed_are_read(engine, monkeypatch):
    """A read bounded by what the answer can use: the verdict store's other op_time cases (linear, on both
    machines) never failed correctness, so none of their records is read (reading every op_time record took a
    2.5 M-result store to 6.4 GB)."""
    import db.views.browse.correctness as view

    read = []
    real = view.results
    monkeypatch.setattr(view, "results", lambda *a, **k: read.append(real(*a, **k)) or read[-1])
    wrong = faster_but_wrong(engine)
    everything = real(engine, metrics=["op_time"])
    assert len(wrong) == 1 and len(read) == 2  # the op_time read, and the correctness records
    op_time = read[0]
    assert set(op_time.workload) == {"softmax"} and 0 < len(op_time) < len(everything)
    assert set(everything.workload) > {"softmax"}  # the store does hold other op_time cases
