"""Compare's picture and panels (db/views/compare_chart, status_changes, case_detail, empty_reason): derived
figures folded into their timing's row, every regression drawn whatever its rank, colours fixed per direction,
status changes with both messages, a case's provenance, and why an empty comparison is empty."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks.stores.seed import BASELINE, CANDIDATE
from db.review.comparison import CompareQuery, ComparisonResult, compute_compare
from db.review.release.status_changes import status_changes
from db.review.review import JudgedReview
from db.views.release.compare_chart import (
    BETTER,
    DIRECTIONS,
    UNCHANGED,
    UNCLEAR,
    WORSE,
    case_rows,
    chart_rows,
    chart_words,
    fold_derived,
)


def _case(metric: str, ratio: float, significance: str = "significant", **key) -> dict:
    b = 100.0
    row = {
        "scope": "m1",
        "device": "mps",
        "workload": "linear",
        "case_key": '{"M":1,"N":8}',
        "dtype": "float32",
        "compile": "eager",
        "metric": metric,
        "comparison": "ratio",
        "baseline_median": b,
        "candidate_median": b / ratio,
        "oriented_ratio": ratio,
        "difference": np.nan,
        "ci_low": ratio * 0.99,
        "ci_high": ratio * 1.01,
        "significance": significance,
        "baseline_passed": None,
        "candidate_passed": None,
        "unit": "µs",
        "change": "",
        "p_value": 0.01,
    }
    row.update(key)
    return row


def _judged(cases: pd.DataFrame) -> JudgedReview:
    """Hand-made case rows judged as a review judges them (default threshold and rules)."""
    return JudgedReview.of(ComparisonResult(CompareQuery("a", "b"), cases, pd.DataFrame(), pd.DataFrame()))


def test_derived_figures_fold_into_their_timing_row_and_are_not_counted():
    cases = pd.DataFrame(
        [
            _case("op_time", 0.5),  # 2x slower: a regression, with its bandwidth halved
            _case("achieved_bandwidth", 0.5, baseline_median=200.0, candidate_median=100.0),
            _case("bandwidth_fraction", 0.5, baseline_median=40.0, candidate_median=20.0),
            _case("achieved_bandwidth", 1.2, case_key='{"M":2,"N":8}'),  # no timing compared: stays a row
        ]
    )
    folded = fold_derived(cases)
    assert list(folded.metric) == ["op_time", "achieved_bandwidth"]
    assert folded.derived.iloc[0] == ("achieved_bandwidth 200 → 100 GB/s; bandwidth_fraction 40 → 20 %")
    rows = case_rows(_judged(cases))
    assert int(rows.regression.sum()) == 1  # one slowdown, not three
    assert list(rows.direction) == [WORSE, BETTER]


def test_every_regression_is_charted_even_below_the_largest_changes():
    big = [_case("op_time", 2.0 + i, case_key=f'{{"M":{i},"N":8}}') for i in range(10)]
    slow = _case("op_time", 1 / 1.1, case_key='{"M":99,"N":8}')  # 10 % slower: ranked last by size
    noise = _case("op_time", 0.97, "not significant", case_key='{"M":98,"N":8}')
    rows = case_rows(_judged(pd.DataFrame(big + [slow, noise])))
    drawn = chart_rows(rows, limit=3)
    assert len(drawn) == 4 and drawn.regression.sum() == 1
    assert drawn.iloc[0].case_key == '{"M":99,"N":8}'  # worst first
    assert drawn.iloc[0]["rank"] == 11
    assert set(drawn.oriented_ratio.iloc[1:]) == {11.0, 10.0, 9.0}
    assert np.isclose(drawn.iloc[0].log2_oriented_ratio, np.log2(1 / 1.1))
    assert set(drawn.label.str.contains("linear · M=")) == {True}  # human names, not JSON keys
    # not significant, its CI (0.96–0.98×) within the 5 % bound both ways: unchanged
    assert rows.set_index("case_key").direction['{"M":98,"N":8}'] == UNCHANGED

    # the words say the order drawn (worst at the top: the 10 % slowdown above the 11× win) and what is left out
    assert chart_words(drawn, 3, len(rows)) == (
        "Per-case ratio: the 3 largest changes of 12 compared cases, and 1 regression ranked lower, sorted worst "
        "(top) to best (bottom); bars from 1×, black whiskers the 95 % CI, ringed = regression; a bar past 3× ends "
        "at the edge, its value written on it. 8 more in the table below."
    )
    assert list(drawn.oriented_ratio) == sorted(drawn.oriented_ratio)  # worst → best, as the words say
    every = chart_rows(rows, limit=20)
    assert chart_words(every, 20, len(rows)).endswith("its value written on it. The table below lists them too.")


def test_unchanged_only_where_the_ci_lies_within_the_bound():
    """Issue 44: constant_pad 1.82× faster (CI 1.53–2.16×) read "unchanged" because the review's family-wise step did
    not pass it; a CI wholly beyond the bound is faster / slower, one reaching past it is not decided."""
    cases = pd.DataFrame(
        [
            _case("op_time", 1.82, "not significant", case_key='{"M":1}', ci_low=1.53, ci_high=2.16),
            _case("op_time", 1 / 1.3, "not significant", case_key='{"M":2}', ci_low=1 / 1.5, ci_high=1 / 1.1),
            _case("op_time", 1.02, "not significant", case_key='{"M":3}', ci_low=0.97, ci_high=1.04),
            _case("op_time", 1.03, "not significant", case_key='{"M":4}', ci_low=0.90, ci_high=1.20),
            _case("op_time", 1.02, "significant", case_key='{"M":5}', ci_low=1.01, ci_high=1.03),
            _case("op_time", 1.5, "unconfirmed: no replicates", case_key='{"M":6}', ci_low=np.nan, ci_high=np.nan),
        ]
    )
    rows = case_rows(_judged(cases)).set_index("case_key")
    assert list(rows.direction) == [BETTER, WORSE, UNCHANGED, UNCLEAR, BETTER, UNCLEAR]


def test_the_chart_colours_are_fixed_per_direction_whatever_the_data():
    from pages.parts.charts import DIRECTION_COLORS, ratio_chart

    only_better = chart_rows(case_rows(_judged(pd.DataFrame([_case("op_time", 2.0)]))), 5)
    spec = ratio_chart(only_better, "torch=2.14.1").to_dict(validate=True)
    colour = spec["layer"][0]["encoding"]["color"]["scale"]
    assert colour["domain"] == list(DIRECTIONS) and colour["range"][0] == DIRECTION_COLORS.range[0]
    from pages.parts.charts import LABEL_PX

    assert spec["layer"][0]["encoding"]["y"]["axis"]["labelLimit"] == LABEL_PX  # wrapped, the plot keeps the rest
    assert spec["autosize"]["type"] == "fit-x" and "step" in spec["height"]  # a row per case, never squeezed
    assert "× better than baseline torch=2.14.1" in spec["layer"][0]["encoding"]["x"]["title"]
    low, high = spec["layer"][0]["encoding"]["x"]["scale"]["domain"]
    assert low == pytest.approx(1 / high) and high > 2.0 * 1.01  # symmetric in log space, the CI end inside


def test_status_changes_of_the_seeded_store_with_their_messages(seeded):
    result = compute_compare(seeded, CompareQuery.from_params({"baseline": BASELINE, "candidate": CANDIDATE}))
    changes = status_changes(result.cases, result.unmatched)
    got = sorted(zip(changes.scope, changes.workload, changes.kind))
    want = sorted(
        [(m, "fp8", "newly supported") for m in ("studio-1", "studio-2", "air-1")]
        + [(m, "grouped_mm", "now falls back to the CPU") for m in ("studio-1", "studio-2", "air-1")]
        + [("air-1", "softmax", "new correctness failure"), ("studio-1", "vae_roundtrip", "correctness fixed")]
    )
    assert got == want
    assert list(changes.direction[:4]) == [WORSE] * 4  # new failures first
    fp8 = changes[changes.workload == "fp8"].iloc[0]
    assert fp8.change == "unsupported → ok" and "Float8_e4m3fn" in fp8.baseline_message
    assert fp8.case == "fp8 · k=256 m=256 n=256 · fp8 e4m3"


def test_an_oom_that_went_away_is_named_and_a_derived_twin_folded():
    unmatched = pd.DataFrame(
        [
            {
                "scope": "m1",
                "device": "mps",
                "workload": "vae",
                "case_key": '{"t":1}',
                "dtype": "bfloat16",
                "compile": "eager",
                "metric": metric,
                "baseline_status": "error",
                "candidate_status": "ok",
                "baseline_message": "MPS backend out of memory (MPS allocated: 20 GiB)",
                "candidate_message": None,
            }
            for metric in ("op_time", "achieved_bandwidth")
        ]
    )
    changes = status_changes(pd.DataFrame(columns=["baseline_passed", "candidate_passed"]), unmatched)
    assert list(changes.kind) == ["OOM fixed"] and list(changes.change) == ["OOM → ok"]


def test_a_cases_provenance_lists_each_sides_runs(seeded):
    from db.views.release.case_detail import case_provenance, case_trend_url

    query = CompareQuery.from_params({"baseline": BASELINE, "candidate": CANDIDATE})
    rows = case_rows(JudgedReview.of(compute_compare(seeded, query)))
    case = rows[(rows.scope == "studio-1") & (rows.workload == "decode")].iloc[0]
    runs = case_provenance(seeded, query, case)
    assert list(runs.side) == ["baseline", "baseline", "candidate", "candidate"]  # studio-1 ran each build twice
    assert set(runs.torch_version) == {"2.14.1", "2.15.0rc1"} and set(runs.machine_name) == {"studio-1"}
    assert set(runs.os_version) == {"26.1"} and list(runs.n_samples) == [5, 5, 5, 5]
    assert case_trend_url(case).startswith("trends?workload=decode&")


def test_an_empty_comparison_says_why(seeded):
    from db.views.empty_reason import empty_reason

    same = compute_compare(seeded, CompareQuery.from_params({"baseline": BASELINE, "candidate": BASELINE}))
    assert empty_reason(same).startswith(f"Baseline and candidate are the same build ({BASELINE}): nothing to compare")
    studio = "runs:" + "5eed" + f"{0:028x}"  # studio-1's first baseline run; air-1's candidate run is index 7
    air = "runs:" + "5eed" + f"{7:028x}"
    apart = compute_compare(seeded, CompareQuery.from_params({"baseline": studio, "candidate": air}))
    reason = empty_reason(apart)
    assert "share no machine" in reason and "studio-1" in reason and "air-1" in reason and "scope=chip" in reason
    full = compute_compare(seeded, CompareQuery.from_params({"baseline": BASELINE, "candidate": CANDIDATE}))
    assert empty_reason(full) is None


def test_single_figures_are_better_worse_or_unchanged_by_their_own_rule():
    gib = 2.0**30
    memory = dict(metric="memory_driver_peak", unit="B", comparison="ratio", significance="by rule", p_value=np.nan)
    psnr = dict(
        metric="psnr_vs_cpu",
        unit="dB",
        comparison="difference",
        oriented_ratio=np.nan,
        significance="by rule",
        p_value=np.nan,
    )
    cases = pd.DataFrame(
        [
            _case(ratio=33.0, case_key='{"px":512}', baseline_median=33 * gib, candidate_median=gib, **memory),
            _case(ratio=1.02, case_key='{"px":768}', baseline_median=1.02 * gib, candidate_median=gib, **memory),
            _case(
                ratio=1.0,
                case_key='{"px":1024}',
                baseline_median=31.0,
                candidate_median=50.89,
                difference=19.89,
                **psnr,
            ),
            _case(
                ratio=1.0,
                case_key='{"px":2048}',
                baseline_median=53.94,
                candidate_median=50.81,
                difference=-3.13,
                **psnr,
            ),
            _case(
                ratio=1.0, case_key='{"px":4096}', baseline_median=50.0, candidate_median=51.0, difference=1.0, **psnr
            ),
        ]
    )
    rows = case_rows(_judged(cases))
    # 33× less driver memory and +19.89 dB are wins; 2 % less memory and +1 dB are inside their rules
    assert list(rows.direction) == [BETTER, UNCHANGED, BETTER, WORSE, UNCHANGED]
    assert list(rows.regression) == [False, False, False, True, False]


def test_status_changes_count_cases_and_flag_a_newly_supported_case_failing_its_tolerance():
    def row(case_key: str, metric: str, passed=None) -> dict:
        return {
            "scope": "m1",
            "device": "mps",
            "workload": "vae",
            "case_key": case_key,
            "dtype": "bfloat16",
            "compile": "eager",
            "metric": metric,
            "baseline_status": "unsupported",
            "candidate_status": "ok",
            "baseline_message": "not implemented for 'MPS'",
            "candidate_message": None,
            "candidate_passed": passed,
        }

    unmatched = pd.DataFrame(
        [
            row('{"px":512}', "op_time"),
            row('{"px":512}', "memory_driver_peak"),
            row('{"px":512}', "psnr_vs_cpu", True),
            row('{"px":1024}', "op_time"),
            row('{"px":1024}', "psnr_vs_cpu", False),
        ]
    )
    changes = status_changes(pd.DataFrame(columns=["baseline_passed", "candidate_passed"]), unmatched)
    assert list(zip(changes.case_key, changes.kind, changes.direction)) == [
        ('{"px":1024}', "newly supported, fails its tolerance", WORSE),  # new failures first
        ('{"px":512}', "newly supported", BETTER),
    ]  # one case, three metrics: one change
    assert changes.metric.iloc[1] == "memory_driver_peak, op_time, psnr_vs_cpu"


def test_chart_labels_wrap_at_their_parts_and_units_are_named():
    from pages.parts.charts import axis_unit, samples_chart, wrap

    label = "Apple M3 Ultra (80-core GPU) · linear k_v · Qwen3-0.6B · M=1 K=1024 N=1024 · bf16 · op_time"
    assert wrap(label, 60).split("\n") == [
        "Apple M3 Ultra (80-core GPU) · linear k_v · Qwen3-0.6B",
        "M=1 K=1024 N=1024 · bf16 · op_time",
    ]
    assert wrap("short · name", 60) == "short · name"
    assert wrap("a" * 70 + " b", 60).split("\n") == ["a" * 70, "b"]  # a long word keeps its own line
    assert (
        axis_unit("sample", "µs") == "sample (µs)"
        and axis_unit("max_abs_error", "1") == "max_abs_error (dimensionless)"
    )
    samples = pd.DataFrame({"side": ["baseline", "candidate"], "sample": [1.0, 2.0], "unit": ["µs", "µs"]})
    spec = samples_chart(samples, "µs").to_dict(validate=True)
    assert {layer["encoding"]["x"]["title"] for layer in spec["layer"]} == {"sample (µs)"}  # not "sample, sample (µs)"


def test_a_long_part_keeps_the_separator_before_it_when_wrapped():
    from pages.parts.charts import wrap

    assert wrap("ab · " + "x" * 40 + " " + "y" * 40, 60).split("\n") == ["ab · " + "x" * 40, "y" * 40]


def test_the_case_menu_holds_the_charted_cases_not_every_case(tmp_path, monkeypatch):
    """The case-detail menu lists what the chart shows (and a case picked in the table), not every compared case:
    a 50k-case review sent every label to the browser."""
    from benchmarks.stores.seed import seed_store
    from tests.page_store import open_page, page_store

    page_store(tmp_path, monkeypatch, seed_store)
    query = {"baseline": BASELINE, "candidate": CANDIDATE, "chart_cases": "5"}
    at = open_page("compare.py", query)
    assert not at.exception, [e.value for e in at.exception]
    menu = next(s for s in at.selectbox if s.label.startswith("Case (or select"))
    at_all = open_page("compare.py", {**query, "chart_cases": "500"})
    every = next(s for s in at_all.selectbox if s.label.startswith("Case (or select"))
    assert 5 <= len(menu.options) < len(every.options)  # 5 largest changes (+ regressions ranked lower) of them all


def test_the_not_compared_table_names_each_case_not_only_its_json_key():
    from db.query.compare.unmatched import COLUMNS
    from db.views.release.compare import UNMATCHED_VIEW, named_unmatched

    row = dict.fromkeys(COLUMNS) | {
        "scope": "m1",
        "device": "mps",
        "workload": "conv2d",
        "case_key": '{"c":96,"h":256,"w":256}',
        "dtype": "float16",
        "compile": "eager",
        "metric": "op_time",
        "reason": "no candidate result",
    }
    shown = named_unmatched(pd.DataFrame([row]))
    assert list(shown.columns) == UNMATCHED_VIEW and shown.columns[0] == "case"
    assert shown.case.iloc[0] == "conv2d · c=96 h=256 w=256 · fp16"  # its key stays, last
    assert shown.case_key.iloc[0] == '{"c":96,"h":256,"w":256}' and shown.columns[-1] == "case_key"
    assert named_unmatched(pd.DataFrame(columns=COLUMNS)).empty
