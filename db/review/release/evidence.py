"""What one group of a review rests on, in words: why nothing was compared when nothing was, how many runs and
which A/A noise the tests had, and the group's worst regressions by name. The release summary (db.review.release.summary)
puts these on every group, so a card can never be green over nothing or hide what it counted."""

from __future__ import annotations

import shlex
from typing import Any

import pandas as pd

from db.review.detectable import side_runs, side_words
from db.review.noise import NO_DATA


def nothing_compared(unmatched: pd.DataFrame, baseline: str, candidate: str, scope: str) -> str:
    """Why a group compared no case: "no torch=2.16.0 run on Apple M4 Pro" when one side never ran there, "1 case
    newly running on torch=2.15.0rc1" when the candidate alone has ok figures, else the commonest reason a case
    could not be paired."""
    if unmatched.empty:
        return f"nothing compared on {scope}"
    b_absent = (unmatched.baseline_status == "absent").all()
    c_absent = (unmatched.candidate_status == "absent").all()
    if c_absent and not b_absent:
        return f"nothing compared: no {candidate} run on {scope}"
    if b_absent and not c_absent:
        return f"nothing compared: no {baseline} run on {scope}"
    cases = len(unmatched.drop_duplicates(["workload", "case_key"]))
    some = f"{cases} case{'s' * (cases != 1)}"
    if (unmatched.candidate_status == "ok").all():
        return f"nothing compared: {some} newly running on {candidate} (no ok baseline figure)"
    reason = unmatched.reason.astype(str).value_counts().index[0]
    return f"nothing compared on {scope}: {some} without an ok figure on both sides ({reason})"


NO_TIMING = "no timing case compared"


def evidence_by_group(timing: pd.DataFrame, group: list[str], baseline: str = "the baseline") -> dict[tuple, str]:
    """Per group key (its values as text), evidence_words of its timing cases, in one pass over the cases
    (`baseline`: the baseline's name, whose reruns are the A/A pairs)."""
    if timing.empty:
        return {}
    base_runs, cand_runs = side_runs(timing)
    frame = (
        timing[group]
        .astype(str)
        .assign(
            _b=base_runs,
            _c=cand_runs,
            _aa=(timing.noise.astype(str) != NO_DATA).to_numpy() if "noise" in timing else False,
            _warned=timing.caveats.astype(str).str.contains(" warned: ", regex=False).to_numpy()
            if "caveats" in timing
            else False,
        )
    )
    stats = frame.groupby(group, sort=False).agg(
        b=("_b", "median"), c=("_c", "median"), aa=("_aa", "sum"), n=("_aa", "size"), warned=("_warned", "sum")
    )
    return {
        tuple(key): evidence_words(int(r.b), int(r.c), int(r.aa), int(r.n), int(r.warned), baseline)
        for key, r in zip(stats.index, stats.itertuples())
    }


def evidence_words(
    baseline_runs: int, candidate_runs: int, with_aa: int, n: int, warned: int = 0, baseline: str = "the baseline"
) -> str:
    """ "6 baseline runs, 3 candidate runs; reruns of torch=2.14.1 give the noise for 27 of 27 timing cases" — each
    side's runs, the A/A pairs in plain words (or the single-run caveat where there are none) — and how many
    timing cases carry result warnings (contention, noisy samples: their caveats say which)."""
    side = side_words(baseline_runs, candidate_runs)
    return _aa_words(side, min(baseline_runs, candidate_runs), with_aa, n, baseline) + (
        f"; {warned} of {n} warned (see their caveats)" if warned else ""
    )


def _aa_words(side: str, runs: int, with_aa: int, n: int, baseline: str) -> str:
    if with_aa == 0:
        caveat = " (one run: only the spread within it)" if runs == 1 else ""
        return f"{side}{caveat}; no reruns of {baseline} (the runs' own spread is the noise)"
    return f"{side}; reruns of {baseline} give the noise for {with_aa} of {n} timing cases"


DOUBTS_NAMED = 20  # doubtful cases a group's summary names, worst first; the answer's lists hold them all
DOUBT_WORDS = {  # plain, for a card: the statistics behind each are under "How this is decided"
    "contended": "timed while the machine was busy",
    "nothing to test on: its replicates agree": "not testable: its figures all alike",
    "nothing to test on": "not testable: one figure a side",
    "its own test passed": "likely, not certain: more runs decide",
}


def doubt_word(doubt: str) -> str:
    """A doubt's reason (db.review.rules BUSY, UNTESTED, OWN_TEST) in two or three words, for a card's line."""
    return next((short for start, short in DOUBT_WORDS.items() if doubt.startswith(start)), doubt)


def named_doubts(doubts: pd.DataFrame) -> list[dict[str, Any]]:
    """A group's unconfirmed, contended and suspected cases (db.review.release.listing.doubtful's rows: worst first), named
    with their change and why, with the fields a link needs."""
    top = doubts.head(DOUBTS_NAMED)
    return [
        {
            "case": str(n),
            "metric": str(r.metric),
            "change": str(r.change),
            "why": doubt_word(str(r.doubt)),
            "verdict": str(r.verdict),
            "workload": str(r.workload),
            "case_key": str(r.case_key),
            "dtype": str(r.dtype),
            "compile": str(r.compile),
        }
        for n, r in zip(top.case, top.itertuples())
    ]


def confirm_command(params: dict[str, str]) -> str:
    """The `mpsbench confirm` line that decides a review's doubtful cases (db.review.review.Review.params: the
    review as URL parameters), to copy and run on a Mac of the scope, each build's environment filled in."""
    words = ["mpsbench", "confirm", "--baseline", params["baseline"], "--candidate", params["candidate"]]
    for name in ("scope", "threshold", "rules"):
        if params.get(name) and (name, params[name]) not in (("scope", "machine"), ("threshold", "5")):
            words += [f"--{name}", params[name]]
    words += ["--baseline-python", "BASELINE_ENV/bin/python", "--candidate-python", "CANDIDATE_ENV/bin/python"]
    return " ".join(shlex.quote(w) for w in words)
