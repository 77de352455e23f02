"""Compare, its JSON twin and its page against the seeded store (benchmarks/stores/seed.py), answers computed here."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

import db.store.engine as store
from api.errors import guard_routes
from benchmarks.stores.seed import LINEAR_NOISE, LINEAR_SLOW, SOFTMAX, seed_store
from bundle.schema import case_key
from db.errors import StoreError
from db.review.comparison import CompareQuery, compare, compute_compare

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    path = tmp_path_factory.mktemp("cmp") / "seed.duckdb"
    engine = store.open_store(path)
    answers = seed_store(engine)
    yield engine, answers, path
    engine.dispose()


def _run(engine, **params):
    return compare(
        engine, CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1", **params})
    )


def _row(frame, **match):
    hit = frame
    for k, v in match.items():
        hit = hit[hit[k] == v]
    assert len(hit) == 1, match
    return hit.iloc[0]


def _pooled(bundles, machines, version, workload, params, metric):
    return [
        x
        for b in bundles
        if b.machine.name in machines and b.build.torch_version == version
        for r in b.results
        if r.workload == workload and r.params == params and r.metric == metric and r.status.value == "ok"
        for x in r.samples
    ]


def test_ratios_medians_and_significance_match_known_answers(seeded):
    engine, ans, _ = seeded
    cases = _run(engine).cases
    soft = _row(
        cases,
        scope="studio-1",
        workload="softmax",
        case_key=json.dumps(SOFTMAX, separators=(",", ":")),
        metric="op_time",
    )
    base = _pooled(ans["bundles"], {"studio-1"}, "2.14.1", "softmax", SOFTMAX, "op_time")
    cand = _pooled(ans["bundles"], {"studio-1"}, "2.15.0rc1", "softmax", SOFTMAX, "op_time")
    assert soft.baseline_n == len(base) == 20 and soft.baseline_median == pytest.approx(statistics.median(base))
    assert soft.oriented_ratio == pytest.approx(statistics.median(base) / statistics.median(cand))
    assert soft.oriented_ratio == pytest.approx(ans["softmax_speedup"], rel=0.02)
    assert soft.significance == "significant" and soft.change.endswith("faster")
    assert soft.ci_low <= soft.oriented_ratio <= soft.ci_high
    assert soft.se > 0 and soft.se_unit == "ln(ratio)"  # the test's standard error says what it is of
    slow = cases[(cases.workload == "linear") & (cases.case_key == case_key(LINEAR_SLOW))]
    assert (slow.significance == "significant").all() and slow.change.str.endswith("slower").all()
    noise = cases[(cases.workload == "linear") & (cases.case_key == case_key(LINEAR_NOISE))]
    assert (noise.significance == "not significant").all()
    # constant_pad: one process (2 samples) and one run a side: unconfirmed on air-1; studio-2 has no replicates
    # either, but its chip's A/A pairs (studio-1 ran each build twice) give its run-to-run variance
    pad = cases[cases.workload == "constant_pad"]
    assert _row(pad, scope="air-1").significance == "unconfirmed: no replicates"
    studio2 = _row(pad, scope="studio-2")
    assert studio2.significance == "not significant" and studio2.noise.startswith("A/A: its constant_pad group")
    assert _row(pad, scope="studio-1").baseline_n == 4


def test_differences_and_memory_wording(seeded):
    engine, ans, _ = seeded
    cases = _run(engine, scope="machine").cases
    psnr = _row(cases, workload="vae_roundtrip", metric="psnr_vs_cpu")
    assert psnr.comparison == "difference" and psnr.difference == pytest.approx(ans["roundtrip_psnr_db"])
    driver = _row(cases, workload="vae_tiled_decode", metric="memory_driver_peak")
    assert driver.oriented_ratio == pytest.approx(ans["driver_peak_oriented"]) and "less memory" in driver.change


def test_unmatched_are_listed_with_reasons(seeded):
    engine, _, _ = seeded
    un = _run(engine).unmatched
    assert set(un[un.workload == "sdpa"].reason) == {"no baseline result"}
    assert un[un.workload == "fp8"].reason.str.contains("unsupported").all()
    fallback = un[un.workload == "grouped_mm"]
    assert (fallback.candidate_figure == "fallback (flagged)").all() and fallback.candidate_median.notna().all()
    assert "unavailable" in _row(un, metric="memory_reserved_peak").reason


def test_machine_scope_never_pools_machines_chip_scope_does_explicitly(seeded):
    engine, _, _ = seeded
    key = dict(workload="softmax", case_key=json.dumps(SOFTMAX, separators=(",", ":")), metric="op_time")
    machine = _run(engine).cases
    assert _row(machine, scope="studio-2", **key).baseline_n == 10
    chip = _run(engine, scope="chip").cases
    pooled = _row(chip, scope="Apple M3 Ultra (80-core GPU)", **key)
    assert pooled.baseline_n == 30 and "machines pooled" in pooled.caveats


def test_selector_without_runs_is_a_404_naming_the_parameter(seeded):
    engine, _, _ = seeded
    with pytest.raises(StoreError) as err:
        compare(engine, CompareQuery.from_params({"baseline": "torch=9.9", "candidate": "torch=2.15.0rc1"}))
    assert err.value.status == 404 and err.value.problems[0].field == "baseline"


def test_json_twin_returns_the_functions_figures(seeded, monkeypatch):
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    import api.query as query_api
    from db.review.review import Review
    from db.views.release.compare import compare_answer

    engine, _, _ = seeded
    monkeypatch.setattr(query_api, "_engine", lambda: engine)
    client = TestClient(Starlette(routes=guard_routes(query_api.ROUTES)))
    body = client.get("/api/v1/compare", params={"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"}).json()
    expected = compare_answer(engine, Review(_run(engine).query))
    expected.pop("summary")
    summary = body.pop("summary")  # the release summary (db.review.release.summary): tests/test_release_summary.py
    assert body == json.loads(json.dumps({"ok": True, **expected})) and summary["baseline"] == "torch=2.14.1"
    assert all("unit" in case and "change_unit" in case for case in body["cases"])
    bad = client.get("/api/v1/compare", params={"baseline": "nonsense", "candidate": "torch=2.15.0rc1"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "baseline"
    reg = client.get("/api/v1/regressions", params={"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"})
    assert reg.status_code == 200 and len(reg.json()["regressions"]) >= 3
    assert reg.json()["notes"] == expected["notes"]  # the review carries the comparison's notes
    assert (
        client.get(
            "/api/v1/regressions", params={"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1", "threshold": "x"}
        ).json()["errors"][0]["field"]
        == "threshold"
    )
    claims = client.get("/api/v1/claims").json()["claims"]
    assert {c["figure_status"] for c in claims} == {"reproduced", "not reproduced", "no data"}
    assert {c["status"] for c in claims} == {"reproduced", "not reproduced", "no data", "in geomean"}  # per case
    assert all("unit" in c for c in claims)
    runs = client.get("/api/v1/runs", params={"chip": "Apple M2"}).json()["runs"]
    assert {r["machine_name"] for r in runs} == {"air-1"}
    assert {r["libraries_json"] for r in runs} == {"{}"}  # the seed's bundles record no library versions


def test_compare_page_renders_the_geomean_and_tables(seeded, monkeypatch):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    _, _, path = seeded
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    st.cache_resource.clear()
    st.cache_data.clear()
    at = AppTest.from_file(str(ROOT / "pages" / "compare.py"), default_timeout=90)
    at.query_params["baseline"] = "torch=2.14.1"
    at.query_params["candidate"] = "torch=2.15.0rc1"
    at.query_params["scope"] = "machine"  # the page opens in chip scope; this family is studio-1's
    at.run()
    assert not at.exception and not at.error
    summaries = next(d.value for d in at.dataframe if "summary" in d.value.columns).summary  # the families table
    family = [t for t in summaries if t.startswith("studio-1 · softmax op_time float32 eager: geomean ")]
    assert len(family) == 1 and "× faster (95 % CI " in family[0] and family[0].endswith("baseline torch=2.14.1")
    assert float(family[0].split("geomean ")[1].split("×")[0]) == pytest.approx(1.25, abs=0.02)  # both shapes 0.8×
    assert len(at.dataframe) >= 3


def test_trend_orders_builds_and_finds_the_seeded_step(seeded):
    from db.views.browse.trends import trend

    engine, ans, _ = seeded
    points = trend(engine, "softmax", json.dumps(SOFTMAX, separators=(",", ":")), "float32", "eager", "op_time")
    ultra = points[points.chip.str.startswith("Apple M3 Ultra")]  # named as chip-scope Compare names it
    assert ultra.torch_version.tolist() == ans["trend_builds"]
    assert ultra[ultra.change_point].torch_version.tolist() == [ans["trend_step_build"]]


@pytest.mark.parametrize("page", ["regressions.py", "trends.py", "claims.py", "matrix.py"])
def test_regression_and_trend_pages_render(seeded, monkeypatch, page):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    _, _, path = seeded
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    st.cache_resource.clear()
    st.cache_data.clear()
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=90)
    at.query_params["baseline"] = "torch=2.14.1"
    at.query_params["candidate"] = "torch=2.15.0rc1"
    at.run()
    assert not at.exception and not at.error
    assert len(at.dataframe) >= 1


def test_claims_reproduced_not_reproduced_and_no_data(seeded):
    from db.views.browse.claims import evaluate_claims, load_claims

    engine, _, _ = seeded
    claims = evaluate_claims(engine).set_index(["id", "chip"])
    assert len(load_claims()) == 5 and all(c["baseline"] and c["baseline_is"] and c["source"] for c in load_claims())
    decode = claims.loc[("qwen3-decode-512", "Apple M3 Ultra (80-core GPU)")]
    assert decode.status == "reproduced" and decode.measured == pytest.approx(51.7 / 38.7, rel=0.02)
    assert (decode["dtype"], decode["compile"]) == ("bfloat16", "inductor")  # dtype: any, but reported per dtype
    assert claims.loc[("wan-vae-driver-peak", "Apple M3 Ultra (80-core GPU)"), "status"] == "reproduced"
    assert claims.loc[("wan-vae-live-peak", "Apple M3 Ultra (80-core GPU)"), "measured"] == pytest.approx(4.422 / 4.095)
    assert (
        claims.loc[("wan-vae-pad-calls", "Apple M3 Ultra (80-core GPU)"), "status"] == "reproduced"
    )  # 8764 on both: +0
    assert claims.loc[("qwen-image-vae-psnr", "Apple M3 Ultra (80-core GPU)"), "measured"] == pytest.approx(19.89)
    soft = claims.loc[("softmax-1x128256", "Apple M3 Ultra (80-core GPU)")]
    assert soft.status == "not reproduced" and soft.claimed == pytest.approx(57.37 / 7.14)  # seeded 1.25×
    linear = claims.loc[
        ("linear-decode-geomean", "Apple M2 (10-core GPU)")
    ]  # the three M = 1 shapes: 0.8×, 1.1×, 1.0× time
    assert set(linear.figure_status) == {"not reproduced"} and set(linear.status) == {"in geomean"}
    assert list(linear.n_cases) == [3] * 3  # each case its own row, with its own ratio
    assert sorted(linear.measured) == pytest.approx(sorted([1.25, 1 / 1.1, 1.0]), rel=0.02)
    assert linear.figure_measured.iloc[0] == pytest.approx((1.25 * (1 / 1.1) * 1.0) ** (1 / 3), rel=0.02)
    by_id = claims.reset_index().groupby("id").status.first()
    assert by_id["qwen3-decode-2048"] == "no data" and by_id["wan-vae-reserved-peak"] == "no data"


def test_claim_matching_uses_params_subset_and_model_hint():
    import pandas as pd

    from db.views.browse.claims import load_claims, matching

    claim = next(c for c in load_claims() if c["id"] == "qwen3-moe-decode")
    keys = [
        {"model": "Qwen3.6-35B-A3B", "context": 512},
        {"model": "Llama-3.1-8B", "context": 512},
        {"architecture": "Qwen3MoeForCausalLM", "context": 512, "layers": 2},
        {"model": "qwen3-tiny", "context": 2048},
    ]
    cases = pd.DataFrame(
        {
            "metric": "decode_throughput",
            "compile": "inductor",
            "dtype": ["bfloat16", "bfloat16", "float16", "bfloat16"],
            "case_key": [json.dumps(k) for k in keys],
            "scope": "Apple M3 Ultra",
        }
    )
    found = matching(cases, claim, claim["figures"][0])  # context 512, any dtype, a qwen3 model by any param name
    assert [json.loads(k)["context"] for k in found.case_key] == [512, 512] and "Llama" not in "".join(found.case_key)


def test_matrix_cells_are_per_chip_geomeans_against_the_baseline(seeded):
    from db.views.browse.matrix import matrix

    engine, ans, _ = seeded
    cells = matrix(engine, "op_time", "2.14.1", "chip", "float32", "eager", "softmax").set_index(["row", "build"])
    assert cells.loc[("Apple M2 (10-core GPU)", "2.15.0rc1"), "geomean"] == pytest.approx(
        ans["softmax_speedup"], rel=0.02
    )
    assert (
        cells.loc[("Apple M3 Ultra (80-core GPU)", "2.15.0rc1"), "n_cases"] == 2
    )  # two softmax shapes; machines pooled
    assert ("Apple M2 (10-core GPU)", "2.15.0") not in cells.index  # 2.15.0 ran only on studio-1


def test_page_tables_equal_the_json_twin(seeded, monkeypatch):
    """The Compare page's per-case and per-family tables hold the same figures GET /api/v1/compare returns."""
    import streamlit as st
    from starlette.applications import Starlette
    from starlette.testclient import TestClient
    from streamlit.testing.v1 import AppTest

    import api.query as query_api

    engine, _, path = seeded
    monkeypatch.setattr(query_api, "_engine", lambda: engine)
    params = {"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1", "scope": "chip"}
    body = TestClient(Starlette(routes=guard_routes(query_api.ROUTES))).get("/api/v1/compare", params=params).json()
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    st.cache_resource.clear()
    st.cache_data.clear()
    at = AppTest.from_file(str(ROOT / "pages" / "compare.py"), default_timeout=90)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    families, cases = at.dataframe[2].value, at.dataframe[3].value  # after the summary and the status changes
    api_cases = {(c["scope"], c["workload"], c["case_key"], c["dtype"], c["metric"]): c for c in body["cases"]}
    assert len(cases) == len(api_cases) and len(families) == len(body["families"])
    for row in cases.to_dict("records"):
        twin = api_cases[(row["scope"], row["workload"], row["case_key"], row["dtype"], row["metric"])]
        for col in (
            "baseline_median",
            "candidate_median",
            "oriented_ratio",
            "difference",
            "ci_low",
            "ci_high",
            "p_value",
        ):
            assert (row[col] != row[col] and twin[col] is None) or row[col] == pytest.approx(twin[col]), col
        assert (row["change"], row["significance"], row["unit"]) == (twin["change"], twin["significance"], twin["unit"])
    assert sorted(families.summary) == sorted(f["summary"] for f in body["families"])


def test_cache_follows_the_data_version_and_reads_run_from_many_threads(tmp_path):
    """Compare is cached until an ingest; page sessions read concurrently with each other and with an upload."""
    import threading

    from tests.dashboard_bundles import MACHINE_NAME, known_bundle, raw

    engine = store.open_store(tmp_path / "c.duckdb")  # as served: one DuckDB connection per checkout
    seed_store(engine)
    query = CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"})
    first = compare(engine, query)
    assert compare(engine, query) is first  # cached
    errors, done = [], []

    def read():
        try:
            for _ in range(5):
                done.append(len(compute_compare(engine, query).cases))
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(repr(exc))

    threads = [threading.Thread(target=read) for _ in range(3)]
    [t.start() for t in threads]
    from db.ingest.core import ingest_bundle

    new = known_bundle(9, "2.15.0rc1", "rc", 7.0, 60.0, True)
    new = new.model_copy(update={"build": new.build.model_copy(update={"git_hash": None})})  # the seeded build's
    ingest_bundle(engine, raw(new))  # a new run of the candidate
    [t.join() for t in threads]
    assert not errors and len(done) == 15
    after = compare(engine, query)
    new_machine = after.unmatched[after.unmatched.scope == MACHINE_NAME]  # candidate-only: listed, not paired
    assert (
        after is not first and len(new_machine) == 4 and new_machine.reason.str.startswith("no baseline result").all()
    )
    engine.dispose()


def test_claim_within_tolerance_but_noise_is_not_reproduced():
    import pandas as pd

    from db.views.browse.claims import _figure_rows, load_claims

    claim = next(c for c in load_claims() if c["id"] == "linear-decode")
    key = json.dumps({"M": 1, "K": 1024, "N": 1024})
    cases = pd.DataFrame(
        {
            "scope": "Apple M4",
            "dtype": "bfloat16",
            "compile": "eager",
            "metric": "op_time",
            "case_key": key,
            "oriented_ratio": [2.0, 0.76, 1.0],
            "difference": float("nan"),
            "significance": "not significant",
            "direction": "not decided",  # the review's: none of the three told apart from noise
            "rule": "significant",
            "baseline_median": [20.0, 15.2, 10.0],
            "candidate_median": [10.0, 20.0, 10.0],
            "unit": "µs",
            "change": "x",
        }
    )
    row = _figure_rows(claim, claim["figures"][0], cases)[0]  # geomean 1.15 (within 10 % of 1.23? no: 1.149)
    assert row["n_cases"] == 3 and row["figure_status"] == "not reproduced" and "includes 1.00×" in row["figure_detail"]
