"""Selector parsing, version ordering, wording and the vectorised significance math (no store needed)."""

from __future__ import annotations

import numpy as np
import pytest

from bundle.builds import build_sort_key
from db.errors import StoreError
from db.query.selectors import parse_selector
from db.review.cases.wording import difference_words, ratio_words
from db.stats.significance import SampleLists, geomean_ci


@pytest.mark.parametrize(
    "text,kind,canonical",
    [
        ("torch=2.15.0rc1", "build", "torch=2.15.0rc1"),
        ("tag:role = candidate", "tag", "tag:role=candidate"),
        ("runs:" + "b" * 32 + "," + "a" * 32, "runs", "runs:" + "a" * 32 + "," + "b" * 32),
    ],
)
def test_selectors_parse(text, kind, canonical):
    sel = parse_selector(text, "baseline")
    assert (sel.kind, sel.text) == (kind, canonical)


@pytest.mark.parametrize("text", ["", "2.15", "torch=", "tag:role", "tag:=x", "runs:xyz", "torch=2.15; drop"])
def test_bad_selectors_name_the_parameter(text):
    with pytest.raises(StoreError) as err:
        parse_selector(text, "candidate")
    assert err.value.status == 400 and err.value.problems[0].field == "candidate"


def test_versions_order_numerically_rc_before_final_nightly_by_date():
    builds = [
        ("2.10.0", None),
        ("2.9.1", None),
        ("2.15.0", None),
        ("2.15.0rc1", None),
        ("2.16.0.dev20261201", "2026-12-01"),
        ("2.16.0.dev20261120", "2026-11-20"),
        ("2.14.1+cpu", None),
    ]
    ordered = [v for v, _ in sorted(builds, key=lambda b: build_sort_key(*b))]
    assert ordered == [
        "2.9.1",
        "2.10.0",
        "2.14.1+cpu",
        "2.15.0rc1",
        "2.15.0",
        "2.16.0.dev20261120",
        "2.16.0.dev20261201",
    ]


def test_wording_follows_the_metric():
    assert ratio_words("op_time", [1.25]).to_pylist() == ["1.25× faster"]
    assert ratio_words("op_time", [1 / 1.1]).to_pylist() == ["1.10× slower"]
    assert ratio_words("memory_driver_peak", [1.1]).to_pylist() == ["1.10× less memory"]
    assert ratio_words("decode_throughput", [0.5]).to_pylist() == ["2.00× slower"]
    assert difference_words("psnr_vs_cpu", 19.89) == "+19.89 dB (better)"


def _lists(rows: list[list[float]]) -> SampleLists:
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    return SampleLists(np.concatenate([np.asarray(r, float) for r in rows]), offsets)


def test_geomean_and_its_ci_contain_the_true_value():
    ratios = np.array([1.1, 1.2, 1.3, 1.25, 1.15, 1.22])
    centre, low, high = geomean_ci(np.log(ratios))
    assert centre == pytest.approx(float(np.prod(ratios) ** (1 / len(ratios))))
    assert low < centre < high
    assert geomean_ci(np.log(ratios)) == (centre, low, high)  # seeded


def test_change_point_finds_a_known_step_and_not_noise():
    from db.stats.changepoints import change_points

    rng = np.random.default_rng(3)
    flat = list(10 * (1 + rng.uniform(-0.01, 0.01, 12)))
    step = flat[:7] + [v * 0.8 for v in flat[7:]]
    assert change_points(step) == [7]
    assert change_points(flat) == []
    assert change_points(flat[:6] + [flat[6] * 2] + flat[7:]) == []  # one outlier build is not a step


def test_vectorised_statistics_equal_plain_per_case_answers():
    from db.stats.significance import bootstrap_means, row_percentiles, summarize_lists

    rng = np.random.default_rng(11)
    rows = [list(rng.normal(50, 5, n)) for n in (3, 5, 5, 10, 1, 0, 7)]
    stats = summarize_lists(_lists(rows))
    for i, r in enumerate(rows):
        if r:
            assert stats.median[i] == pytest.approx(np.median(r))
            assert (stats.p25[i], stats.p75[i]) == pytest.approx(tuple(np.quantile(r, [0.25, 0.75])))
        else:
            assert np.isnan(stats.median[i])
    x = rng.normal(size=(40, 400))
    assert np.allclose(row_percentiles(x.copy(), (2.5, 97.5)), np.percentile(x, [2.5, 97.5], axis=1))
    logs = rng.normal(size=(3, 12))  # the bootstrap as a matrix product equals drawing cases and averaging
    draws = np.random.default_rng([20261202, 12]).integers(0, 12, size=(1000, 12))
    assert np.allclose(bootstrap_means(logs), logs[:, draws].mean(axis=2))


def test_sample_lists_take_and_caveats():
    import pandas as pd

    from db.review.cases.text_columns import caveats

    lists = _lists([[1.0, 2.0], [3.0], [4.0, 5.0, 6.0]]).take(np.array([True, False, True]))
    assert lists.values.tolist() == [1.0, 2.0, 4.0, 5.0, 6.0] and lists.offsets.tolist() == [0, 2, 5]
    frame = pd.DataFrame(
        {
            "b_pooled": [1, 2, 1],
            "c_pooled": [1, 3, 1],
            "b_machines": [1, 2, 1],
            "c_machines": [1, 1, 1],
            "b_other": [None, "error", None],
            "c_other": [None, None, "fallback"],
        }
    )
    assert caveats(frame, True).tolist() == [
        "",
        "baseline: 2 results pooled; candidate: 3 results pooled; baseline: 2 machines pooled; "
        "baseline: error results excluded",
        "candidate: fallback results excluded",
    ]
    assert caveats(frame, False).tolist()[1] == (
        "baseline: 2 results pooled; candidate: 3 results pooled; baseline: error results excluded"
    )


def test_geomean_summary_names_its_family_and_orients_the_ci():
    import pandas as pd

    from db.review.comparison import CompareQuery
    from db.review.families import family_frame

    cases = pd.DataFrame(
        {
            "scope": "m1",
            "device": "mps",
            "workload": "linear",
            "metric": "op_time",
            "dtype": "bfloat16",
            "compile": "eager",
            "comparison": "ratio",
            "oriented_ratio": [0.8, 0.9, 0.85],
            "significance": "significant",
        }
    )
    fam = family_frame(cases, CompareQuery("torch=2.14.1", "torch=2.15.0rc1")).iloc[0]
    assert fam.geomean == pytest.approx((0.8 * 0.9 * 0.85) ** (1 / 3)) and fam.n_worse == 3
    low, high = 1 / fam.ci_high, 1 / fam.ci_low  # the CI in "× slower" terms, as the words say it
    assert fam.summary == (
        f"m1 · linear op_time bfloat16 eager: geomean {1 / fam.geomean:.2f}× slower "
        f"(95 % CI {low:.2f}–{high:.2f}×) over 3 cases, baseline torch=2.14.1"
    )


def test_vectorised_ratio_words_equal_per_value_formatting():
    from db.review.cases.wording import ratio_words

    values = np.array([1.005, 0.995, 1 / 1.005, 1.125, 1 / 1.125, 2.675, 1.0, 0.999, 1e20, 0.0, -1.0, np.nan, np.inf])

    def plain(o: float) -> str:  # the rule, one value at a time with Python's own formatting
        if not 0 < o < float("inf"):
            return "ratio undefined"
        shown = f"{o:.2f}" if o >= 1 else f"{1 / o:.2f}"
        return "1.00× (no change)" if shown == "1.00" else f"{shown}× {'faster' if o > 1 else 'slower'}"

    words = ratio_words("op_time", values).to_pylist()
    assert words == [plain(v) for v in values.tolist()]
    assert words[:3] == ["1.00× (no change)", "1.01× slower", "1.00× (no change)"]
    assert words[-4:] == ["ratio undefined"] * 4
