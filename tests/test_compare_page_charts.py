"""The Compare page's charts skip Altair's schema check when Streamlit converts them (it cost ~150 ms a chart):
each spec is checked here instead, and the unchecked conversion gives exactly the checked spec."""
import altair as alt
import pytest

from db.views.compare import CompareQuery, compute_compare
from db.ingest.core import ingest_bundle
from db.store.engine import open_store
from tests.bundles import make_bundle


@pytest.fixture(scope="module")
def page():
    """pages/compare.py's functions, without running the page body (it needs a Streamlit session)."""
    source = open("pages/compare.py", encoding="utf-8").read().replace("\nguarded(_render)\n", "\n")
    namespace = {"__name__": "compare_page_under_test", "__file__": "pages/compare.py"}
    exec(compile(source, "pages/compare.py", "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    engine = open_store(tmp_path_factory.mktemp("charts") / "s.duckdb")
    ingest_bundle(engine, make_bundle())
    ingest_bundle(engine, make_bundle(build={"torch_version": "2.16.0", "channel": "nightly",
                                             "python_version": "3.11.7", "collector_version": "0.1.0"}))
    found = compute_compare(engine, CompareQuery.from_params({"baseline": "torch=2.15.0rc1",
                                                              "candidate": "torch=2.16.0"}))
    engine.dispose()
    return found


def _charts(page, result) -> list:
    data = page["charted"](result.cases, 60)
    shown = data[data.metric == data.metric.iloc[0]]
    row = int(shown.row.iloc[0])
    return [page["_ratio_chart"](data), page["_absolute_chart"](shown, shown.unit.iloc[0]),
            page["_samples_chart"](result.case_samples(row), shown.unit[row])]


def test_every_chart_spec_passes_the_vega_lite_schema_and_converts_unchanged(page, result):
    assert len(result.cases) > 0
    for chart in _charts(page, result):
        assert isinstance(chart, (alt.LayerChart, alt.Chart))
        checked = chart.to_dict(validate=True)  # raises on a spec the schema refuses
        assert chart.to_dict() == checked


def test_a_broken_spec_is_still_caught_by_the_check(page, result):
    chart = _charts(page, result)[0]
    chart.layer[0].mark = {"type": "no-such-mark"}
    chart.to_dict()  # unchecked: what Streamlit calls
    with pytest.raises(Exception, match="no-such-mark"):
        chart.to_dict(validate=True)

