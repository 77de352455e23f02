"""The Compare, Regressions, Matrix and Correctness pages under AppTest on the seeded store (benchmarks/stores/seed.py): the
status-change panel, a case's detail, the correctness slope counts, and empty comparisons that say why."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from benchmarks.stores.seed import BASELINE, CANDIDATE, seed_store
from db.store.engine import open_store

SCRIPT = str(Path(__file__).resolve().parent.parent / "pages" / "navigation.py")
SIDES = {"baseline": BASELINE, "candidate": CANDIDATE}


@pytest.fixture(scope="module")
def seeded_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("panels") / "seed.duckdb"
    engine = open_store(path)
    seed_store(engine)
    engine.dispose()
    return path


@pytest.fixture
def seeded(seeded_path, monkeypatch):
    monkeypatch.setenv("MPSBENCH_DB", str(seeded_path))
    st.cache_resource.clear()
    st.cache_data.clear()


def _page(file: str, query: dict[str, str]) -> AppTest:
    at = AppTest.from_file(SCRIPT, default_timeout=120)
    at.run()
    at.switch_page(file)
    at.query_params.clear()  # as a browser's page change does
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _texts(at: AppTest) -> list[str]:
    return [e.value for kind in ("text", "warning", "info", "error", "subheader") for e in getattr(at, kind)]


def test_compare_shows_status_changes_and_the_worst_regressions_detail(seeded):
    at = _page("compare.py", {**SIDES, "scope": "machine"})  # per machine: fp8 newly runs on each of three
    texts = _texts(at)
    assert "Status changes" in texts
    counts = next(t for t in texts if "3 now falls back to the CPU" in t)  # the panel's counts (cards: per machine)
    assert "3 newly supported" in counts and "3 now falls back to the CPU" in counts
    assert "1 new correctness failure" in counts and "1 correctness fixed" in counts
    case = next(s for s in at.selectbox if s.label.startswith("Case"))
    assert "linear k_v" in case.format_func(case.value)  # the worst regression opens first
    runs = at.dataframe[-2].value  # its runs' provenance, above the Not compared table
    assert set(runs.side) == {"baseline", "candidate"} and "os_version" in runs.columns
    assert not any(t.startswith("Nothing compared") for t in texts)


def test_compare_and_regressions_of_a_build_against_itself_say_why_not_zero(seeded):
    same = {"baseline": BASELINE, "candidate": BASELINE}
    for file in ("compare.py", "regressions.py"):
        at = _page(file, same)
        assert any(w.value.startswith("Baseline and candidate are the same build") for w in at.warning)
        assert not any("0 regression(s)" in t for t in _texts(at))


def test_matrix_without_cells_names_what_is_stored(seeded):
    at = _page("matrix.py", {"metric": "op_time", "baseline": "2.14.1", "dtype": "float64"})
    said = [w.value for w in at.warning]
    assert said and "float64" in said[0] and "dtypes bfloat16, float16, float32, float8_e4m3fn" in said[0]


def test_correctness_slope_counts_and_a_bad_build_named(seeded):
    at = _page("correctness.py", {"metric": "psnr_vs_cpu"})
    # by the review's rule (3 dB): the M2's 40 dB fall and the roundtrip's 19.9 dB rise; the M3 Ultra softmax is
    # the same on both builds
    assert (
        "1 improved, 1 worsened, 2 within its rule of 4 case(s), by the rule Regressions uses"
        in " ".join(_texts(at))[:100000]
    )
    slopes = at.dataframe[1].value
    air = slopes[slopes.machine_name == "air-1"].iloc[0]
    assert (air.baseline_margin, air.candidate_margin, air.direction) == (20.0, -20.0, "worsened")
    bad = _page("correctness.py", {"baseline": "9.9.9"})
    assert any(e.value.startswith("baseline:") for e in bad.error)


def test_compare_and_regressions_open_on_the_latest_stable_against_the_newest_preview(seeded):
    for file in ("compare.py", "regressions.py"):
        at = _page(file, {})
        sides = {s.label.split(" ")[0]: s.value for s in at.selectbox if s.label.startswith(("Baseline", "Candidate"))}
        assert sides == {
            "Baseline": "torch=2.15.0",
            "Candidate": "torch=2.16.0.dev20261202",
        }  # benchmarks/stores/seed.py
        assert not [w.value for w in at.warning]  # those builds share softmax on studio-1: something compared
