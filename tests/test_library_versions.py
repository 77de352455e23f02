"""A comparison whose sides ran with different library versions says so (db.query.libraries)."""

from __future__ import annotations

from db.ingest.core import ingest_bundle
from db.query.libraries import differing_note, recorded_libraries
from db.query.selectors import parse_selector, side_runs
from db.review.comparison import CompareQuery, compute_compare
from db.store.engine import open_store
from tests.bundles import make_bundle


def _ingest(engine, version: str, tag: str, libraries: dict | None) -> None:
    build = {"torch_version": version, "channel": "stable", "python_version": "3.11.7", "collector_version": "0.1.0"}
    if libraries is not None:
        build["libraries"] = libraries
    ingest_bundle(engine, make_bundle(build=build, tags={"side": tag}))


def test_versions_per_side_and_the_note_naming_each_difference(tmp_path):
    engine = open_store(tmp_path / "libs.duckdb")
    _ingest(engine, "2.14.1", "a", {"transformers": "5.24.0", "diffusers": "0.42.1"})
    _ingest(engine, "2.14.1", "a", None)  # a bundle from before build.libraries
    _ingest(engine, "2.15.0", "b", {"transformers": "5.25.0", "diffusers": "0.42.1", "triton": "3.6.0"})
    base, cand = (
        recorded_libraries(side.libraries)
        for side in side_runs(
            engine, [parse_selector("torch=2.14.1", "baseline"), parse_selector("torch=2.15.0", "candidate")]
        )
    )
    assert base == {"diffusers": {"0.42.1", "not recorded"}, "transformers": {"5.24.0", "not recorded"}}
    assert cand == {"diffusers": {"0.42.1"}, "transformers": {"5.25.0"}, "triton": {"3.6.0"}}
    note = differing_note(base, cand)
    assert (
        "diffusers 0.42.1 / not recorded → 0.42.1; transformers 5.24.0 / not recorded → 5.25.0; "
        "triton not recorded → 3.6.0)" in note
    )
    result = compute_compare(
        engine, CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0"})
    )
    assert note in result.notes
    engine.dispose()


def test_same_versions_make_no_note(tmp_path):
    same = {"transformers": frozenset({"5.25.0"})}
    assert differing_note(same, dict(same)) is None and differing_note({}, {}) is None
    engine = open_store(tmp_path / "same.duckdb")
    _ingest(engine, "2.14.1", "a", {"transformers": "5.25.0"})
    _ingest(engine, "2.15.0", "b", {"transformers": "5.25.0"})
    result = compute_compare(
        engine, CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0"})
    )
    assert not [n for n in result.notes if n.startswith("Library versions")]
    engine.dispose()
