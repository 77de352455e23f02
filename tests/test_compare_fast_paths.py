"""The cold Compare's shortcuts (issue #27) give what the plain way gives: t quantiles inverted once per distinct
df, derived figures matched to their timing on integer codes, warnings worded only on the rows that have them.
Each known answer is computed here the slow, obvious way."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
from scipy.special import stdtrit

from bundle.metrics import DERIVED
from db.query.compare.pivot import KEY
from db.review.cases.derived_figures import derived_pairs
from db.review.cases.text_columns import with_warnings
from db.review.cases.wording import str_column
from db.stats.replicates import holm, t_quantile


def test_t_quantile_is_stdtrit_per_case():
    rng = np.random.default_rng(7)
    df = np.concatenate(
        [rng.uniform(0.5, 300.0, 500), np.round(rng.uniform(1, 40, 500)), [np.nan, np.inf, 0.0, 1.0, 1.0]]
    )
    rng.shuffle(df)
    for q in (0.975, 0.8, 0.5):
        assert np.array_equal(t_quantile(df, q), stdtrit(df, q), equal_nan=True)
    assert t_quantile(np.array([]), 0.975).shape == (0,)
    few = np.array([3.0, np.nan, 7.0, 3.0, 1e6, 7.0, np.inf, 3.0] * 50)  # fewer distinct values than _FEW
    assert np.array_equal(t_quantile(few, 0.975), stdtrit(few, 0.975), equal_nan=True)
    assert t_quantile(np.float64(4.0), 0.9) == stdtrit(4.0, 0.9)


def _holm_by_hand(p: np.ndarray, alpha: float) -> np.ndarray:
    """Holm's step over every finite p, sorted in full (stable: ties in case order)."""
    finite = [i for i in range(len(p)) if np.isfinite(p[i])]
    order, out = sorted(finite, key=lambda i: p[i]), np.zeros(len(p), dtype=bool)
    for rank, i in enumerate(order):
        if p[i] > alpha / (len(order) - rank):
            break
        out[i] = True
    return out


def test_holm_sorts_only_what_can_pass_and_answers_as_the_full_step():
    rng = np.random.default_rng(5)
    for trial in range(200):
        m = int(rng.integers(1, 60))
        p = rng.choice([rng.uniform(0, 1e-3), rng.uniform(0, 0.06), rng.uniform(0, 1)], size=m)
        p[rng.random(m) < 0.1] = np.nan
        p[rng.random(m) < 0.1] = 0.05 / max(1, m - int(rng.integers(0, m)))  # exactly on a bound
        if trial % 7 == 0:
            p[:] = p[0]  # all tied
        assert np.array_equal(holm(p, 0.05), _holm_by_hand(p, 0.05)), p
    assert not holm(np.array([np.nan, np.nan]), 0.05).any() and holm(np.array([]), 0.05).shape == (0,)


def _pairs_by_hand(cases: pd.DataFrame) -> set[tuple]:
    """(figure's index label, timing's index label) by looking every derived row's timing up in a dict."""
    case = [k for k in KEY if k != "metric"]
    rows = {(tuple(r[k] for k in case), r["metric"]): label for label, r in cases.iterrows()}
    return {
        (label, rows[(tuple(r[k] for k in case), DERIVED[r["metric"]])])
        for label, r in cases.iterrows()
        if r["metric"] in DERIVED and (tuple(r[k] for k in case), DERIVED[r["metric"]]) in rows
    }


def test_derived_pairs_match_a_lookup_by_hand_in_any_row_order_and_in_key_order():
    rng = np.random.default_rng(11)
    metrics = [
        "op_time",
        "achieved_bandwidth",
        "decode_time",
        "decode_throughput",
        "time_to_first_token",
        "prefill_throughput",
        "psnr_db",
    ]
    matched = 0
    for trial in range(60):
        n = int(rng.integers(0, 40))
        frame = pd.DataFrame(
            {k: rng.choice(["a", "b"] if k in ("scope", "case_key") else ["x"], n) for k in KEY if k != "metric"}
        )  # few distinct cases: most have several metrics
        frame["metric"] = rng.choice(metrics, n)
        frame = frame.drop_duplicates(KEY)
        frame.index = rng.permutation(len(frame)) * 7 + 3  # labels, not positions
        found = derived_pairs(frame)
        assert set(zip(found.row, found.timing_row)) == _pairs_by_hand(frame), trial
        ordered = frame.sort_values(KEY)  # as the Compare's cases come: a case's rows adjacent
        if trial % 2:
            ordered = ordered[rng.random(len(ordered)) < 0.8]  # a subset in that order is still key-ordered
        found = derived_pairs(ordered, key_ordered=True)
        assert set(zip(found.row, found.timing_row)) == _pairs_by_hand(ordered), trial
        matched += len(found)
    assert matched > 20  # the frames had pairs to find, not only rows without one


def test_warnings_are_appended_to_the_warned_rows_only():
    frame = pd.DataFrame(
        {
            "b_warnings": [None, "CPU contention", None, None, "noisy op_time"],
            "c_warnings": [None, None, None, "battery", "thermal"],
        }
    )
    said = str_column(pa.array(["", "baseline: 2 results pooled", "x", "", ""]))
    assert list(with_warnings(said, frame)) == [
        "",
        "baseline: 2 results pooled; baseline warned: CPU contention",
        "x",
        "candidate warned: battery",
        "baseline warned: noisy op_time; candidate warned: thermal",
    ]
    quiet = frame.assign(b_warnings=None, c_warnings=None)
    assert list(with_warnings(said, quiet)) == list(said)


def test_trend_links_are_what_urlencode_writes():
    from urllib.parse import urlencode

    from db.views.browse.trends import FIELDS, trend_url, trend_urls

    cases = [
        ("sdpa", '{"n": 3, "s": "a b&c/é"}', "float16", "eager", "op_time"),
        ("x y", "k=1", "bfloat16", "max-autotune", "decode_time"),
        ("sdpa", '{"n": 3, "s": "a b&c/é"}', "float16", "eager", "op_time"),
    ]  # a repeat: quoted once, same
    expected = ["trends?" + urlencode(dict(zip(FIELDS, case))) for case in cases]
    assert trend_urls(cases) == expected
    assert trend_url(*cases[1]) == expected[1]


def test_each_cases_runs_come_out_in_run_order_whatever_order_they_were_read_in():
    from db.query.compare.pairs import runs_in_order

    def side(runs: list[list[tuple[int, list[float], list[int]]]]) -> dict:
        return {
            "samples": [[r[1] for r in case] for case in runs],
            "processes": [[r[2] for r in case] for case in runs],
            "contention": [[[0.01 * r[0]] * max(1, len(r[2])) for r in case] for case in runs],
            "seqs": [[r[0] for r in case] for case in runs],
        }

    read = [
        [(7, [3.0, 3.1], [1, 1]), (2, [1.0], []), (5, [2.0, 2.2], [2])],  # three runs, read out of order
        [],  # no ok result on this side
        [(4, [9.0], []), (4, [8.0], [])],
    ]  # one run repeating the case: its first sample decides
    b, c = side(read), side([[(1, [0.5], [])], [(3, [1.5], []), (2, [2.5], [])], [(6, [6.0], [])]])
    pivot = pa.table(
        {"metric": ["op_time"] * 3, **{f"b_{k}": v for k, v in b.items()}, **{f"c_{k}": v for k, v in c.items()}}
    )
    out = runs_in_order(pivot)
    assert "b_seqs" not in out.column_names and "c_seqs" not in out.column_names
    assert out["b_samples"].to_pylist() == [[[1.0], [2.0, 2.2], [3.0, 3.1]], [], [[8.0], [9.0]]]
    assert out["b_processes"].to_pylist() == [[[], [2], [1, 1]], [], [[], []]]  # moved with their runs
    assert out["b_contention"].to_pylist() == [[[0.02], [0.05], [0.07, 0.07]], [], [[0.04], [0.04]]]
    assert out["c_samples"].to_pylist() == [[[0.5]], [[2.5], [1.5]], [[6.0]]]


def test_identical_samples_on_both_sides_are_no_change_wherever_they_sit_in_the_arrays():
    """A case's sums are its own: with running sums, the rounding of the cases before it made identical samples
    a change of 1e-12 with no spread, p = 0 (seen: PSNR cases flipping between p 0 and 1). Exactly no change with
    exactly no spread is no evidence either way (issue 44): untestable, never p = 0 nor p = 1."""
    from db.stats.replicates import change_test, side_replicates

    def side(first: float):
        values = np.array([first, first * 1.7, first * 0.3, 31.2345, 31.2345, 31.2345])
        return side_replicates(
            values,
            np.array([0, 3, 6]),
            np.arange(7),
            np.zeros(6, np.int64),
            np.zeros(0, np.int64),
            np.array([False, False]),
        )

    test = change_test(side(12345.678), side(0.001234), np.zeros(2), np.zeros(2))
    assert test.d[1] == 0.0 and test.zero_spread[1] and np.isnan(test.p_value[1])


def test_compares_rows_are_made_once_per_judged_review(seeded):
    from benchmarks.stores.seed import BASELINE, CANDIDATE
    from db.review.comparison import CompareQuery
    from db.review.review import Review, cached_review
    from db.views.release.compare_chart import case_rows

    judged = cached_review(seeded, Review(CompareQuery(BASELINE, CANDIDATE)))
    assert case_rows(judged) is case_rows(judged)  # every render and the API share one frame until the data changes
    assert len(case_rows(judged)) > 0


def test_family_medians_are_numpy_quantile_medians_for_even_and_uneven_families():
    from db.review.families import _family_medians

    rng = np.random.default_rng(5)
    for trial in range(60):
        families, n = int(rng.integers(1, 60)), int(rng.integers(1, 400))
        family = np.sort(rng.integers(0, families, n))
        if trial == 0:  # one family of nearly every value: sorted by one lexsort, not a padded matrix
            family = np.sort(np.r_[np.zeros(200_000, dtype=np.int64), np.arange(1, 101)])
            families, n = 101, len(family)
        values = np.round(rng.normal(size=n), 1)  # ties too
        # the one quantile rule (linear interpolation, numpy's floats); pandas' median agrees to the last ulp or so
        present = np.unique(family)
        expected = np.array([np.quantile(values[family == f], 0.5) for f in present])
        assert np.array_equal(_family_medians(family, values, families), expected), trial
        pandas = pd.DataFrame({"f": family, "v": values}).groupby("f").v.median().to_numpy()
        np.testing.assert_allclose(expected, pandas, rtol=0, atol=1e-12)


def test_code_groups_are_np_unique_groups_with_or_without_a_lookup_array():
    from db.query.key_codes import groups

    rng = np.random.default_rng(3)
    for span, n in ((50, 1000), (10**9, 500), (7, 0)):  # a lookup array; np.unique (span too wide); nothing
        code = rng.integers(0, span, n)
        member, inverse = groups(code, span)
        distinct, expected = np.unique(code, return_inverse=True)
        assert np.array_equal(code[member], distinct) and np.array_equal(inverse, expected.ravel())


def test_ratio_words_worded_once_per_distinct_text_are_each_rows_words():
    from bundle.metrics import metric
    from db.review.cases.wording import _ratio_words, ratio_words

    rng = np.random.default_rng(1)
    special = [1.0, 1.005, 0.995, 2.675, 1 / 1.125, 0.0, -1.5, np.nan, np.inf, 1e20]  # halves, undefined, huge
    for trial in range(30):
        n = int(rng.integers(0, 3000))
        oriented = np.where(rng.random(n) < 0.3, rng.choice(special, n), rng.lognormal(0, [0.03, 2.0][trial % 2], n))
        for name in ("op_time", "decode_throughput", "memory_driver_peak", "max_abs_error"):
            assert ratio_words(name, oriented).to_pylist() == _ratio_words(metric(name), oriented).to_pylist()
