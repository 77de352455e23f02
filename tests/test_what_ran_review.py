"""What ran reaches the review (issue 48, items 2 and 3): on a store with a planted change of path
(tests/what_ran_store.py: softmax ran aten::softmax → aten::_softmax on the baseline, aten::log_softmax →
aten::_log_softmax and aten::exp on the candidate; linear with no breakdown), Compare's case detail (its view and
its panel under AppTest), GET /api/v1/compare, the Regressions list and the bisect answer name the path change and
the entry that moved most, in µs; a case with no breakdown says so. The expected words are written out here from
the planted figures, not computed by the code under test."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import streamlit as st
from starlette.applications import Starlette
from starlette.testclient import TestClient

import db.store.engine
from app import api_routes
from db.review.comparison import CompareQuery
from db.review.release.summary import review_answer
from db.review.review import Review
from db.store.engine import open_store
from db.views.release.regressions import regressions_view
from db.views.release.what_ran import LABEL_WIDTH, TOP_ENTRIES, breakdown_bars, case_what_ran, compare_what_ran
from mpsbench.workflows import bisect as bisect_cli
from mpsbench.workflows.bisect_search import Search
from mpsbench.workflows.bisect_steps import State, _figures
from pages.parts.what_ran import what_ran_chart
from tests.page_store import open_page
from tests.what_ran_store import BASELINE, CANDIDATE, LINEAR, SOFTMAX, fill

# the planted breakdowns in words: each side's aten ops, the largest device time first; _softmax's 40 µs per op
# call is gone on the candidate (the largest move: |−40| > _log_softmax's +35 > exp's +25)
CHANGE = (
    "path changed: softmax ran aten::_log_softmax, aten::exp, aten::log_softmax instead of aten::_softmax, "
    "aten::softmax"
)
MOVED = "aten::_softmax: gone (was 40 µs per op call)"
WORDS = f"{CHANGE}; moved most: {MOVED}"
NO_BREAKDOWN = "what ran: not compared: no breakdown on either side (`mpsbench run --kernels` records one)"
SIDES = {"baseline": BASELINE, "candidate": CANDIDATE}


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    path = tmp_path_factory.mktemp("what_ran") / "store.duckdb"
    engine = open_store(path)
    fill(engine)
    engine.dispose()
    return path


@pytest.fixture
def engine(stored):
    found = open_store(stored)
    yield found
    found.dispose()


def _case(key: tuple[str, str, str, str], scope: str = "x86_64") -> dict[str, str]:
    return dict(zip(("workload", "case_key", "dtype", "compile"), key), scope=scope, device="cpu")


def test_the_case_detail_names_the_path_change_and_draws_both_sides_in_cpu_microseconds(engine):
    query = CompareQuery.from_params({**SIDES, "scope": "chip"})
    found = case_what_ran(engine, query, _case(SOFTMAX))
    assert found.what_ran.words() == WORDS and found.what_ran.path_changed
    assert found.device == "CPU" and found.axis == "CPU time per op call (µs)"
    assert "CPU figures, not MPS ones" in found.note
    bars = {(r.side.split()[0], r.name): r.device_time_us for r in found.bars.itertuples()}
    assert bars == {
        ("baseline", "aten::_softmax"): 40.0,
        ("baseline", "aten::softmax"): 2.0,
        ("candidate", "aten::_log_softmax"): 35.0,
        ("candidate", "aten::exp"): 25.0,
        ("candidate", "aten::log_softmax"): 1.5,
    }
    chart = what_ran_chart(found.bars, found.axis)
    assert chart.to_dict(validate=True)["encoding"]["x"]["title"] == "CPU time per op call (µs)"
    none = case_what_ran(engine, query, _case(LINEAR))
    assert none.bars.empty and none.what_ran.line() == NO_BREAKDOWN
    assert none.note == "No breakdown on either side of this case: `mpsbench run --kernels` records one (CPU)."


def test_every_listed_case_is_read_in_one_query_however_many(engine, monkeypatch):
    """One SQL read for all the rows (never one per row); past MANY cases the sides' breakdowns are read whole and
    picked here: the same answer."""
    import db.query.what_ran as query_what_ran

    reads = []
    real = query_what_ran.read_frame
    monkeypatch.setattr(query_what_ran, "read_frame", lambda *a, **k: reads.append(a[1]) or real(*a, **k))
    query = CompareQuery.from_params(SIDES)
    rows = pd.DataFrame([_case(SOFTMAX, "linux-1"), _case(LINEAR, "linux-1")] * 3)
    listed = compare_what_ran(engine, query, rows)
    assert len(reads) == 1 and "VALUES" in reads[0]
    assert listed.what_ran.tolist() == [WORDS, NO_BREAKDOWN] * 3
    monkeypatch.setattr(query_what_ran, "MANY", 1)
    again = compare_what_ran(engine, query, rows)
    assert len(reads) == 2 and "VALUES" not in reads[1] and again.what_ran.tolist() == listed.what_ran.tolist()


@pytest.fixture
def client(stored, monkeypatch):
    monkeypatch.setenv("MPSBENCH_DB", str(stored))
    monkeypatch.setattr(db.store.engine, "_shared", {})
    yield TestClient(Starlette(routes=api_routes()), client=("127.0.0.1", 50000), base_url="http://127.0.0.1")
    for found in db.store.engine._shared.values():
        found.dispose()


def test_the_compare_twin_carries_what_ran_per_case(client):
    got = client.get("/api/v1/compare", params={**SIDES, "scope": "chip"})
    assert got.status_code == 200, got.text
    rows = {r["workload"]: r for r in got.json()["cases"]}
    softmax, linear = rows["softmax"], rows["linear"]
    assert softmax["what_ran"] == WORDS and softmax["path_changed"] is True
    moved = softmax["what_ran_detail"]["moved"][0]
    assert (moved["name"], moved["baseline_us"], moved["candidate_us"], moved["unit"]) == (
        "aten::_softmax",
        40,
        0,
        "µs",
    )
    assert softmax["what_ran_detail"]["baseline_us"] == 42.0 and softmax["what_ran_detail"]["candidate_us"] == 61.5
    assert linear["what_ran"] == NO_BREAKDOWN and linear["path_changed"] is False and linear["what_ran_detail"] is None


def test_a_regression_whose_path_changed_says_so_first(engine):
    answer = review_answer(engine, Review.from_params(SIDES))
    found = {r["workload"]: r for r in answer["regressions"]}
    assert set(found) == {"softmax", "linear"}
    assert found["softmax"]["why"] == f"{CHANGE}; significant slowdown"
    assert found["softmax"]["what_ran"] == WORDS
    assert found["linear"]["why"] == "significant slowdown" and found["linear"]["what_ran"] == NO_BREAKDOWN
    page = regressions_view(engine, Review.from_params(SIDES)).found  # the page's table: the same words
    assert page.set_index("workload").loc["softmax", ["why", "what_ran"]].tolist() == [found["softmax"]["why"], WORDS]


def test_the_bisect_answer_names_the_path_change_between_last_good_and_first_bad(engine):
    """The answer prints the rows its last step kept of the review (bisect_steps._figures): first bad vs last good."""
    answer = review_answer(engine, Review.from_params(SIDES))
    rows = [_figures(r) for r in answer["regressions"] if r["workload"] == "softmax"]
    state = State({"builds": ["2.14.1", "2.15.0"]})
    state.verdicts.append({"step": 1, "index": 1, "verdict": "bad", "rounds": 1, "rows": rows})
    search = Search(["2.14.1", "2.15.0"])

    class Labels:
        def label(self, index: int) -> str:
            return ["2.14.1", "2.15.0"][index]

    lines: list[str] = []
    assert bisect_cli._answer(search, state, Labels(), lines.append) == 0
    assert f"    what ran: {WORDS}" in lines


def test_the_compare_page_shows_the_panel(stored, monkeypatch):
    monkeypatch.setenv("MPSBENCH_DB", str(stored))
    st.cache_resource.clear()
    st.cache_data.clear()
    at = open_page("compare.py", {**SIDES, "scope": "chip"})
    assert not at.exception, [e.value for e in at.exception]
    texts = [t.value for t in at.text]
    assert WORDS in texts  # softmax, the worst regression, is the case detail's first case
    assert "What ran, CPU (torch.profiler (CPU self time); CPU figures, not MPS ones): each side's device time per " \
        "op call by entry, µs." in texts  # fmt: skip
    charts = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    assert len(charts) == 3  # the ratios, the samples, what ran
    assert charts[-1]["encoding"]["x"]["title"] == "CPU time per op call (µs)"
    [menu] = [s for s in at.selectbox if str(s.key).startswith("cmp_case_")]
    menu.select_index(next(i for i, o in enumerate(menu.options) if " · linear · " in o)).run()
    assert not at.exception, [e.value for e in at.exception]
    texts = [t.value for t in at.text]
    assert "No breakdown on either side of this case: `mpsbench run --kernels` records one (CPU)." in texts
    assert WORDS not in texts and len(at.get("vega_lite_chart")) == 2


def test_the_bars_cut_long_names_and_stack_the_smallest_as_other():
    """A CUDA kernel's template name runs to hundreds of characters: cut to LABEL_WIDTH on the chart, whole in the
    tooltip; past TOP_ENTRIES the smaller entries are one "other" segment with their summed µs."""
    long = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(" + "x" * 200 + ")"
    entries = [{"name": long, "kind": "device_kernel", "calls_per_call": 1.0, "device_time_us": 50.0, "share": 0.5}]
    entries += [
        {"name": f"k{i}", "kind": "device_kernel", "calls_per_call": 1.0, "device_time_us": 10.0 - i, "share": 0.05}
        for i in range(10)
    ]
    side = {"status": "ok", "metric": "op_time", "profiler": "torch.profiler", "entries": entries}
    bars = breakdown_bars([side], [], "baseline", "candidate")
    assert set(bars.side) == {"baseline"} and len(bars) == TOP_ENTRIES + 1
    [cut] = bars[bars.name == long].entry
    assert len(cut) == LABEL_WIDTH and cut.endswith("…") and long.startswith(cut[:-1])
    [other] = bars[bars.kind == "other"].itertuples()
    assert other.entry == "other (3 entries)" and other.device_time_us == pytest.approx(3.0 + 2.0 + 1.0)
    assert bars.device_time_us.sum() == pytest.approx(50.0 + sum(10.0 - i for i in range(10)))
