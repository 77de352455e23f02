"""mpsbench/workflows/bisect_search.py (groundwork for `mpsbench bisect`): the interval search over ordered builds and the
step verdict from two reviews; the first bad build is found in ⌈log2 N⌉ decided steps wherever it is planted,
an unclear step stops the search with the interval it leaves, never a guessed side."""

from __future__ import annotations

import math

import pytest

from db.review.decisions import BAD, GOOD, UNCLEAR, step_verdict
from mpsbench.workflows.bisect_search import Search

CASE = {
    "workload": "softmax",
    "case_key": '{"rows":1}',
    "dtype": "float32",
    "compile": "eager",
    "scope": "mac",
    "metric": "op_time",
}
TARGET = 'softmax|{"rows":1}|float32|eager'
FIGURE = (TARGET, "op_time")


def _answer(kind: str | None) -> dict:
    """A review answer listing the case as `kind` (regressions, unconfirmed, suspected) or nowhere."""
    return {k: ([CASE] if k == kind else []) for k in ("regressions", "unconfirmed", "suspected")}


@pytest.mark.parametrize(
    "before,after,verdict",
    [
        ("regressions", None, BAD),
        (None, "regressions", GOOD),
        # a regression confirmed on both sides of the midpoint: one of the two reviews is wrong (the 2x false-bad
        # step the benchmark met: the last good build against a good midpoint falsely confirmed), so neither side
        ("regressions", "regressions", UNCLEAR),
        ("regressions", "unconfirmed", UNCLEAR),
        (None, None, UNCLEAR),
        ("unconfirmed", "regressions", UNCLEAR),
        (None, "suspected", UNCLEAR),
        ("suspected", None, UNCLEAR),
    ],
)
def test_the_step_verdict_needs_both_reviews_to_agree(before, after, verdict):
    assert step_verdict({FIGURE}, _answer(before), _answer(after)) == verdict


def test_a_step_judges_the_metric_the_interval_regressed_not_another_of_the_case():
    """The ends confirm op_time; a first_call_time confirmed against the midpoint alone (a noisy figure the
    interval never regressed) makes it neither bad nor good."""
    from db.review.decisions import bisect_verdict

    ends = {**_answer(None), "regressions": [CASE]}
    first_call = {**_answer(None), "regressions": [{**CASE, "metric": "first_call_time"}]}
    assert bisect_verdict([TARGET], ends, first_call, _answer(None))[0] == UNCLEAR
    assert bisect_verdict([TARGET], ends, first_call, _answer("regressions"))[0] == GOOD
    both = {**_answer(None), "regressions": [CASE, {**CASE, "metric": "first_call_time"}]}
    # two figures regressed across the interval: good only when both moved after the midpoint
    assert bisect_verdict([TARGET], both, _answer(None), _answer("regressions"))[0] == UNCLEAR
    assert bisect_verdict([TARGET], both, _answer(None), both)[0] == GOOD
    assert bisect_verdict([TARGET], both, first_call, _answer(None))[0] == BAD


@pytest.mark.parametrize("n", [4, 6, 16])
def test_the_first_bad_build_is_found_in_log2_steps_wherever_it_is(n):
    for first_bad in range(1, n):
        search, steps = Search([f"b{i}" for i in range(n)]), 0
        while (mid := search.next_probe()) is not None:
            assert search.steps_left() >= 1
            search.record(mid, BAD if mid >= first_bad else GOOD)
            steps += 1
        assert search.answer() == f"first bad: b{first_bad}; last good: b{first_bad - 1}"
        assert steps <= math.ceil(math.log2(n - 1)) and search.steps_left() == 0


def test_an_unclear_step_stops_the_search_naming_the_interval_left():
    search = Search([f"b{i}" for i in range(16)])
    search.record(search.next_probe(), GOOD)  # b7
    search.record(search.next_probe(), UNCLEAR)  # b11
    assert search.next_probe() is None and search.steps_left() == 0
    assert search.answer() == (
        "not found: the first bad build is after b7 and at or before b15; unclear: b11 (more "
        "rounds, or a larger slowdown, would decide)"
    )
    with pytest.raises(ValueError):
        search.record(3, "probably")


def test_a_step_judges_only_the_cases_its_ends_confirm_and_waits_while_one_is_doubtful():
    from db.review.decisions import bisect_verdict

    other = {**CASE, "case_key": '{"rows":5}'}
    other_id = TARGET.replace('"rows":1', '"rows":5')
    both = {"regressions": [], "unconfirmed": [], "suspected": []}
    ends = {**both, "regressions": [CASE]}  # only the first case regressed across the interval
    assert bisect_verdict([TARGET, other_id], ends, _answer(None), _answer("regressions"))[:2] == (GOOD, [TARGET])
    assert bisect_verdict([TARGET, other_id], ends, _answer("regressions"), _answer(None))[0] == BAD
    doubtful = {**ends, "unconfirmed": [{**other, "doubt": "contended"}]}  # it may yet prove a regression
    verdict, _, why = bisect_verdict([TARGET, other_id], doubtful, _answer(None), _answer("regressions"))
    assert (verdict, why) == (UNCLEAR, "1 case(s) still doubtful between the interval's ends (contended)")
    verdict, targets, why = bisect_verdict([TARGET], both, _answer(None), _answer("regressions"))
    assert (verdict, targets) == (UNCLEAR, []) and "confirms no regression" in why
