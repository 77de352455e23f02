"""Each derived figure has one definition (issue 37): the side quartiles' SQL (db.stats.lists.quartiles_sql) gives
the numpy path's floats to the last bit, and the ratio conversions (db.stats.ratios) are each other's inverses
where they should be."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa

from db.stats.lists import QUARTILES, SampleLists, quartiles_sql
from db.stats.ratios import as_fraction, as_percent, factor, orient, oriented_interval, worse_fraction
from db.stats.significance import summarize_lists


def test_the_quartiles_sql_gives_the_numpy_paths_floats():
    rng = np.random.default_rng(37)
    lists = [rng.lognormal(3.0, 0.4, n).tolist() for n in (1, 2, 3, 5, 10, 17, 40)]
    ours = summarize_lists(SampleLists.from_arrow(pa.chunked_array([pa.array(lists, pa.list_(pa.float64()))])))
    con = duckdb.connect()
    con.register("t", pa.table({"i": list(range(len(lists))), "s": lists}))
    sql = f"SELECT i, {quartiles_sql('x')} FROM (SELECT i, unnest(s) AS x FROM t) GROUP BY i ORDER BY i"
    theirs = con.execute(sql).fetchall()
    for name, column in zip(QUARTILES, zip(*[row[1:] for row in theirs])):
        assert np.array_equal(getattr(ours, name), np.array(column)), name


def test_ratio_conversions():
    ratio, lower = np.array([0.8, 1.25, 2.0]), np.array([True, True, False])
    oriented = orient(ratio, lower)
    assert oriented.tolist() == [1.25, 0.8, 2.0]
    low, high = oriented_interval(np.array([0.5, 1.0, 1.5]), np.array([1.0, 2.0, 2.5]), lower)
    assert low.tolist() == [1.0, 0.5, 1.5] and high.tolist() == [2.0, 1.0, 2.5]  # inverting swaps the ends
    assert factor(oriented).tolist() == [1.25, 1.25, 2.0]
    assert worse_fraction(np.array([0.8]))[0] == 1.0 / 0.8 - 1.0 and worse_fraction(np.array([2.0]))[0] < 0
    assert as_fraction(as_percent(0.05)) == 0.05


def test_a_lists_quartiles_sql_gives_the_numpy_paths_floats():
    # the ingest's per-result summary (db.ingest.staging) takes each list's quartiles with list_quantile_sql
    from db.stats.lists import list_quantile_sql

    rng = np.random.default_rng(38)
    lists = [rng.lognormal(3.0, 0.4, n).tolist() for n in (1, 2, 3, 5, 10, 17, 40)]
    ours = summarize_lists(SampleLists.from_arrow(pa.chunked_array([pa.array(lists, pa.list_(pa.float64()))])))
    con = duckdb.connect()
    con.register("t", pa.table({"i": list(range(len(lists))), "s": lists}))
    sql = f"SELECT {list_quantile_sql('s', list(QUARTILES.values()))} FROM t ORDER BY i"
    theirs = np.array([row[0] for row in con.execute(sql).fetchall()])
    for k, name in enumerate(QUARTILES):
        assert np.array_equal(getattr(ours, name), theirs[:, k]), name


def test_binary_bytes_takes_the_largest_binary_unit_reached():
    from bundle.units import binary_bytes

    assert binary_bytes(512) == (512, "B")
    assert binary_bytes(1536) == (1.5, "KiB")
    assert binary_bytes(-2048) == (-2.0, "KiB")
    assert binary_bytes(3 * 2**30) == (3.0, "GiB")
    assert binary_bytes(1024**2 - 1)[1] == "KiB"


def test_a_geomean_is_one_definition_for_one_group_and_for_many():
    from db.stats.significance import geomean_ci, geomeans

    logs = np.log([2.0, 8.0, 1.0, 3.0, 12.0])
    assert np.allclose(geomeans(logs, np.array([0, 2]), np.array([2, 3])), [4.0, 36.0 ** (1 / 3)])
    assert geomean_ci(logs[:2])[0] == geomeans(logs[:2], np.array([0]), np.array([2]))[0] == 4.0
    assert all(np.isnan(x) for x in geomean_ci(np.array([])))  # no case: no geomean, not an error


def test_a_single_figure_beyond_its_rule_either_way_unless_within_rounding():
    from db.review.rules import beyond_rule

    kind = np.array(["drop", "drop", "factor", "factor", "factor", "growth"])
    b = np.array([40.0, 40.0, 1e-3, 1e-2, 0.0, 100.0])
    c = np.array([30.0, 50.0, 1e-2, 1e-3, 1e-3, 900.0])
    drop, factor_ = np.full(6, 6.0), np.full(6, 2.0)
    worse, better = beyond_rule(kind, b, c, drop, factor_, np.zeros(6, dtype=bool))
    assert worse.tolist() == [True, False, True, False, True, False]  # PSNR −10 dB, error ×10, error from 0
    assert better.tolist() == [False, True, False, True, False, False]  # PSNR +10 dB, error ÷10; growth not its
    worse, better = beyond_rule(kind, b, c, drop, factor_, np.ones(6, dtype=bool))
    assert not worse.any() and not better.any()  # within the dtype's rounding: neither
