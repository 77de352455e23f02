"""The cold Compare's shortcuts (issue #27) give what the plain way gives: t quantiles inverted once per distinct
df, derived figures matched to their timing on integer codes, warnings worded only on the rows that have them.
Each known answer is computed here the slow, obvious way."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
from scipy.special import stdtrit

from bundle.metrics import DERIVED
from db.query.case_pairs import KEY
from db.review.case_text import with_warnings
from db.review.derived import derived_pairs
from db.review.wording import str_column
from db.stats.replicates import t_quantile


def test_t_quantile_is_stdtrit_per_case():
    rng = np.random.default_rng(7)
    df = np.concatenate([rng.uniform(0.5, 300.0, 500), np.round(rng.uniform(1, 40, 500)),
                         [np.nan, np.inf, 0.0, 1.0, 1.0]])
    rng.shuffle(df)
    for q in (0.975, 0.8, 0.5):
        assert np.array_equal(t_quantile(df, q), stdtrit(df, q), equal_nan=True)
    assert t_quantile(np.array([]), 0.975).shape == (0,)


def _pairs_by_hand(cases: pd.DataFrame) -> set[tuple]:
    """(figure's index label, timing's index label) by looking every derived row's timing up in a dict."""
    case = [k for k in KEY if k != "metric"]
    rows = {(tuple(r[k] for k in case), r["metric"]): label for label, r in cases.iterrows()}
    return {(label, rows[(tuple(r[k] for k in case), DERIVED[r["metric"]])]) for label, r in cases.iterrows()
            if r["metric"] in DERIVED and (tuple(r[k] for k in case), DERIVED[r["metric"]]) in rows}


def test_derived_pairs_match_a_lookup_by_hand_in_any_row_order():
    rng = np.random.default_rng(11)
    metrics = ["op_time", "achieved_bandwidth", "decode_time", "decode_throughput", "time_to_first_token",
               "prefill_throughput", "psnr_db"]
    matched = 0
    for trial in range(60):
        n = int(rng.integers(0, 40))
        frame = pd.DataFrame({k: rng.choice(["a", "b"] if k in ("scope", "case_key") else ["x"], n)
                              for k in KEY if k != "metric"})  # few distinct cases: most have several metrics
        frame["metric"] = rng.choice(metrics, n)
        frame = frame.drop_duplicates(KEY)
        frame.index = rng.permutation(len(frame)) * 7 + 3  # labels, not positions
        found = derived_pairs(frame)
        assert set(zip(found.row, found.timing_row)) == _pairs_by_hand(frame), trial
        matched += len(found)
    assert matched > 20  # the frames had pairs to find, not only rows without one


def test_warnings_are_appended_to_the_warned_rows_only():
    frame = pd.DataFrame({"b_warnings": [None, "CPU contention", None, None, "noisy op_time"],
                          "c_warnings": [None, None, None, "battery", "thermal"]})
    said = str_column(pa.array(["", "baseline: 2 results pooled", "x", "", ""]))
    assert list(with_warnings(said, frame)) == [
        "", "baseline: 2 results pooled; baseline warned: CPU contention", "x", "candidate warned: battery",
        "baseline warned: noisy op_time; candidate warned: thermal"]
    quiet = frame.assign(b_warnings=None, c_warnings=None)
    assert list(with_warnings(said, quiet)) == list(said)


def test_trend_links_are_what_urlencode_writes():
    from urllib.parse import urlencode

    from db.views.trends import FIELDS, trend_url, trend_urls

    cases = [("sdpa", '{"n": 3, "s": "a b&c/é"}', "float16", "eager", "op_time"),
             ("x y", "k=1", "bfloat16", "max-autotune", "decode_time"),
             ("sdpa", '{"n": 3, "s": "a b&c/é"}', "float16", "eager", "op_time")]  # a repeat: quoted once, same
    expected = ["trends?" + urlencode(dict(zip(FIELDS, case))) for case in cases]
    assert trend_urls(cases) == expected
    assert trend_url(*cases[1]) == expected[1]
