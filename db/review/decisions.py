"""What a review's answer (GET /api/v1/regressions's shape, `mpsbench compare --format json`) says about named
cases: the decisions `mpsbench confirm` and `mpsbench bisect` act on, kept beside the review rather than in the
CLI that asks.

A case is *confirmed* when the answer lists it as a regression, *undecided* while it is doubtful (unconfirmed —
nothing to test it on — or suspected — its own test passed, the review's family-wise step did not), *cleared*
otherwise. A bisect step's midpoint is *bad* when the review of the last good build against it confirms any
target; *good* when that review clears every target and the review of the midpoint against the first bad build
confirms every one; anything else is *unclear* (more rounds; never a guessed side)."""
from __future__ import annotations

CONFIRMED, CLEARED, UNDECIDED = "confirmed", "cleared", "undecided"
GOOD, BAD, UNCLEAR = "good", "bad", "unclear"
CASE_FIELDS = ("workload", "case_key", "dtype", "compile")


def case_id(row: dict) -> str:
    """The collector's case id (collector.journal.case_id's format) of a review row."""
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


def step_verdict(targets: list[str], good_vs_mid: dict, mid_vs_bad: dict, scope: str | None = None) -> str:
    """The midpoint's verdict from the two reviews' answers."""
    before = decide(targets, good_vs_mid, scope)
    if CONFIRMED in before.values():
        return BAD
    after = decide(targets, mid_vs_bad, scope)
    if set(before.values()) == {CLEARED} and set(after.values()) == {CONFIRMED}:
        return GOOD
    return UNCLEAR


def target_rows(targets: list[str], answer: dict, scope: str | None) -> list[dict]:
    """The answer's regression rows of these targets (their figures), in the answer's order (worst first)."""
    return [r for r in answer.get("regressions", []) if case_id(r) in targets
            and (scope is None or r.get("scope") == scope)]


def bisect_verdict(requested: list[str], ends: dict, good_vs_mid: dict, mid_vs_bad: dict,
                   scope: str | None = None) -> tuple[str, list[str], str]:
    """(verdict, the targets it judged, why) for a step that ran the interval's ends and its midpoint. Only the
    requested cases the review of the ends confirms are judged (a case the interval never regressed cannot make
    the midpoint good or bad); while any requested case is undecided between the ends, the step is unclear (a
    regression not yet seen there could start before the midpoint)."""
    states = decide(requested, ends, scope)
    undecided = sorted(t for t, s in states.items() if s == UNDECIDED)
    targets = sorted(t for t, s in states.items() if s == CONFIRMED)
    if undecided:
        doubts = sorted({str(r["doubt"]) for kind in ("unconfirmed", "suspected") for r in ends.get(kind, [])
                         if case_id(r) in undecided and r.get("doubt")})
        return UNCLEAR, targets, (f"{len(undecided)} case(s) still doubtful between the interval's ends"
                                  + (f" ({'; '.join(doubts)})" if doubts else ""))
    if not targets:
        return UNCLEAR, targets, "the review of the interval's ends confirms no regression of these cases"
    verdict = step_verdict(targets, good_vs_mid, mid_vs_bad, scope)
    why = {BAD: "the review of the last good build against it confirms a regression",
           GOOD: "it matches the last good build and the review against the first bad build confirms every case",
           UNCLEAR: "neither review decides (doubtful cases, or a change on both sides of it)"}[verdict]
    return verdict, targets, why
