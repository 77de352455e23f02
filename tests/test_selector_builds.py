"""Selectors resolve to builds (version + git hash): a side spanning two builds is refused naming them, pooled only
when asked (pool=1) with a note naming each build and its run count; build=V@HASH picks one; chip scope keys on
chip + GPU core count."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from api.errors import guard_routes
from db.errors import StoreError
from db.ingest.core import ingest_bundle
from db.query.selectors import available_selectors, parse_selector
from db.review.comparison import CompareQuery, compute_compare
from db.store.engine import open_store
from tests.bundles import make_bundle, make_result

RC = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"
FINAL = "9f8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6"
OLD = "0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5"


def _ingest(
    engine,
    version: str,
    git_hash: str | None,
    role: str,
    us: float,
    machine: str = "m3u",
    chip: str = "Apple M3 Max",
    cores: int | None = 40,
) -> None:
    build = {
        "torch_version": version,
        "git_hash": git_hash,
        "channel": "release",
        "python_version": "3.11.7",
        "collector_version": "0.1.0",
    }
    mach = {"name": machine, "os": "macOS", "chip": chip, "gpu_cores": cores}
    ingest_bundle(
        engine,
        make_bundle(
            build=build, machine=mach, tags={"role": role}, results=[make_result(samples=[us, us * 1.01, us * 0.99])]
        ),
    )


@pytest.fixture
def engine(tmp_path):
    engine = open_store(tmp_path / "builds.duckdb")
    for _ in range(3):
        _ingest(engine, "2.15.0", RC, "candidate", 7.0)  # the RC: final version string, its own hash
    for _ in range(2):
        _ingest(engine, "2.15.0", FINAL, "candidate", 6.0)  # the final release
    for _ in range(2):
        _ingest(engine, "2.14.1", OLD, "baseline", 10.0)
    _ingest(engine, "2.13.0", None, "older", 11.0)  # an old bundle without a git hash (NULL beside hashes)
    yield engine
    engine.dispose()


def test_a_side_spanning_two_builds_is_refused_naming_them(engine):
    with pytest.raises(StoreError) as err:
        compute_compare(engine, CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0"}))
    exc = err.value
    assert exc.status == 400 and exc.problems[0].field == "candidate"
    assert "matches 2 builds: 2.15.0 (release, 1a2b3c4): 3 runs; 2.15.0 (release, 9f8e7d6): 2 runs" in str(exc)
    assert "candidate=build=2.15.0@1a2b3c4" in str(exc) and "pool=1" in str(exc)
    with pytest.raises(StoreError, match="candidate: tag:role=candidate matches 2 builds"):
        compute_compare(
            engine, CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "tag:role=candidate"})
        )


def test_pooled_only_when_asked_and_the_note_says_which_builds(engine):
    result = compute_compare(
        engine, CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0", "pool": "1"})
    )
    assert (
        "The candidate (torch=2.15.0) pools 2 builds, as asked (pool=1): 2.15.0 (release, 1a2b3c4): 3 runs; "
        "2.15.0 (release, 9f8e7d6): 2 runs."
    ) in result.notes
    assert int(result.cases.candidate_pooled.iloc[0]) == 5  # all five runs' results
    with pytest.raises(StoreError, match="pool: must be 1"):
        CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0", "pool": "maybe"})


def test_build_selector_picks_one_build(engine):
    sel = parse_selector("build=2.15.0@1A2B3C4", "candidate")
    assert sel.text == "build=2.15.0@1a2b3c4"
    result = compute_compare(engine, CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": sel.text}))
    case = result.cases.iloc[0]
    assert case.candidate_pooled == 3 and case.candidate_median == pytest.approx(7.0)
    assert not [n for n in result.notes if "pools" in n]
    final = compute_compare(
        engine, CompareQuery.from_params({"baseline": "build=2.14.1@0c1d2e3", "candidate": f"build=2.15.0@{FINAL}"})
    )
    assert final.cases.iloc[0].candidate_median == pytest.approx(6.0)
    for bad in ("build=2.15.0@xyz", "build=2.15.0@12ab", "build=@1a2b3c4"):
        with pytest.raises(StoreError, match="build=<version>@<git hash>"):
            parse_selector(bad, "baseline")
    with pytest.raises(StoreError) as err:
        compute_compare(
            engine, CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "build=2.15.0@abcdef0"})
        )
    assert err.value.status == 404


def test_pickers_list_each_build_of_a_shared_version(engine):
    picks = available_selectors(engine)
    builds = picks[picks.kind == "build"]
    assert builds.selector.tolist() == ["torch=2.13.0", "torch=2.14.1", "build=2.15.0@1a2b3c4", "build=2.15.0@9f8e7d6"]
    assert builds.n_runs.tolist() == [1, 2, 3, 2]
    assert builds.label.tolist()[0] == "torch 2.13.0 (release)"


def test_api_refusal_and_pool_note(engine, monkeypatch):
    from starlette.applications import Starlette

    from api import query

    monkeypatch.setattr(query, "_engine", lambda: engine)
    client = TestClient(Starlette(routes=guard_routes(query.ROUTES)))
    refused = client.get("/api/v1/compare", params={"baseline": "torch=2.14.1", "candidate": "torch=2.15.0"})
    assert refused.status_code == 400 and "matches 2 builds" in refused.text
    pooled = client.get(
        "/api/v1/compare", params={"baseline": "torch=2.14.1", "candidate": "torch=2.15.0", "pool": "1"}
    )
    assert pooled.status_code == 200 and any("pools 2 builds" in n for n in pooled.json()["notes"])


def test_chip_scope_keys_on_gpu_cores(tmp_path):
    engine = open_store(tmp_path / "cores.duckdb")
    # a 30-core and a 40-core M3 Max: 300 vs 400 GB/s, never one scope
    _ingest(engine, "2.14.1", OLD, "b", 10.0, machine="mbp-30", cores=30)
    _ingest(engine, "2.14.1", OLD, "b", 8.0, machine="mbp-40", cores=40)
    _ingest(engine, "2.14.1", OLD, "b", 8.2, machine="studio-40", cores=40)
    _ingest(engine, "2.15.0", RC, "c", 9.0, machine="mbp-30", cores=30)
    _ingest(engine, "2.15.0", RC, "c", 7.0, machine="mbp-40", cores=40)
    _ingest(engine, "2.15.0", RC, "c", 7.2, machine="studio-40", cores=40)
    _ingest(engine, "2.15.0", RC, "c", 7.2, machine="linux", chip=None, cores=None)
    result = compute_compare(
        engine, CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0", "scope": "chip"})
    )
    cases = result.cases.set_index("scope")
    assert sorted(cases.index) == ["Apple M3 Max (30-core GPU)", "Apple M3 Max (40-core GPU)"]
    assert cases.loc["Apple M3 Max (40-core GPU)"].baseline_machines == 2
    assert cases.loc["Apple M3 Max (30-core GPU)"].baseline_machines == 1
    assert cases.loc["Apple M3 Max (30-core GPU)"].baseline_median == pytest.approx(10.0)
    assert any("same chip and GPU core count" in n for n in result.notes)
    engine.dispose()
