"""Compare, its JSON twin and its page against the seeded store (tests/seed.py), answers computed here."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

store = pytest.importorskip("db.store", reason="db/store.py (helper A) is not in the tree yet")
pytest.importorskip("db.ingest", reason="db/ingest.py (helper A) is not in the tree yet")

from db.compare import CompareQuery, compare  # noqa: E402
from db.errors import StoreError  # noqa: E402
from tests.seed import SOFTMAX, seed_store  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    path = tmp_path_factory.mktemp("cmp") / "seed.duckdb"
    engine = store.open_store(path)
    answers = seed_store(engine)
    yield engine, answers, path
    engine.dispose()


def _run(engine, **params):
    return compare(engine, CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1", **params}))


def _row(frame, **match):
    hit = frame
    for k, v in match.items():
        hit = hit[hit[k] == v]
    assert len(hit) == 1, match
    return hit.iloc[0]


def _pooled(bundles, machines, version, workload, params, metric):
    return [x for b in bundles if b.machine.name in machines and b.build.torch_version == version
            for r in b.results if r.workload == workload and r.params == params and r.metric == metric
            and r.status.value == "ok" for x in r.samples]


def test_ratios_medians_and_significance_match_known_answers(seeded):
    engine, ans, _ = seeded
    cases = _run(engine).cases
    soft = _row(cases, scope="studio-1", workload="softmax", case_key=json.dumps(SOFTMAX, separators=(",", ":")),
                metric="op_time")
    base = _pooled(ans["bundles"], {"studio-1"}, "2.14.1", "softmax", SOFTMAX, "op_time")
    cand = _pooled(ans["bundles"], {"studio-1"}, "2.15.0rc1", "softmax", SOFTMAX, "op_time")
    assert soft.baseline_n == len(base) == 20 and soft.baseline_median == pytest.approx(statistics.median(base))
    assert soft.oriented_ratio == pytest.approx(statistics.median(base) / statistics.median(cand))
    assert soft.oriented_ratio == pytest.approx(ans["softmax_speedup"], rel=0.02)
    assert soft.significance == "significant" and soft.change.endswith("faster")
    assert soft.ci_low <= soft.oriented_ratio <= soft.ci_high
    slow = cases[(cases.workload == "linear") & (cases.case_key == '{"k":768,"m":1,"n":2048}')]
    assert (slow.significance == "significant").all() and slow.change.str.endswith("slower").all()
    noise = cases[(cases.workload == "linear") & (cases.case_key == '{"k":4096,"m":1,"n":1024}')]
    assert (noise.significance == "not significant").all()
    pad = cases[cases.workload == "constant_pad"]  # n=2 per run: alone insufficient; studio-1's 2 repeats pool to 4
    assert (pad[pad.scope != "studio-1"].significance == "insufficient samples").all()
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
    pooled = _row(chip, scope="Apple M3 Ultra", **key)
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

    engine, _, _ = seeded
    monkeypatch.setattr(query_api, "_engine", lambda: engine)
    client = TestClient(Starlette(routes=query_api.ROUTES))
    body = client.get("/api/v1/compare", params={"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"}).json()
    expected = query_api.comparison_json(_run(engine))
    assert body == json.loads(json.dumps(expected))
    assert all("unit" in case and "change_unit" in case for case in body["cases"])
    bad = client.get("/api/v1/compare", params={"baseline": "nonsense", "candidate": "torch=2.15.0rc1"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "baseline"
    reg = client.get("/api/v1/regressions", params={"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"})
    assert reg.status_code == 200 and len(reg.json()["regressions"]) >= 3
    assert client.get("/api/v1/regressions", params={"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1",
                                                      "threshold": "x"}).json()["errors"][0]["field"] == "threshold"
    claims = client.get("/api/v1/claims").json()["claims"]
    assert {c["status"] for c in claims} == {"reproduced", "not reproduced", "no data"} and all("unit" in c for c in claims)
    runs = client.get("/api/v1/runs", params={"chip": "Apple M2"}).json()["runs"]
    assert {r["machine_name"] for r in runs} == {"air-1"}


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
    at.run()
    assert not at.exception and not at.error
    texts = [t.value for t in at.text]
    assert any(t.startswith("geomean 1.2") and "faster" in t and "baseline torch=2.14.1" in t for t in texts)
    assert len(at.dataframe) >= 3


def test_trend_orders_builds_and_finds_the_seeded_step(seeded):
    from db.trends import trend

    engine, ans, _ = seeded
    points = trend(engine, "softmax", json.dumps(SOFTMAX, separators=(",", ":")), "float32", "eager", "op_time")
    ultra = points[points.chip == "Apple M3 Ultra"]
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
    from db.claims import evaluate_claims

    engine, _, _ = seeded
    claims = evaluate_claims(engine).set_index(["id", "chip"])
    assert claims.loc[("qwen3-decode-512", "Apple M3 Ultra"), "status"] == "reproduced"  # 1.33 vs 1.336
    assert claims.loc[("wan-vae-driver-peak", "Apple M3 Ultra"), "status"] == "reproduced"
    assert claims.loc[("qwen-image-vae-psnr", "Apple M3 Ultra"), "measured"] == pytest.approx(19.89)
    assert claims.loc[("softmax-1x128256", "Apple M3 Ultra"), "status"] == "not reproduced"  # seeded 1.25×, not 8.04×
    assert claims.loc[("linear-decode-geomean", "Apple M2"), "status"] == "not reproduced"
    by_id = claims.reset_index().groupby("id").status.first()
    assert by_id["qwen3-decode-2048"] == "no data" and by_id["wan-vae-reserved-peak"] == "no data"


def test_matrix_cells_are_per_chip_geomeans_against_the_baseline(seeded):
    from db.matrix import matrix

    engine, ans, _ = seeded
    cells = matrix(engine, "op_time", "2.14.1", "chip", "float32", "eager", "softmax").set_index(["row", "build"])
    assert cells.loc[("Apple M2", "2.15.0rc1"), "geomean"] == pytest.approx(ans["softmax_speedup"], rel=0.02)
    assert cells.loc[("Apple M3 Ultra", "2.15.0rc1"), "n_cases"] == 2  # two softmax shapes; machines pooled
    assert ("Apple M2", "2.15.0") not in cells.index  # 2.15.0 ran only on studio-1
