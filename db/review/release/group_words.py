"""A release summary's words: a group's memory and correctness lines (their regressions, and the figures that won
beyond their rule), a group's verdict line and the review's overall line — every count in them a count of cases
(db.review.release.answer), a regression triaged away never among them. Plain words: the statistics behind "not decided"
are on the "how this is decided" page (docs/regressions.md)."""

from __future__ import annotations

import pandas as pd

from bundle.metrics import METRICS
from db.review.cases.wording import format_value

GAINS_NAMED = 3  # the largest gains a summary line names; the rest are counted


def plural(n: int, word: str, words: str | None = None) -> str:
    """ "1 case", "3 cases" (`words`: an irregular plural)."""
    return f"{n} {word if n == 1 else words or word + 's'}"


def _gains(compared: pd.DataFrame, word: str) -> str:
    """ "; 2 smaller: wan_vae memory_driver_peak 33× less memory, …" for the figures better beyond their rule."""
    won = compared[compared.improved.to_numpy(dtype=bool)] if len(compared) else compared
    if won.empty:
        return ""
    said = ", ".join(f"{r.workload} {r.metric} {r.change}" for r in won.head(GAINS_NAMED).itertuples())
    more = f", {len(won) - GAINS_NAMED} more" if len(won) > GAINS_NAMED else ""
    return f"; {len(won)} {word}: {said}{more}"


def _is_memory(metric: pd.Series) -> pd.Series:
    return metric.map(lambda m: m in METRICS and METRICS[m].quantity == "memory")


def moved(compared: pd.DataFrame, found: pd.DataFrame, quantity: str) -> dict[str, int]:
    """{quantity}_regressed / {quantity}_gains: the group's figures of a quantity that regressed (`found`: its
    regressions not triaged away), and that are better beyond their rule (what its memory / correctness line says
    in words; the cards colour the line by them)."""
    if quantity == "correctness":
        hit = int((found.metric == "correctness").sum()) if len(found) else 0
    else:
        hit = int(_is_memory(found.metric).sum()) if len(found) else 0
    gains = int(compared.improved.to_numpy(dtype=bool).sum()) if len(compared) else 0
    return {f"{quantity}_regressed": hit, f"{quantity}_gains": gains}


def memory_line(compared: pd.DataFrame, found: pd.DataFrame) -> str:
    hit = found[_is_memory(found.metric)] if len(found) else found
    if compared.empty:
        return "no memory figures compared"
    n = len(compared)
    gains = _gains(compared, "smaller")
    if hit.empty:
        return f"no memory regression ({plural(n, 'figure')} compared{gains})"
    said = "; ".join(
        f"{r.workload} {r.metric} {format_value(r.baseline_median, r.unit)} → "
        f"{format_value(r.candidate_median, r.unit)}"
        for r in hit.itertuples()
    )
    return f"{plural(len(hit), 'memory regression')} of {n} figures: {said}{gains}"


def correctness_line(mine: pd.DataFrame, found: pd.DataFrame) -> str:
    checked = len(mine.drop_duplicates(["workload", "case_key"])) if len(mine) else 0
    hit = found[found.metric == "correctness"] if len(found) else found
    if not checked:
        return "no correctness figures compared"
    gains = _gains(mine, "more accurate")
    if hit.empty:
        return f"no correctness regression ({plural(checked, 'case')} checked{gains})"
    said = "; ".join(f"{r.workload} ({r.why.removeprefix('correctness: ')})" for r in hit.itertuples())
    return f"{len(hit)} of {checked} cases regressed: {said}{gains}"


def doubt_words(doubt: int, busy: int, suspect: int = 0) -> str:
    """ "6 unconfirmed: 2 timed while the machine was busy; 4 with nothing to test them on; 1 suspected", or ""
    when nothing is doubtful (counts of cases)."""
    untested = doubt - busy
    why = [
        f"{busy} timed while other processes took the cores" if busy else "",
        f"{untested} with nothing to test {'them' if untested != 1 else 'it'} on" if untested else "",
    ]
    words = f"{doubt} unconfirmed: " + "; ".join(w for w in why if w) if doubt else ""
    if suspect:
        words += ("; " if words else "") + f"{suspect} suspected (more runs decide)"
    return words


def group_line(group: dict) -> str:
    """A group's verdict line, by case: its regressions, else what could not be decided, else what changed —
    never a bare "no regressions" over cases nothing tested, nor over a group that cannot see its bound."""
    hit, triaged = group["regressed"], group["triaged"]
    apart = doubt_words(group["unconfirmed"], group["contended"], group["suspected"])
    away = f"{triaged} triaged" if triaged else ""
    tail = "; ".join(w for w in (apart, away) if w)
    if hit:
        return f"{plural(hit, 'case')} regressed" + (f" ({tail})" if tail else "")
    if apart:
        return f"not decided: no confirmed regression ({tail})"
    if not group["sees_bound"] and group["timing"] and group["undecided"]:
        return "not decided: " + _blind(group)
    said = _changed(group)
    return f"no regressions ({said}" + (f"; {away}" if away else "") + ")"


def _blind(group: dict) -> str:
    """Why a group cannot call its cases unchanged: nothing to test them on, or what its tests can see and what
    would let them see the bound."""
    untested = int(group.get("untested") or 0)
    if untested and untested >= int(group.get("timing") or 0):
        return f"{plural(untested, 'timing figure')} untested (nothing to test on)"
    words = str(group.get("detects") or "")
    return words.replace("can see", "its tests can only see", 1) if words else "too few runs to see the bound"


def _changed(group: dict) -> str:
    """ "4 faster, 2 unchanged, 1 not decided" of the group's cases (those with a count)."""
    parts = [(group["faster"], "faster"), (group["slower"], "slower"), (group["unchanged"], "unchanged")]
    parts.append((group["undecided"], "not decided"))
    said = ", ".join(f"{n} {w}" for n, w in parts if n)
    return said or "nothing tested"


def overall_line(
    total: int, answers: list[dict], kind: str, triaged: int = 0, doubtful: int = 0, untested: int = 0, busy: int = 0
) -> str:
    """The review's one line, by case: "3 cases regressed on 2 of 2 chips; 1 triaged; 2 not decided" (`kind`:
    chip or machine, what an answer is of), or what held instead."""
    compared = [a for a in answers if a["compared"]]
    if not compared:
        return "nothing compared"
    empty = len(answers) - len(compared)
    apart = "".join(
        f"; {w}"
        for w in (
            f"{triaged} triaged" if triaged else "",
            f"{doubtful} worse but not confirmed"
            + (f" ({busy} timed while other processes took the cores)" if busy else "")
            if doubtful
            else "",
            f"{plural(untested, 'timing figure')} untested (nothing to test on)" if untested else "",
            f"{plural(empty, kind)} with nothing compared" if empty else "",
        )
        if w
    )
    failing = sum(a["new_failures"] for a in compared)
    if total or failing:
        hit = sum(1 for a in compared if a["answer"] == "regression")
        said = " and ".join(
            w
            for w in (
                f"{plural(total, 'case')} regressed" if total else "",
                f"{plural(failing, 'case')} newly failing to run" if failing else "",
            )
            if w
        )
        return f"{said} on {hit} of {plural(len(compared), kind)}{apart}"
    open_ = sum(a["answer"] == "not decided" for a in compared)
    if open_:
        return f"no confirmed regression; not decided on {open_} of {plural(len(compared), kind)}{apart}"
    return f"no regressions on {plural(len(compared), kind)}{apart}"
