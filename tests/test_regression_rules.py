"""Every metric regresses by its own rule (bundle.metrics.RULES), on a store with known figures
(tests/verdict_store.py): the expected verdicts are computed here from the store's constants."""

from __future__ import annotations

import math

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from api.errors import guard_routes
from bundle.metrics import RULES, MetricError, RuleKind, parse_rules
from db.errors import StoreError
from db.review.release.listing import regressions
from db.review.review import Review
from tests import verdict_store as v

PARAMS = {"baseline": v.BASELINE, "candidate": v.CANDIDATE}


@pytest.fixture(scope="module")
def engine(verdict_engine):
    """The verdict store (tests/conftest.py) for every test here."""
    return verdict_engine


def _rows(engine, **params):
    found = regressions(engine, Review.from_params({**PARAMS, **params}))
    return {(r.workload, r.metric): r for r in found.itertuples()}


def test_memory_growth_needs_both_the_percent_and_the_floor(engine):
    rows = _rows(engine)
    driver = rows[("vae", "memory_driver_peak")]  # 10× growth
    assert driver.worse_by == pytest.approx(v.DRIVER[True] / v.DRIVER[False] - 1) == pytest.approx(9.0)
    growth = v.ALLOCATED[True] / v.ALLOCATED[False] - 1  # 3 %, and under 64 MiB: not a regression
    assert (
        growth * 100 < RULES["memory_allocated_peak"].percent or (v.ALLOCATED[True] - v.ALLOCATED[False]) < 64 * v.MIB
    )
    assert ("vae", "memory_allocated_peak") not in rows
    reserved = v.RESERVED[True] - v.RESERVED[False]  # 10 % and 204.8 MiB: both past the rule
    assert reserved >= 64 * v.MIB and ("vae", "memory_reserved_peak") in rows
    # a review may raise the floor: 300 MiB spares the reserved peak, not the driver's 9 GiB
    raised = _rows(engine, rules=f"memory_reserved_peak.floor={300 * v.MIB},memory_driver_peak.floor={300 * v.MIB}")
    assert ("vae", "memory_reserved_peak") not in raised and ("vae", "memory_driver_peak") in raised


def test_psnr_drop_while_passing_is_one_correctness_row(engine):
    row = _rows(engine)[("vae", "correctness")]
    drop = v.VAE_PSNR[False] - v.VAE_PSNR[True]  # 20 dB, both sides pass their 25 dB tolerance
    assert drop > RULES["psnr_vs_cpu"].drop and row.worse_by == pytest.approx(10 ** (drop / 10) - 1)
    assert "PSNR dropped" in row.why and row.figures == "psnr_vs_cpu 70 dB → 50 dB"
    assert ("vae", "correctness") not in _rows(engine, rules="psnr_vs_cpu.drop=25")


def test_a_correctness_failure_is_one_row_carrying_every_figure(engine):
    found = regressions(engine, Review.from_params(PARAMS))
    softmax = found[
        (found.workload == "softmax")
        & found.metric.isin(["correctness", "psnr_vs_cpu", "max_abs_error", "max_rel_error"])
    ]
    assert len(softmax) == 1 and softmax.metric.iloc[0] == "correctness" and math.isinf(softmax.worse_by.iloc[0])
    figures = softmax.figures.iloc[0]
    for name, (b, c) in zip(("psnr_vs_cpu", "max_abs_error", "max_rel_error"), zip(v.CORRECT[False], v.CORRECT[True])):
        assert name in figures and (f"{b:g}" in figures and f"{c:g}" in figures), figures
    assert figures.count("passed → failed") == 2  # psnr and max_abs_error crossed their tolerance; max_rel grew 100×


def test_derived_bandwidth_is_not_a_second_regression_of_one_timing(engine):
    rows = _rows(engine)
    assert rows[("linear", "op_time")].worse_by == pytest.approx(v.LINEAR_US[True] / v.LINEAR_US[False] - 1, rel=0.01)
    assert ("linear", "achieved_bandwidth") not in rows
    assert RULES["achieved_bandwidth"].kind is RuleKind.derived is RULES["bandwidth_fraction"].kind


@pytest.mark.parametrize(
    "text,named",
    [
        ("speed.percent=5", "unknown metric 'speed'"),
        ("op_time.floor=5", "has no field 'floor'"),
        ("psnr_vs_cpu.drop=abc", "drop must be a number"),
        ("op_time", "write metric.field=value"),
    ],
)
def test_bad_rules_are_named(engine, text, named):
    with pytest.raises(MetricError, match=named):
        parse_rules(text)
    with pytest.raises(StoreError) as err:
        Review.from_params({**PARAMS, "rules": text})
    assert err.value.status == 400 and err.value.problems[0].field == "rules" and named in str(err.value)


def test_the_api_takes_rules_and_refuses_bad_ones_with_400(engine, monkeypatch):
    import api.query as query_api

    monkeypatch.setattr(query_api, "_engine", lambda: engine)
    client = TestClient(Starlette(routes=guard_routes(query_api.ROUTES)))
    bad = client.get("/api/v1/regressions", params={**PARAMS, "rules": "nope.percent=1"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "rules"
    ok = client.get("/api/v1/regressions", params={**PARAMS, "rules": "psnr_vs_cpu.drop=25", "threshold": "5"})
    got = {(r["workload"], r["metric"]) for r in ok.json()["regressions"]}
    assert ok.status_code == 200 and got == set(_rows(engine, rules="psnr_vs_cpu.drop=25"))
