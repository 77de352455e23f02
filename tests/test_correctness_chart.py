"""Correctness draws PSNR in dB even when its records carry no tolerance (a store's usual PSNR records): the slope
chart has a point per side and case, its axis says dB to 0.1 dB, and a tolerance rule is drawn only where known."""

from __future__ import annotations

from bundle.schema import Bundle
from db.ingest.core import ingest_bundle
from tests.chart_data import drawn_charts, layer_rows
from tests.dashboard_bundles import known_bundle, raw
from tests.page_store import open_page, page_store

PSNR_DB = {"2.14.1": 10.06, "2.15.0rc1": 29.95}


def _without_tolerance(bundle: Bundle) -> Bundle:
    results = [
        r.model_copy(update={"tolerance": None, "passed": None}) if r.metric == "psnr_vs_cpu" else r
        for r in bundle.results
    ]
    return bundle.model_copy(update={"results": results})


def _fill(engine) -> None:
    for i, (version, channel) in enumerate([("2.14.1", "stable"), ("2.15.0rc1", "rc")]):
        ingest_bundle(
            engine, raw(_without_tolerance(known_bundle(i, version, channel, 10.0, PSNR_DB[version], True))), "test"
        )


def test_psnr_without_a_tolerance_is_drawn_in_db(tmp_path, monkeypatch):
    page_store(tmp_path, monkeypatch, _fill)
    at = open_page("correctness.py", {"metric": "psnr_vs_cpu"})
    assert not at.exception and not at.error, [e.value for e in at.exception]
    (slope, slope_rows), (builds, build_rows) = drawn_charts(at)
    lines, rules, labels = layer_rows(slope, slope_rows)
    assert sorted(r["value"] for r in lines) == [10.06, 29.95]  # both sides drawn: data rows, not an empty chart
    assert rules == [] and labels == []  # no tolerance known: no rule, and no rule at 0 stretching the axis
    y = slope["layer"][0]["encoding"]["y"]
    assert y["title"] == "psnr_vs_cpu (dB)" and y["axis"]["format"] == ".1f"  # never "0.000000"
    assert sorted(r["median"] for r in build_rows[next(iter(build_rows))]) == [10.06, 29.95]
    assert builds["encoding"]["y"]["axis"]["format"] == ".1f"
    assert "1 case(s) carry none" in at.caption[0].value


def test_a_known_tolerance_is_a_labelled_rule(tmp_path, monkeypatch):
    def fill(engine):
        for i, (version, channel) in enumerate([("2.14.1", "stable"), ("2.15.0rc1", "rc")]):
            ingest_bundle(engine, raw(known_bundle(i, version, channel, 10.0, PSNR_DB[version], i == 1)), "test")

    page_store(tmp_path, monkeypatch, fill)
    at = open_page("correctness.py", {"metric": "psnr_vs_cpu"})
    (slope, slope_rows), _ = drawn_charts(at)
    _, rules, labels = layer_rows(slope, slope_rows)
    assert [r["value"] for r in rules] == [40.0] and labels[0]["text"] == "tolerance 40 dB"
