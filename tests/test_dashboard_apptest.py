"""Every dashboard page under Streamlit's AppTest, against a seeded store, a known-answer store and an empty one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from benchmarks.stores.seed import seed_store
from db.ingest.core import ingest_bundle
from db.store.engine import open_store
from db.store.tables import ResultRow, Run
from pages.navigation import PAGES
from tests.dashboard_bundles import MACHINE_NAME, known_bundle, known_bundles, raw
from tests.page_store import SCRIPT, TIMEOUT_S, page_store
from tests.page_store import open_page as _page


def _store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fill) -> Path:
    return page_store(tmp_path, monkeypatch, fill)


def _ingest_known(engine) -> None:
    for bundle in known_bundles():
        ingest_bundle(engine, raw(bundle))


@pytest.fixture
def known_db(tmp_path, monkeypatch) -> Path:
    return _store(tmp_path, monkeypatch, _ingest_known)


def _cells(at: AppTest) -> list[str]:
    return [str(v) for frame in at.dataframe for v in frame.value.astype(str).to_numpy().ravel()]


def _texts(at: AppTest) -> str:
    parts = [
        e.value
        for kind in ("title", "header", "subheader", "caption", "info", "error", "success", "code", "markdown", "text")
        for e in getattr(at, kind)
    ]
    return "\n".join(str(p) for p in parts)


@pytest.mark.parametrize("file,title", [(f, t) for f, t, _ in PAGES])
def test_every_page_renders_a_seeded_store(tmp_path, monkeypatch, file, title):
    _store(tmp_path, monkeypatch, seed_store)
    at = _page(file)
    assert not at.exception, [e.value for e in at.exception]
    assert title in [t.value for t in at.title]


@pytest.mark.parametrize("file,title", [(f, t) for f, t, _ in PAGES])
def test_every_page_renders_an_empty_store(tmp_path, monkeypatch, file, title):
    _store(tmp_path, monkeypatch, lambda engine: None)
    at = _page(file)
    assert not at.exception, [e.value for e in at.exception]
    assert title in [t.value for t in at.title]


def test_default_page_is_the_overview_with_an_empty_state_hint(tmp_path, monkeypatch):
    _store(tmp_path, monkeypatch, lambda engine: None)
    at = AppTest.from_file(SCRIPT, default_timeout=TIMEOUT_S).run()
    assert [t.value for t in at.title] == ["Overview"]
    assert "No runs yet" in at.info[0].value and "mpsbench run" in at.info[0].value


def test_overview_lists_machines_builds_and_counts(known_db):
    at = _page("overview.py")
    assert at.dataframe[0].value.columns[0] == "scope"  # the verdict's summary table comes first
    latest = at.dataframe[1].value
    assert sorted(latest["build"]) == ["2.14.1 (stable, 0000000)", "2.15.0rc1 (rc, 0000000)"]
    assert set(latest["memory_GiB"]) == {64.0} and set(latest["gpu_cores"]) == {38}
    assert MACHINE_NAME in set(latest["machine_name"])  # stored and shown verbatim, as text
    counts = dict(zip(at.dataframe[2].value["status"], at.dataframe[2].value["results"]))
    assert counts == {"ok": 6, "unavailable": 2}


def test_run_page_shows_provenance_and_results_with_units(known_db):
    run_id = known_bundles()[1].run_id
    at = _page("runs.py", {"run_id": run_id})
    assert not at.exception
    provenance = "\n".join(c.value for c in at.code)
    for expected in (
        run_id,
        f"{1:040x}",
        "2.15.0rc1",
        "python -m collector run --profile quick",
        "PYTORCH_ENABLE_MPS_FALLBACK",
        "Apple M2 Max",
        "0.1.0",
        "**bold?**",
        '"transformers": "5.25.0"',
    ):
        assert expected in provenance, expected
    results = at.dataframe[-1].value
    op = results[results["metric"] == "op_time"].iloc[0]
    assert (op["unit"], op["median"], op["n"]) == ("µs", 7.0, 5)


def test_compare_page_says_the_sides_ran_different_library_versions(known_db):
    at = _page("compare.py", {"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"})
    assert not at.exception, [e.value for e in at.exception]
    notes = [t.value for t in at.text if t.value.startswith("Library versions differ")]
    assert len(notes) == 1 and "transformers 5.24.0 → 5.25.0" in notes[0]


def test_runs_filter_in_the_url_narrows_the_list(known_db):
    at = _page("runs.py", {"build": "2.14.1"})  # build = torch version, as in GET /api/v1/runs
    assert list(at.dataframe[0].value["run_id"]) == [known_bundles()[0].run_id]


def test_memory_shows_gib_and_unavailable_never_zero(known_db):
    at = _page("memory.py")
    assert not at.exception, [e.value for e in at.exception]
    assert [s.value for s in at.subheader] == [f"{MACHINE_NAME} · Apple M2 Max"]  # one panel per machine
    table = at.dataframe[0].value.set_index("figure")
    assert list(table.columns[:1]) == ["case"] and table["case"].iloc[0] == "softmax · n=1024 · fp16"
    assert (table.loc["driver total peak", "baseline"], table.loc["driver total peak", "candidate"]) == (
        "2.000 GiB",
        "2.000 GiB",
    )  # defaults: the stable build vs the rc
    reserved = table.loc["allocator reserved peak"]
    assert (
        reserved["baseline"] == reserved["candidate"] == "unavailable: torch.mps has no reserved-peak API in this build"
    )


def test_matrix_opens_on_the_most_measured_dtype_without_none_cells(tmp_path, monkeypatch):
    _store(tmp_path, monkeypatch, seed_store)
    at = _page("matrix.py")
    assert not at.exception, [e.value for e in at.exception]
    # benchmarks/stores/seed.py: 4 bfloat16 op_time cases, 3 float32
    assert at.selectbox[0].value == "op_time" and at.text_input[0].value == "bfloat16"
    table = at.dataframe[0].value
    assert set(table["build"]) == {"2.15.0rc1"} and set(table["n_cases"]) == {3}  # linear q, k_v, o per chip
    assert "None" not in _cells(at) and "nan" not in _cells(at)
    assert all(ci.endswith("×") for ci in table["ci"])
    one = _page("matrix.py", {"dtype": "float32", "baseline": "2.14.1"})  # single-case cells: no CI, said so
    assert "None" not in _cells(one) and "— (no CI from 1 case)" in _cells(one)


def test_memory_legend_names_both_builds(known_db):
    at = _page("memory.py")
    charts = at.get("vega_lite_chart")
    assert charts, "the memory chart"
    spec = json.loads(charts[0].proto.spec)
    legend = spec["spec"]["layer"][0]["encoding"]["color"]["legend"]
    assert legend["orient"] == "top"
    assert "baseline 2.14.1 (stable, 0000000)" in legend["labelExpr"]  # the known bundles: git hash 0000000
    assert "candidate 2.15.0rc1 (rc, 0000000)" in legend["labelExpr"]


def test_correctness_flags_faster_but_wrong(known_db):
    at = _page("correctness.py")
    assert any("faster but wrong: 1 case" in e.value for e in at.error)
    wrong = at.dataframe[0].value.iloc[0]
    assert (wrong["build"], wrong["previous_build"]) == ("2.15.0rc1 (rc, 0000000)", "2.14.1 (stable, 0000000)")
    assert wrong["speedup_vs_previous"] == pytest.approx(10.0 / 7.0)
    assert wrong["failed_metrics"] == "psnr_vs_cpu" and wrong["failed_figures"].startswith("psnr_vs_cpu 20 dB")


def _counts(path: Path) -> tuple[int, int]:
    engine = open_store(path)
    with engine.connect() as conn:
        found = (
            conn.execute(select(func.count()).select_from(Run)).scalar(),
            conn.execute(select(func.count()).select_from(ResultRow)).scalar(),
        )
    engine.dispose()
    return found


@pytest.fixture
def uploader(monkeypatch) -> str:
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "ci-mac-1=tok-ci,alice=tok-alice")
    return "tok-alice"


def test_upload_reports_new_present_and_refused(tmp_path, monkeypatch, uploader):
    path = _store(tmp_path, monkeypatch, lambda engine: None)
    good = raw(known_bundle(0, "2.14.1", "stable", 10.0, 60.0, True))
    bad = json.loads(good)
    bad["run_id"], bad["results"][0]["unit"] = "f" * 32, "parsecs"
    at = _page("upload.py", token=uploader)
    at.file_uploader[0].set_value(
        [("good.json", good, "application/json"), ("bad.json", json.dumps(bad).encode(), "application/json")]
    )
    at.run()
    outcomes = at.dataframe[0].value.set_index("file")
    assert outcomes.loc["good.json", "outcome"] == "new" and outcomes.loc["good.json", "results"] == 4
    assert outcomes.loc["bad.json", "outcome"] == "refused"
    assert "results[0].unit" in outcomes.loc["bad.json", "detail"]
    [message] = [e.value for e in at.error]  # one message, the refused file's reason in full (no cut-off cell)
    assert (
        message.startswith("bad.json: ") and "results\\[0\\].unit" in message and "Nothing of it was stored" in message
    )
    at.switch_page("upload.py")  # a fresh upload of the same good file is recognised
    at = _page("upload.py", token=uploader)
    at.file_uploader[0].set_value([("again.json", good, "application/json")])
    assert at.run().dataframe[0].value.iloc[0]["outcome"] == "already present"
    assert _counts(path) == (1, 4)  # the refused bundle stored nothing


def test_refused_upload_changes_nothing(known_db, uploader):
    before = _counts(known_db)
    at = _page("upload.py", token=uploader)
    at.file_uploader[0].set_value([("broken.json", b"{not json", "application/json")])
    assert at.run().dataframe[0].value.iloc[0]["outcome"] == "refused"
    assert _counts(known_db) == before


def test_tables_lead_with_the_case_name_and_pin_the_raw_key_last(known_db):
    compare = _page("compare.py", {"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"})
    cases = next(d.value for d in compare.dataframe if "case_key" in d.value.columns and "change" in d.value.columns)
    assert list(cases.columns)[0] == "case" and list(cases.columns)[-1] == "case_key"
    assert set(cases["case"]) == {"softmax · n=1024 · fp16"}
    run = _page("runs.py", {"run_id": known_bundles()[1].run_id}).dataframe[-1].value
    assert list(run.columns)[0] == "case" and list(run.columns)[-1] == "case_key"
    correctness = _page("correctness.py", {"metric": "psnr_vs_cpu"}).dataframe[-1].value
    assert list(correctness.columns)[0] == "case" and list(correctness.columns)[-1] == "case_key"


def test_trends_defaults_to_a_stored_case_from_menus(tmp_path, monkeypatch):
    _store(tmp_path, monkeypatch, seed_store)
    at = _page("trends.py")
    assert not at.exception and not at.error, [e.value for e in at.exception] + [e.value for e in at.error]
    menus = {s.label: s.value for s in at.selectbox}
    assert menus["Metric"] == "op_time" and menus["Workload"] == "constant_pad"  # the first stored workload
    assert not at.text_input  # nothing typed: every choice comes from a menu
    assert len(at.dataframe[0].value) > 0


def test_trends_link_from_compare_opens_that_case(tmp_path, monkeypatch):
    _store(tmp_path, monkeypatch, seed_store)
    at = _page(
        "trends.py",
        {
            "workload": "softmax",
            "case_key": '{"rows":1,"vocab":128256}',
            "dtype": "float32",
            "compile": "eager",
            "metric": "op_time",
        },
    )
    assert not at.exception and not at.error
    points = at.dataframe[0].value
    assert "2.16.0.dev20261201" in set(points.torch_version)
    assert {s.label: s.value for s in at.selectbox}["Case"] == '{"rows":1,"vocab":128256}'


def test_trends_names_a_url_value_without_results(tmp_path, monkeypatch):
    _store(tmp_path, monkeypatch, seed_store)
    at = _page("trends.py", {"workload": "nope"})
    assert not at.exception
    assert any(e.value.startswith("workload: no stored ok results for 'nope'") for e in at.error)


def test_trends_changing_the_workload_menu_resets_the_menus_after_it(tmp_path, monkeypatch):
    _store(tmp_path, monkeypatch, seed_store)
    at = _page("trends.py", {"workload": "softmax", "case_key": '{"rows":1,"vocab":128256}'})
    next(s for s in at.selectbox if s.label == "Workload").set_value("linear").run()
    assert not at.exception and not at.error, [e.value for e in at.exception] + [e.value for e in at.error]
    case = next(s for s in at.selectbox if s.label == "Case")
    assert case.value.startswith("{") and "vocab" not in case.value  # a linear case now, not the softmax one
    assert at.query_params["workload"] == ["linear"] or at.query_params["workload"] == "linear"
