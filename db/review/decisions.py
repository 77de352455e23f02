"""What a review's answer (GET /api/v1/regressions's shape, `mpsbench compare --format json`) says about named
cases: the decisions `mpsbench confirm` and `mpsbench bisect` act on, kept beside the review rather than in the
CLI that asks.

A case is *confirmed* when the answer lists it as a regression, *undecided* while it is doubtful (unconfirmed —
nothing to test it on — or suspected — its own test passed, the review's family-wise step did not), *cleared*
otherwise. A bisect step judges the (case, metric) figures the review of the interval's ends confirms, each on
both sides of the midpoint: a figure says *bad* when the review of the last good build against the midpoint
confirms it and the review of the midpoint against the first bad build clears it, *good* the other way round.
The midpoint is *bad* when a figure says bad, *good* when every figure says good; anything else (a figure
confirmed on both sides, or doubtful) is *unclear*: more rounds, never a guessed side. Both sides are asked
because one review's false confirmation alone would otherwise name a wrong build."""

from __future__ import annotations

CONFIRMED, CLEARED, UNDECIDED = "confirmed", "cleared", "undecided"
GOOD, BAD, UNCLEAR = "good", "bad", "unclear"
CASE_FIELDS = ("workload", "case_key", "dtype", "compile")


def case_id(row: dict) -> str:
    """The collector's case id (collector.journal.run_journal.case_id's format) of a review row."""
    return "|".join(str(row[k]) for k in CASE_FIELDS)


def doubtful_cases(answer: dict, scope: str | None) -> list[str]:
    """The case ids of the review's unconfirmed and suspected rows (on this machine's scope, when given)."""
    rows = [r for kind in ("unconfirmed", "suspected") for r in answer.get(kind, [])]
    return sorted({case_id(r) for r in rows if scope is None or r.get("scope") == scope})


def regressed_cases(answer: dict, scope: str | None) -> list[str]:
    """The case ids a bisect chases in a review: its regressions and its doubtful cases."""
    rows = [r for kind in ("regressions", "unconfirmed", "suspected") for r in answer.get(kind, [])]
    return sorted({case_id(r) for r in rows if scope is None or r.get("scope") == scope})


def decide(targets: list[str], answer: dict, scope: str | None) -> dict[str, str]:
    """Each target's state in a review's answer: confirmed (a regression), undecided (still doubtful), cleared."""

    def ids(kind: str) -> set[str]:
        return {case_id(r) for r in answer.get(kind, []) if scope is None or r.get("scope") == scope}

    regressed, doubtful = ids("regressions"), ids("unconfirmed") | ids("suspected")
    return {t: CONFIRMED if t in regressed else UNDECIDED if t in doubtful else CLEARED for t in targets}


def figure_states(
    targets: list[str], answer: dict, scope: str | None, figures: set[tuple[str, str]] | None = None
) -> dict[tuple[str, str], str]:
    """Each (case, metric) figure's state in a review's answer; `figures` (else every figure the answer lists of
    the targets) are the ones asked, a figure the answer does not list being cleared."""

    def keys(kind: str) -> set[tuple[str, str]]:
        return {
            (case_id(r), str(r.get("metric", "")))
            for r in answer.get(kind, [])
            if case_id(r) in targets and (scope is None or r.get("scope") == scope)
        }

    regressed, doubtful = keys("regressions"), keys("unconfirmed") | keys("suspected")
    asked = regressed | doubtful if figures is None else figures
    return {f: CONFIRMED if f in regressed else UNDECIDED if f in doubtful else CLEARED for f in asked}


def step_verdict(figures: set[tuple[str, str]], good_vs_mid: dict, mid_vs_bad: dict, scope: str | None = None) -> str:
    """The midpoint's verdict on the interval's regressed (case, metric) figures, from the two reviews' answers."""
    targets = sorted({c for c, _ in figures})
    before = figure_states(targets, good_vs_mid, scope, figures)
    after = figure_states(targets, mid_vs_bad, scope, figures)
    says = {
        f: BAD
        if (before[f], after[f]) == (CONFIRMED, CLEARED)
        else GOOD
        if (before[f], after[f]) == (CLEARED, CONFIRMED)
        else UNCLEAR
        for f in figures
    }
    if BAD in says.values():  # the interval's first regression is at or before the midpoint
        return BAD
    return GOOD if figures and set(says.values()) == {GOOD} else UNCLEAR


def target_rows(targets: list[str], answer: dict, scope: str | None) -> list[dict]:
    """The answer's regression rows of these targets (their figures), in the answer's order (worst first)."""
    return [
        r for r in answer.get("regressions", []) if case_id(r) in targets and (scope is None or r.get("scope") == scope)
    ]


def bisect_verdict(
    requested: list[str], ends: dict, good_vs_mid: dict, mid_vs_bad: dict, scope: str | None = None
) -> tuple[str, list[str], str]:
    """(verdict, the targets it judged, why) for a step that ran the interval's ends and its midpoint. Only the
    requested cases the review of the ends confirms are judged (a case the interval never regressed cannot make
    the midpoint good or bad); while any requested case is undecided between the ends, the step is unclear (a
    regression not yet seen there could start before the midpoint)."""
    states = decide(requested, ends, scope)
    undecided = sorted(t for t, s in states.items() if s == UNDECIDED)
    targets = sorted(t for t, s in states.items() if s == CONFIRMED)
    if undecided:
        doubts = sorted(
            {
                str(r["doubt"])
                for kind in ("unconfirmed", "suspected")
                for r in ends.get(kind, [])
                if case_id(r) in undecided and r.get("doubt")
            }
        )
        return (
            UNCLEAR,
            targets,
            (
                f"{len(undecided)} case(s) still doubtful between the interval's ends"
                + (f" ({'; '.join(doubts)})" if doubts else "")
            ),
        )
    if not targets:
        return UNCLEAR, targets, "the review of the interval's ends confirms no regression of these cases"
    figures = {f for f, s in figure_states(targets, ends, scope).items() if s == CONFIRMED}
    verdict = step_verdict(figures, good_vs_mid, mid_vs_bad, scope)
    why = {
        BAD: "the review of the last good build against it confirms a regression the review of it against "
        "the first bad build clears",
        GOOD: "it matches the last good build and the review against the first bad build confirms every "
        "regressed figure",
        UNCLEAR: "the two reviews do not agree on a side (a figure doubtful, or changed on both sides of it)",
    }[verdict]
    return verdict, targets, why
