"""The release answer per chip (per machine in machine scope): "2.15.0rc1 vs 2.14.1 on Apple M4 Pro: regression",
what a release manager reads first, counted by case (db.review.release.answer) and summed from the release summary's
groups (one per dtype and compile mode), which stay as its detail.

The answer is the first that holds: REGRESSION (a case regressed and is not triaged away, or newly fails), NOT
DECIDED (a case is worse beyond its bound but unconfirmed or suspected, or a group whose tests cannot see a change
as small as the bound left cases undecided), WIN (cases got faster or won beyond their rule), NO
CHANGE. Each names every regression, the biggest wins and the doubts, so the words beside a count always say it."""

from __future__ import annotations

from typing import Any

import pandas as pd

from bundle.case_names import case_names
from db.review.release.answer import CASE, FASTER
from db.review.release.group_words import plural

REGRESSION, NOT_DECIDED, WIN, NO_CHANGE, NOTHING = "regression", "not decided", "win", "no change", "nothing compared"
WINS_NAMED = 5
SCOPE = ["scope", "device"]
COUNTS = ("compared", "regressed", "triaged", "unconfirmed", "suspected", "contended", "faster", "slower")
COUNTS += ("unchanged", "undecided", "unmatched")


def _link_fields(row) -> dict[str, str]:
    """What a case's link needs; a correctness row's worst figure too (its Correctness link opens that metric)."""
    fields = {k: str(getattr(row, k)) for k in ("workload", "case_key", "dtype", "compile", "metric")}
    if fields["metric"] == "correctness" and isinstance(getattr(row, "worst_figure", None), str):
        fields["figure"] = row.worst_figure
    return fields


def named_regressions(found: pd.DataFrame) -> list[dict[str, Any]]:
    """Every regressed case once, worst first (`found`: the review's regressions not triaged away, worst first),
    its regressed figures joined: "op_time 1.21× slower; first_call_time 1.30× slower"."""
    if found.empty:
        return []
    out: dict[tuple, dict] = {}
    for row in found.itertuples():
        key = tuple(str(getattr(row, k)) for k in CASE)
        said = f"{row.metric} {row.change}"
        if key in out:
            out[key]["change"] += f"; {said}"
        else:
            out[key] = {"case": str(row.case), **_link_fields(row), "change": said}
    return list(out.values())


def named_wins(outcomes: pd.DataFrame, cases: pd.DataFrame) -> list[dict[str, Any]]:
    """The biggest wins of the cases that got better (outcome FASTER: their largest gain), best first."""
    won = outcomes[(outcomes.outcome == FASTER).to_numpy() & (outcomes.best >= 0).to_numpy()]
    won = won.sort_values("gain", ascending=False, kind="stable").head(WINS_NAMED)
    if won.empty:
        return []
    rows = cases.loc[won.best.to_numpy()]
    return [
        {"case": str(name), **_link_fields(row), "change": f"{row.metric} {row.change}"}
        for name, row in zip(case_names(rows), rows.itertuples())
    ]


def named_triage(found: pd.DataFrame) -> list[dict[str, Any]]:
    """The regressions triaged away: who said what of each."""
    return [
        {
            "case": str(r.case),
            **_link_fields(r),
            "change": str(r.change),
            "state": str(r.state),
            "author": str(r.author),
            "comment": str(r.comment),
        }
        for r in found.itertuples()
    ]


def scope_answers(
    groups: list[dict[str, Any]],
    changes: pd.DataFrame,
    named: dict[tuple, dict[str, list]],
    sides: tuple[str, str],
) -> list[dict[str, Any]]:
    """One answer per (scope, device) of the groups (the summary's), with its named regressions, wins, doubts and
    triaged cases (`named`: per (scope, device), those lists) and its new failures (`changes`: status changes)."""
    if not groups:
        return []
    frame = pd.DataFrame(groups)
    out = []
    for key, part in frame.groupby(SCOPE, sort=True):
        key = tuple(str(k) for k in key)
        counts = {name: int(part[name].sum()) for name in COUNTS}
        failing = _failures(changes, key)
        # tests that cannot see a change as small as the bound leave the answer open where cases are left open
        blind = part[(part.timing > 0) & ~part.sees_bound.astype(bool) & (part.undecided > 0)]
        lists = named.get(key, {})
        answer = _answer(counts, failing, blind, lists.get("wins", []))
        out.append(
            {
                "scope": key[0],
                "device": key[1],
                "answer": answer,
                "line": _line(answer, counts, failing, blind, lists, sides, key[0]),
                "blind": str(blind.detects.iloc[0]) if len(blind) and not counts["regressed"] else "",
                **counts,
                "new_failures": len(failing),
                "regressions": lists.get("regressions", []),
                "wins": lists.get("wins", []),
                "doubts": lists.get("doubts", []),
                "triage": lists.get("triage", []),
                "failures": failing,
                "detects": "; ".join(dict.fromkeys(str(d) for d in part.detects if d)),
            }
        )
    order = {REGRESSION: 0, NOT_DECIDED: 1, WIN: 2, NO_CHANGE: 3, NOTHING: 4}
    return sorted(out, key=lambda a: (order[a["answer"]], a["scope"], a["device"]))


# status changes that make a case a regression though it has no figure to compare: it ran on the baseline and does
# not on the candidate (a passed → failed case is a regression row already; a case newly supported that fails
# its tolerance never ran on the baseline: a status change, not a regression)
STOPPED = ("new error", "new OOM", "newly unsupported", "now falls back to the CPU")


def _failures(changes: pd.DataFrame, key: tuple) -> list[dict[str, str]]:
    """The scope's cases that ran on the baseline and newly fail to run on the candidate (STOPPED)."""
    if changes.empty:
        return []
    mine = changes[
        (changes.scope.astype(str) == key[0]).to_numpy()
        & (changes.device.astype(str) == key[1]).to_numpy()
        & changes.kind.isin(STOPPED).to_numpy()
    ]
    return [{"case": str(r.case), "kind": str(r.kind), "metric": str(r.metric)} for r in mine.itertuples()]


def _answer(counts: dict, failing: list, blind: pd.DataFrame, wins: list) -> str:
    if not counts["compared"] and not failing:
        return NOTHING
    if counts["regressed"] or failing:
        return REGRESSION
    if counts["unconfirmed"] or counts["suspected"] or len(blind):
        return NOT_DECIDED
    return WIN if counts["faster"] or wins else NO_CHANGE


def _line(answer, counts, failing, blind, lists, sides, scope) -> str:
    """ "2.15.0rc1 vs 2.14.1 on Apple M4 Pro: regression — 2 of 6 cases regressed; 3 faster" (plain words)."""
    baseline, candidate = sides
    head = f"{candidate} vs {baseline} on {scope}: {answer}"
    n = counts["compared"]
    said = []
    if counts["regressed"]:
        said.append(f"{counts['regressed']} of {plural(n, 'case')} regressed")
    if failing:
        said.append(f"{plural(len(failing), 'case')} newly fail{'s' * (len(failing) == 1)} to run")
    doubtful = counts["unconfirmed"] + counts["suspected"]
    if doubtful:
        said.append(f"{doubtful} worse but not confirmed (more runs decide)")
    if len(blind) and not counts["regressed"]:
        said.append(str(blind.detects.iloc[0]).replace("can see", "its tests can only see", 1))
    if counts["faster"]:
        said.append(f"{counts['faster']} of {plural(n, 'case')} better")
    for name, word in (("slower", "slower within the bound"), ("unchanged", "unchanged"), ("undecided", "not decided")):
        if counts[name]:
            said.append(f"{counts[name]} {word}")
    if counts["triaged"]:
        said.append(f"{counts['triaged']} triaged")
    return head + (" — " + "; ".join(said) if said else "")
