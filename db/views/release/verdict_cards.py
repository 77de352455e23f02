"""The verdict cards at the top of Overview, Compare and Regressions: one card per (scope, device, dtype, compile)
group of the release summary (db.review.release.summary; in chip scope one per chip), what a person reads first. Each card
is built from that one summary (the API and the Markdown export give the same figures) and the comparison's status
changes (db.review.release.status_changes): the verdict, faster / slower / unchanged timing cases, the family geomeans with
their CIs, memory, correctness, and what newly runs or newly fails."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import pandas as pd
from sqlalchemy import Engine

from db.query.selectors import available_selectors
from db.review.cases.columns import GROUP
from db.review.comparison import CompareQuery
from db.review.release.group_words import plural
from db.review.release.listing import Question
from db.review.release.status_changes import BETTER, WORSE, status_changes, status_words
from db.review.release.summary import release_summary
from db.review.review import Review, cached_review
from db.views.browse.trends import trend_url
from db.views.defaults import default_sides, preview_sides

FAMILIES_SHOWN = 3  # per card: the families with the most cases; the rest are in Compare's families table
FIXED = ("error fixed", "OOM fixed")


@dataclass(frozen=True)
class Cards:
    baseline: str
    candidate: str
    scope: str
    verdict: str  # the summary's overall verdict
    cards: list[dict[str, Any]] = field(default_factory=list)  # one per group, regressions first: the detail
    summary: dict[str, Any] = field(default_factory=dict)  # the release summary the cards were drawn from
    answers: list[dict[str, Any]] = field(default_factory=list)  # one per chip (machine): the release answer first


def _statuses(changes: pd.DataFrame, key: dict) -> dict[str, Any]:
    """The group's status changes counted, and worded with Compare's own kinds ("1 newly supported, fails its
    tolerance; 1 OOM fixed"), worst first as status_changes orders them."""
    mine = changes
    for name in GROUP:
        mine = mine[mine[name].astype(str) == str(key[name])] if len(mine) else mine
    kinds = mine.kind if len(mine) else pd.Series([], dtype=object)
    words = status_words(mine) if len(mine) else ""
    return {
        "newly_supported": int((kinds == "newly supported").sum()),
        "fixed": int(kinds.isin(FIXED).sum()),
        "oom_fixed": int((kinds == "OOM fixed").sum()),
        "new_failures": int((mine.direction == WORSE).sum()) if len(mine) else 0,
        "other_gains": int((mine.direction == BETTER).sum()) if len(mine) else 0,
        "status": f"status changes: {words}" if words else "no status changes",
    }


# what a release manager reads first: op time, then the model timings; single-sample timings (one figure a run:
# the first call, compilation) last, whatever their case count
HEADLINE = {"op_time": 0, "decode_time": 1, "time_to_first_token": 2}
SINGLE_SAMPLE = ("first_call_time", "compile_time")


def _family_order(f: dict) -> tuple:
    rank = HEADLINE.get(f["metric"], 9 if f["metric"] in SINGLE_SAMPLE else 5)
    return rank, -(f["n_cases"] or 0), f["workload"], f["metric"]


def _family_lines(families: list[dict], key: dict) -> list[dict[str, str]]:
    """The group's headline families: their words (up to the baseline) and their tone — better or worse only
    when the geomean's CI is clear of 1× and its cases were tested (db.review.release.summary marks untested ones)."""
    mine = [f for f in families if all(str(f[g]) == str(key[g]) for g in GROUP)]
    mine.sort(key=_family_order)
    return [
        {
            "text": f"{f['workload']} {f['metric']}: {str(f['summary']).split(': ', 1)[-1].split(', baseline ')[0]}",
            "tone": _tone(f),
        }
        for f in mine[:FAMILIES_SHOWN]
    ]


def _tone(family: dict) -> str:
    """better / worse when the family's CI is clear of 1× (one case, no CI: when its test found it so), else ""."""
    if "untested" in str(family["summary"]):
        return ""
    low, high = (float(family.get(k) or "nan") for k in ("ci_low", "ci_high"))
    n, better, worse = (int(family.get(k) or 0) for k in ("n_cases", "n_better", "n_worse"))
    if low == low:
        return BETTER if low > 1.0 else WORSE if high < 1.0 else ""
    return BETTER if n and better == n else WORSE if n and worse == n else ""


def _case_link(worst: dict, summary: dict[str, Any]) -> str:
    """A listed case's page (one rule for the regressions and the doubtful cases): its trend, or for a correctness
    row (its figures are several metrics, so no one trend; Trends refuses the row's "correctness") the Correctness
    page of the review's builds opened on the case, its worst figure's metric picked (db.views.browse.correctness)."""
    if worst["metric"] == "correctness":
        case = {k: worst[k] for k in ("workload", "case_key", "dtype", "compile")}
        figure = {"metric": worst["figure"]} if worst.get("figure") else {}
        return "correctness?" + urlencode(
            {"baseline": summary["baseline"], "candidate": summary["candidate"], **figure, **case}
        )
    return trend_url(worst["workload"], worst["case_key"], worst["dtype"], worst["compile"], worst["metric"])


def _tones(group: dict, status: dict) -> dict[str, str]:
    """The tone of a card's memory, correctness and status lines, as its counts are coloured: worse (red) where
    something regressed or newly fails, better (green) where figures won beyond their rule or newly run, else ""."""
    out = {}
    for line in ("memory", "correctness"):
        lost, won = int(group.get(f"{line}_regressed") or 0), int(group.get(f"{line}_gains") or 0)
        out[line] = WORSE if lost else BETTER if won else ""
    gained = status["newly_supported"] + status["fixed"] + status["other_gains"]
    out["status"] = WORSE if status["new_failures"] else BETTER if gained else ""
    return out


COUNT_WORDS = (("regressed", "regressed"), ("triaged", "triaged"), ("faster", "faster"), ("slower", "slower"))
COUNT_WORDS += (("unchanged", "unchanged"), ("undecided", "not decided"))
ANSWER_TONE = {"regression": WORSE, "win": BETTER}  # the answer's colour; not decided and no change: their own


def counts_words(counts: dict) -> str:
    """ "8 cases: 2 regressed · 4 faster · 2 unchanged" — a partition of the compared cases (db.review.release.answer), so
    the counts add up to the cases and never contradict the lines beside them."""
    n = int(counts.get("compared") or 0)
    parts = [f"{int(counts.get(k) or 0)} {w}" for k, w in COUNT_WORDS if int(counts.get(k) or 0)]
    parts += [f"{int(counts.get('unconfirmed') or 0) + int(counts.get('suspected') or 0)} worse, not confirmed"] * bool(
        int(counts.get("unconfirmed") or 0) + int(counts.get("suspected") or 0)
    )
    untested, busy = int(counts.get("untested") or 0), int(counts.get("contended") or 0)
    extra = f"; {plural(untested, 'timing figure')} untested (nothing to test on)" if untested else ""
    extra += f"; {busy} contended (not tested)" if busy else ""
    return f"{n} case{'s' * (n != 1)}: " + (" · ".join(parts) if parts else "none decided") + extra


def _linked(rows: list[dict], summary: dict[str, Any], extra=lambda r: "") -> list[dict[str, str]]:
    return [{"text": f"{r['case']} · {r['change']}{extra(r)}", "link": _case_link(r, summary)} for r in rows]


def answer_cards(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """One card per chip (per machine in machine scope): its answer, its line, every regression, the biggest wins,
    the doubts and the triaged regressions by name, each linked to its case."""
    out = []
    for a in summary.get("answers") or []:
        out.append(
            {
                "title": a["scope"],
                "answer": a["answer"],
                "tone": ANSWER_TONE.get(a["answer"], ""),
                "line": a["line"],
                "counts": counts_words(a),
                "regressions": _linked(a["regressions"], summary),
                "wins": _linked(a["wins"], summary),
                "doubts": _linked(a["doubts"], summary, lambda r: f" ({r.get('why', '')})"),
                "triage": _linked(
                    a["triage"],
                    summary,
                    lambda r: f" — {r['state']} ({r['author']}{': ' if r['comment'] else ''}{r['comment'][:80]})",
                ),
                "failures": [f"{f['case']}: {f['kind']}" for f in a["failures"]],
                "detects": a["detects"],
                "blind": a.get("blind", ""),
                **{k: a[k] for k in ("scope", "device", "new_failures", "unconfirmed", "suspected", "contended")},
                **{k: a[k] for k in ("compared", "regressed", "triaged", "faster", "slower", "unchanged", "undecided")},
            }
        )
    return out


def cards_from(summary: dict[str, Any], changes: pd.DataFrame) -> Cards:
    """The cards of one summary (pure: tests give it a summary and status changes directly)."""
    out = []
    for g in summary["groups"]:
        s = _statuses(changes, g)
        untested, busy = int(g.get("untested") or 0), int(g.get("contended") or 0)
        out.append(
            {
                **{k: g[k] for k in GROUP},
                "title": f"{g['scope']} · {g['dtype']} · {g['compile']}",
                "verdict": g["verdict"],
                "regressed": int(g["regressed"] or 0),
                "counts": counts_words(g),
                "faster": int(g["faster"] or 0),
                "slower": int(g["slower"] or 0),
                "unchanged": int(g["unchanged"] or 0),
                "undecided": int(g.get("undecided") or 0),
                "triaged": int(g.get("triaged") or 0),
                "sees_bound": bool(g.get("sees_bound", True)),
                "untested": untested,
                "families": _family_lines(summary["families"], g),
                "memory": g["memory"],
                "tones": _tones(g, s),
                "correctness": g["correctness"],
                "unconfirmed": int(g.get("unconfirmed") or 0),
                "suspected": int(g.get("suspected") or 0),
                "contended": busy,
                "doubts": [
                    {"text": f"{d['case']} · {d['metric']}: {d['change']} ({d['why']})", "link": _case_link(d, summary)}
                    for d in g.get("doubts") or []
                ],
                "detects": g.get("detects", ""),
                "compared": int(g.get("compared") or 0),
                "evidence": g.get("evidence", ""),
                "worst": [
                    {"text": f"{w['case']} · {w['change']}", "link": _case_link(w, summary)}
                    for w in g.get("worst") or []
                ],
                **s,
            }
        )
    out.sort(key=lambda c: (-c["regressed"], -c["new_failures"], not c["compared"], c["title"]))
    return Cards(
        summary["baseline"],
        summary["candidate"],
        summary["scope"],
        summary["verdict"],
        out,
        summary,
        answer_cards(summary),
    )


def verdict_cards(
    engine: Engine, question: Question, found: pd.DataFrame | None = None, doubts: pd.DataFrame | None = None
) -> Cards:
    """Compare's and Regressions' cards: the review's summary (its regressions `found` and doubtful cases `doubts`
    passed on when the caller has listed them) and the comparison's status changes."""
    judged = cached_review(engine, question)
    result = judged.comparison
    return cards_from(release_summary(engine, judged, found, doubts), status_changes(result.cases, result.unmatched))


def release_sides(engine: Engine) -> tuple[str, str] | None:
    """The release question's (baseline, candidate) (db.views.defaults); None with fewer than two builds."""
    baseline, candidate = default_sides(available_selectors(engine))
    return (baseline, candidate) if baseline and baseline != candidate else None


def overview_cards(engine: Engine, baseline: str = "", candidate: str = "") -> tuple[Cards | None, Cards | None]:
    """Overview's cards, chip scope: the comparison asked for, else the release question (db.views.defaults), and
    beside the release question its labelled preview (the stable build against the newest nightly, where the
    default candidate is an rc). (None, None) when the store holds fewer than two builds and nothing was asked."""
    selectors = available_selectors(engine)  # read once for both
    first, last = default_sides(selectors)
    asked = (baseline or first, candidate or last)
    cards = _chip_cards(engine, *asked)
    pair = preview_sides(selectors) if cards is not None and asked == (first, last) else None
    return cards, (_chip_cards(engine, *pair) if pair else None)


def _chip_cards(engine: Engine, baseline: str, candidate: str) -> Cards | None:
    if not baseline or baseline == candidate:
        return None
    query = CompareQuery.from_params({"baseline": baseline, "candidate": candidate, "scope": "chip"})
    return verdict_cards(engine, Review(query))
