"""Trends: one version order for every chip (2.13.0 never after a 2.16 nightly), menus from the store, links."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from db.ingest.core import ingest_bundle
from db.store.engine import open_store
from db.views.browse.trends import trend, trend_choices, trend_url
from pages.parts.browse_charts import trend_chart
from tests.bundles import make_bundle, make_result

PARAMS = {"rows": 1, "vocab": 128256}
KEY = '{"rows":1,"vocab":128256}'


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """The M3 has only the nightly and 2.15.0; the M2 has 2.13.0 and 2.15.0: a per-chip order would put 2.13.0
    after the nightly on the chart's shared axis."""
    engine = open_store(tmp_path_factory.mktemp("trends") / "s.duckdb")
    runs = [
        ("m3", "Apple M3 Ultra", "2.16.0.dev20261120", "nightly", "2026-11-20", 5.0),
        ("m3", "Apple M3 Ultra", "2.15.0", "stable", None, 6.0),
        ("m2", "Apple M2 Max", "2.13.0", "stable", None, 9.0),
        ("m2", "Apple M2 Max", "2.15.0", "stable", None, 8.0),
    ]
    for day, (machine, chip, version, channel, nightly, us) in enumerate(runs, start=1):
        bundle = make_bundle(
            results=[make_result(params=PARAMS, samples=[us * f for f in (0.9, 1.0, 1.1, 1.2)])],
            started_at=f"2026-11-{day:02d}T10:00:00+00:00",
            tags={},
        )
        bundle["machine"] |= {"name": machine, "chip": chip}
        bundle["build"] |= {"torch_version": version, "channel": channel, "nightly_date": nightly}
        ingest_bundle(engine, bundle)
    yield engine
    engine.dispose()


def test_builds_share_one_version_order_across_chips(engine):
    points = trend(engine, "softmax", KEY, "float32", "eager", "op_time")
    spec = trend_chart(points).to_dict(validate=True)
    assert spec["layer"][1]["encoding"]["x"]["sort"] == ["2.13.0", "2.15.0", "2.16.0.dev20261120"]
    m3 = points[points.chip == "Apple M3 Ultra"].sort_values("build_rank")
    assert m3.torch_version.tolist() == ["2.15.0", "2.16.0.dev20261120"]
    # the IQR band: quartiles of [0.9, 1.0, 1.1, 1.2] × 9 µs on 2.13.0
    first = points[points.torch_version == "2.13.0"].iloc[0]
    assert (first.p25, first["median"], first.p75) == pytest.approx((9 * 0.975, 9 * 1.05, 9 * 1.125))
    assert spec["layer"][0]["mark"]["type"] == "area" and spec["layer"][0]["encoding"]["y2"]["field"] == "p75"


def test_menus_offer_stored_cases_by_name_and_the_link_round_trips(engine):
    choices = trend_choices(engine)
    assert choices[["workload", "case", "dtype", "compile", "metric"]].drop_duplicates().values.tolist() == [
        ["softmax", "softmax · rows=1 vocab=128256", "float32", "eager", "op_time"]
    ]
    url = trend_url("softmax", KEY, "float32", "eager", "op_time")
    query = {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}
    assert urlparse(url).path == "trends"
    assert query == {
        "workload": "softmax",
        "case_key": KEY,
        "dtype": "float32",
        "compile": "eager",
        "metric": "op_time",
    }
