"""A release review end to end, on bundles shaped like two Macs' (tests/release_bundles.py) stored as a user
stores them (`mpsbench ingest DIR`): the Regressions page, its Markdown export, GET /api/v1/regressions and
`mpsbench compare --fail-on regression` list the same three regressions (the 10× driver peak, the 25 dB PSNR
drop, the one real slowdown), none of the run-to-run noise, and the same summary."""

from __future__ import annotations

import json

import numpy as np
import pytest
import streamlit as st
from starlette.applications import Starlette
from starlette.testclient import TestClient
from streamlit.testing.v1 import AppTest

import db.store.engine
from app import api_routes
from db.review.comparison import CompareQuery, compare
from mpsbench.cli import main
from tests import release_bundles as rb
from tests.test_page_twins import ROOT_SCRIPT, _same

SIDES = {"baseline": rb.BASELINE, "candidate": rb.CANDIDATE}
ARGS = ["--baseline", rb.BASELINE, "--candidate", rb.CANDIDATE]
EXPECTED = [
    ("mini-m2pro", "vae_roundtrip", "correctness"),
    ("studio-m4max", "vae_tiled_decode", "memory_driver_peak"),
    ("studio-m4max", "linear", "op_time"),
]  # worst first, as every surface orders them


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("release")
    rb.write_release_bundles(folder / "bundles")
    path = folder / "store.duckdb"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MPSBENCH_DB", str(path))
        assert main(["ingest", str(folder / "bundles")]) == 0
    return path


@pytest.fixture
def env(store, monkeypatch):
    monkeypatch.setenv("MPSBENCH_DB", str(store))
    for name in ("MPSBENCH_TOKEN", "MPSBENCH_READ_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(db.store.engine, "_shared", {})
    yield store
    for engine in db.store.engine._shared.values():
        engine.dispose()


def _cli(capsys, *args):
    code = main(["compare", *ARGS, *args])
    return code, capsys.readouterr().out


def test_every_surface_lists_the_same_regressions_and_no_noise(env, capsys):
    code, out = _cli(capsys, "--format", "json", "--fail-on", "regression")
    cli = json.loads(out)
    assert code == 1 and [(r["scope"], r["workload"], r["metric"]) for r in cli["regressions"]] == EXPECTED
    client = TestClient(Starlette(routes=api_routes()), client=("127.0.0.1", 50000), base_url="http://127.0.0.1")
    api = client.get("/api/v1/regressions", params=SIDES).json()
    api.pop("ok")
    assert api == cli
    _, markdown = _cli(capsys, "--format", "md-full")
    lines = markdown.replace("\\_", "_").splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| scope | workload | case |"))
    rows = [line.split(" | ") for line in lines[header + 2 :] if line.startswith("| ")]
    assert [(r[0].strip("| "), r[1], r[5]) for r in rows] == EXPECTED  # the export's regression table
    # rule-judged figures say so (a p-value over identical repeats of one figure would be a degenerate 0)
    assert [r[9] for r in rows][:2] == ["judged by its drop rule", "judged by its growth rule"]
    assert rows[2][9].startswith("significant (p=")
    assert "## Release summary" in markdown and markdown.count("| mini-m2pro |") == 2 + 1  # 2 groups + 1 row
    st.cache_resource.clear()
    st.cache_data.clear()
    at = AppTest.from_file(ROOT_SCRIPT, default_timeout=120)
    at.run()
    at.switch_page("regressions.py")
    at.query_params.clear()  # as a browser's page change does
    at.query_params.update(SIDES)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    _same(at.dataframe[0].value, cli["summary"]["groups"], "page summary vs CLI")
    _same(at.dataframe[1].value, cli["regressions"], "page regressions vs CLI")


def test_run_noise_past_the_threshold_stays_inside_the_aa_bound(env):
    engine = db.store.engine.open_store(env)
    cases = compare(engine, CompareQuery.from_params(SIDES)).cases
    engine.dispose()
    noisy = cases[(cases.scope == "mini-m2pro") & (cases.metric == "op_time")]
    levels = {c: np.mean(rb.RUN_LEVELS["Apple M2 Pro", c]) for c in (False, True)}
    slower = levels[True] / levels[False]  # 1.06 / 1.0: the candidate's runs all ran high
    assert len(noisy) == 12 and np.allclose(1 / noisy.oriented_ratio, slower, rtol=0.01) and slower > 1.05
    # each case's own A/A pairs (3 per build: the baseline's runs 0.95, 1.05, 1.00 spread ~10 %) and the 3 runs a
    # side are its run-to-run variance: the 6 % is inside it
    assert noisy.noise.str.startswith("A/A: this case, 6 pairs").all()
    assert (noisy.replicates == "runs and A/A pairs").all()
    assert (noisy.significance == "not significant").all() and (noisy.se > 0.02).all()


def test_a_familys_ci_holds_the_run_to_run_spread(env):
    engine = db.store.engine.open_store(env)
    result = compare(engine, CompareQuery.from_params(SIDES))
    engine.dispose()
    fam = result.families.set_index(["scope", "workload"]).loc[("mini-m2pro", "softmax")]
    cases = result.cases[(result.cases.scope == "mini-m2pro") & (result.cases.workload == "softmax")]
    # every case moved by the same run factors: resampling cases alone saw no spread (CI ±0.1 %); the family's
    # CI is now as wide as its median case's, whose runs-as-replicates CI spans about ±5 %
    below = np.median(np.log(cases.oriented_ratio / cases.ci_low))
    assert fam.ci_low == pytest.approx(fam.geomean * np.exp(-below), rel=1e-9)
    assert fam.ci_high / fam.ci_low > 1.08 and "95 % CI" in fam.summary
