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
