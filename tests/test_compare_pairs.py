"""The Compare query's read path (db.query.compare.pairs, db.query.key_codes): key order outside DuckDB, the detail
attached by position, combined codes, and the significance blocks on worker threads giving the inline answer."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from db.query import key_codes
from db.query.compare.pairs import attach_detail, key_order


def test_key_order_is_byte_order_column_by_column():
    rows = [("m2", "b"), ("m10", "a"), ("m2", "a"), ("é", "a"), ("Z", "z"), ("m10", "a")]
    table = pa.table({"scope": [r[0] for r in rows], "workload": [r[1] for r in rows]})
    order = key_order(table, ["scope", "workload"])
    expected = sorted(range(len(rows)), key=lambda i: (rows[i][0].encode(), rows[i][1].encode(), i))  # stable
    assert order.tolist() == expected


def test_combined_codes_renumber_before_int64_overflows():
    rng = np.random.default_rng(3)
    columns = [rng.integers(0, 1 << 20, 500) for _ in range(5)]  # 2¹⁰⁰ combinations: must renumber
    code = key_codes.combine(((c, 1 << 20) for c in columns), 500)
    as_tuples = list(zip(*(c.tolist() for c in columns)))
    assert np.argsort(code, kind="stable").tolist() == sorted(range(500), key=lambda i: (as_tuples[i], i))
    assert len(set(code.tolist())) == len(set(as_tuples))


_SAME = ("scope", "device", "workload", "dtype", "compile", "metric")  # one value: case_key tells cases apart


def _pivot(keys: list[str], b_results: list[int], b_pooled: list[int]) -> pa.Table:
    n = len(keys)
    return pa.table(
        {
            **{k: ["x"] * n for k in _SAME},
            "case_key": keys,
            "b_results": b_results,
            "b_pooled": b_pooled,
            "c_results": [1] * n,
            "c_pooled": [1] * n,
        }
    )


def _detail(keys: list[str], other: list[str]) -> pa.Table:
    n, text, number = len(keys), pa.array([None] * len(keys), pa.string()), pa.array([None] * len(keys), pa.float64())
    return pa.table(
        {
            **{k: ["x"] * n for k in _SAME},
            "case_key": keys,
            "b_other": other,
            "b_message": ["why"] * n,
            "b_fallback_median": number,
            "c_other": text,
            "c_message": text,
            "c_fallback_median": number,
        }
    )


def test_detail_lands_on_the_cases_with_a_non_ok_result():
    pivot = _pivot(["a", "b", "c"], b_results=[1, 2, 1], b_pooled=[1, 1, 0])  # b and c had a non-ok result
    joined = attach_detail(pivot, _detail(["b", "c"], ["error", "unavailable"]))
    assert joined["b_other"].to_pylist() == [None, "error", "unavailable"]
    assert joined["b_message"].to_pylist() == [None, "why", "why"]


def test_detail_that_does_not_line_up_is_refused():
    pivot = _pivot(["a", "b"], b_results=[2, 1], b_pooled=[1, 1])  # only "a" had a non-ok result
    with pytest.raises(RuntimeError, match="does not line up"):
        attach_detail(pivot, _detail(["b"], ["error"]))
