"""The chart builders (pages/parts/charts.py, pages/parts/browse_charts.py). The Compare charts skip Altair's schema check when Streamlit converts them
(it cost ~150 ms a chart): each spec is checked here instead, and the unchecked conversion gives exactly the
checked spec."""

import altair as alt
import pytest

from db.ingest.core import ingest_bundle
from db.review.comparison import CompareQuery, compute_compare
from db.review.review import JudgedReview
from db.store.engine import open_store
from db.views.release.compare_chart import case_rows, chart_rows
from pages.parts.charts import ratio_chart, samples_chart
from tests.bundles import make_bundle


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    engine = open_store(tmp_path_factory.mktemp("charts") / "s.duckdb")
    ingest_bundle(engine, make_bundle())
    ingest_bundle(
        engine,
        make_bundle(
            build={
                "torch_version": "2.16.0",
                "channel": "nightly",
                "python_version": "3.11.7",
                "collector_version": "0.1.0",
            }
        ),
    )
    found = compute_compare(
        engine, CompareQuery.from_params({"baseline": "torch=2.15.0rc1", "candidate": "torch=2.16.0"})
    )
    engine.dispose()
    return found


def _charts(result) -> list:
    data = chart_rows(case_rows(JudgedReview.of(result)), 60)
    row = int(data.row.iloc[0])
    return [ratio_chart(data, "torch=2.15.0rc1"), samples_chart(result.case_samples(row), data.unit[row])]


def test_every_chart_spec_passes_the_vega_lite_schema_and_converts_unchanged(result):
    assert len(result.cases) > 0
    for chart in _charts(result):
        assert isinstance(chart, (alt.LayerChart, alt.Chart))
        checked = chart.to_dict(validate=True)  # raises on a spec the schema refuses
        assert chart.to_dict() == checked


def test_a_broken_spec_is_still_caught_by_the_check(result):
    chart = _charts(result)[0]
    chart.layer[0].mark = {"type": "no-such-mark"}
    chart.to_dict()  # unchecked: what Streamlit calls
    with pytest.raises(Exception, match="no-such-mark"):
        chart.to_dict(validate=True)


def _data(chart) -> list[dict]:
    """The rows a chart draws (its top-level dataset, or each layer's)."""
    spec = chart.to_dict(validate=True)
    return [row for rows in spec.get("datasets", {}).values() for row in rows]


def test_trend_matrix_memory_and_correctness_charts_draw_their_views_figures(seeded):
    from db.views.browse.correctness import correctness
    from db.views.browse.matrix import matrix, matrix_builds, matrix_grid
    from db.views.browse.memory import NESTED, chart_rows, memory_builds, memory_compare, memory_long, memory_panels
    from db.views.browse.trends import trend
    from pages.parts.browse_charts import correctness_chart, matrix_chart, memory_chart, trend_chart

    points = trend(seeded, "softmax", '{"rows":1,"vocab":128256}', "float32", "eager", "op_time")
    drawn = _data(trend_chart(points))
    assert sorted(r["median"] for r in drawn if not r["change_point"]) == sorted(points[~points.change_point]["median"])
    assert trend_chart(points).to_dict()["layer"][0]["encoding"]["y"]["title"] == "median (µs)"

    cells = matrix(seeded, "op_time", "2.14.1", "chip", "float32", "eager", "")
    grid, span = matrix_grid(cells, matrix_builds(seeded), "2.14.1")
    drawn = _data(matrix_chart(grid, matrix_builds(seeded), span))
    assert sorted(r["geomean"] for r in drawn if r["has_data"]) == sorted(cells.geomean)

    long = memory_long(seeded)
    builds, _ = memory_builds(long)
    for _, panel in memory_panels(memory_compare(seeded, long, builds[0], builds[-1])):
        rows = chart_rows(panel)
        drawn = _data(memory_chart(rows, NESTED))
        assert sorted(r["GiB"] for r in drawn if r["GiB"] is not None) == sorted(rows.GiB.dropna())
        assert len({(r["case"], r["figure"], r["side"]) for r in drawn}) == len(drawn)  # one bar each, never summed

    records = correctness(seeded)
    psnr = records[records.metric == "psnr_vs_cpu"].dropna(subset=["median"])
    chart = correctness_chart(psnr, "psnr_vs_cpu")
    assert sorted(r["median"] for r in _data(chart)) == sorted(psnr["median"])
    assert chart.to_dict()["encoding"]["y"]["title"] == "psnr_vs_cpu (dB)"
