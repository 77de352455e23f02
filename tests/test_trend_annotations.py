"""Trends annotates its series with the builds that first appeared in its time range (from the store's runs): a
store with two builds at known times gives two annotation rows, each at its build with its first run's time; a
build first run before the series began, or one the series does not plot, is not marked."""

from __future__ import annotations

from db.ingest.core import ingest_bundle
from db.views.browse.trends import build_annotations, trend
from tests.bundles import make_bundle, make_result
from tests.chart_data import drawn_charts, layer_rows
from tests.page_store import open_page, page_store

CASE = {
    "workload": "softmax",
    "case_key": '{"rows":1,"vocab":128256}',
    "dtype": "float32",
    "compile": "eager",
    "metric": "op_time",
}
# (build, channel, started_at, µs); 2.15.0rc1 runs twice: its first run is the one annotated
RUNS = [
    ("2.14.1", "release", "2026-11-01T10:00:00+00:00", 10.0),
    ("2.15.0rc1", "rc", "2026-11-08T09:30:00+00:00", 7.0),
    ("2.15.0rc1", "rc", "2026-11-09T12:00:00+00:00", 7.1),
]


def _bundle(version: str, channel: str, started: str, results: list[dict]) -> dict:
    return make_bundle(
        started_at=started,
        ended_at=started.replace(":00+", ":59+"),
        results=results,
        build={"torch_version": version, "channel": channel, "python_version": "3.11.7", "collector_version": "0.1.0"},
    )


def _fill(engine) -> None:
    for version, channel, started, us in RUNS:
        ingest_bundle(
            engine, _bundle(version, channel, started, [make_result(samples=[us, us * 1.01, us * 0.99])]), "test"
        )
    other = [make_result(params={"rows": 4, "vocab": 32000})]  # another case only: not in the plotted series
    ingest_bundle(engine, _bundle("2.13.0", "release", "2026-11-03T08:00:00+00:00", other), "test")


def test_the_view_finds_each_builds_first_run_in_the_series_range(tmp_path, monkeypatch):
    from db.store.engine import open_store

    engine = open_store(page_store(tmp_path, monkeypatch, _fill))
    points = trend(engine, *CASE.values())
    found = build_annotations(engine, points)
    assert found[["torch_version", "label"]].values.tolist() == [
        ["2.14.1", "2.14.1 first run 2026-11-01 10:00 UTC"],
        ["2.15.0rc1", "2.15.0rc1 first run 2026-11-08 09:30 UTC"],
    ]
    from pages.parts.browse_charts import annotated_trend_chart

    annotated_trend_chart(points, found).to_dict(validate=True)  # the layered spec passes the Vega-Lite schema
    later = points[points.torch_version == "2.15.0rc1"]  # a series that begins after 2.14.1's first run
    assert build_annotations(engine, later).torch_version.tolist() == ["2.15.0rc1"]
    engine.dispose()


def test_the_trends_chart_draws_the_annotation_rows(tmp_path, monkeypatch):
    page_store(tmp_path, monkeypatch, _fill)
    at = open_page("trends.py", CASE)
    assert not at.exception and not at.error
    ((spec, rows),) = drawn_charts(at)
    layers = layer_rows(spec, rows)
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["layer"]]
    rule_rows, text_rows = layers[marks.index("rule")], layers[marks.index("text")]
    expected = [("2.14.1", "2026-11-01 10:00"), ("2.15.0rc1", "2026-11-08 09:30")]
    for drawn in (rule_rows, text_rows):
        assert [(r["torch_version"], str(r["first_seen"])[:16].replace("T", " ")) for r in drawn] == expected
    assert spec["layer"][marks.index("rule")]["encoding"]["x"]["field"] == "torch_version"
