"""Selector parsing, version ordering, wording and the vectorised significance math (no store needed)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from db.errors import StoreError
from db.selectors import parse_selector
from db.significance import INSUFFICIENT, NOT_SIGNIFICANT, SIGNIFICANT, SampleLists, geomean_ci, significance
from db.versions import build_sort_key
from db.wording import difference_words, ratio_words


@pytest.mark.parametrize("text,kind,canonical", [
    ("torch=2.15.0rc1", "build", "torch=2.15.0rc1"), ("tag:role = candidate", "tag", "tag:role=candidate"),
    ("runs:" + "b" * 32 + "," + "a" * 32, "runs", "runs:" + "a" * 32 + "," + "b" * 32)])
def test_selectors_parse(text, kind, canonical):
    sel = parse_selector(text, "baseline")
    assert (sel.kind, sel.text) == (kind, canonical)


@pytest.mark.parametrize("text", ["", "2.15", "torch=", "tag:role", "tag:=x", "runs:xyz", "torch=2.15; drop"])
def test_bad_selectors_name_the_parameter(text):
    with pytest.raises(StoreError) as err:
        parse_selector(text, "candidate")
    assert err.value.status == 400 and err.value.problems[0].field == "candidate"


def test_versions_order_numerically_rc_before_final_nightly_by_date():
    builds = [("2.10.0", None), ("2.9.1", None), ("2.15.0", None), ("2.15.0rc1", None),
              ("2.16.0.dev20261201", "2026-12-01"), ("2.16.0.dev20261120", "2026-11-20"), ("2.14.1+cpu", None)]
    ordered = [v for v, _ in sorted(builds, key=lambda b: build_sort_key(*b))]
    assert ordered == ["2.9.1", "2.10.0", "2.14.1+cpu", "2.15.0rc1", "2.15.0", "2.16.0.dev20261120",
                       "2.16.0.dev20261201"]


def test_wording_follows_the_metric():
    assert ratio_words("op_time", 1.25) == "1.25× faster"
    assert ratio_words("op_time", 1 / 1.1) == "1.10× slower"
    assert ratio_words("memory_driver_peak", 1.1) == "1.10× less memory"
    assert ratio_words("decode_throughput", 0.5) == "2.00× slower"
    assert difference_words("psnr_vs_cpu", 19.89) == "+19.89 dB (better)"


def _lists(rows: list[list[float]]) -> SampleLists:
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    return SampleLists(np.concatenate([np.asarray(r, float) for r in rows]), offsets)


def test_significance_matches_scipy_and_separates_change_from_noise():
    rng = np.random.default_rng(7)
    base = [list(100 * (1 + rng.uniform(-0.01, 0.01, 10))) for _ in range(3)]
    cand = [list(np.array(base[0]) * 0.8), list(100 * (1 + rng.uniform(-0.01, 0.01, 10))), [80.0, 81.0]]
    sig = significance(_lists(base), _lists(cand), np.array([True, True, True]))
    assert list(sig.verdict) == [SIGNIFICANT, NOT_SIGNIFICANT, INSUFFICIENT]
    assert sig.p_value[0] == pytest.approx(mannwhitneyu(cand[0], base[0]).pvalue)
    true_ratio = np.median(cand[0]) / np.median(base[0])
    assert sig.ci_low[0] <= true_ratio <= sig.ci_high[0] and sig.ci_high[0] < 1.0
    assert sig.ci_low[1] < 1.0 < sig.ci_high[1]


def test_geomean_and_its_ci_contain_the_true_value():
    ratios = np.array([1.1, 1.2, 1.3, 1.25, 1.15, 1.22])
    centre, low, high = geomean_ci(np.log(ratios))
    assert centre == pytest.approx(float(np.prod(ratios) ** (1 / len(ratios))))
    assert low < centre < high
    assert geomean_ci(np.log(ratios)) == (centre, low, high)  # seeded


def test_change_point_finds_a_known_step_and_not_noise():
    from db.changepoints import change_points

    rng = np.random.default_rng(3)
    flat = list(10 * (1 + rng.uniform(-0.01, 0.01, 12)))
    step = flat[:7] + [v * 0.8 for v in flat[7:]]
    assert change_points(step) == [7]
    assert change_points(flat) == []
    assert change_points(flat[:6] + [flat[6] * 2] + flat[7:]) == []  # one outlier build is not a step
