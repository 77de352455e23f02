"""A regression review as Markdown (for an issue / PR) and CSV. Strings from bundles and notes are escaped."""

from __future__ import annotations

import csv
import html
from typing import Any, Sequence

import pandas as pd

from db.review.cases.wording import format_value


def answers_markdown(summary: dict[str, Any], escape) -> list[str]:
    """The release answer per chip (machine) as Markdown lines — its answer, why, and every regression, the
    biggest wins, the doubts and the triaged by name: what both Markdown renderings lead with."""
    lines = []
    for a in summary.get("answers") or []:
        lines += ["", f"- **{escape(a['scope'])}: {escape(a['answer'])}** — {escape(a['line'].split(' — ', 1)[-1])}"]
        named = [("regressed", a["regressions"]), ("better", a["wins"]), ("not confirmed", a["doubts"])]
        named.append(("triaged", a["triage"]))
        for word, rows in named:
            lines += [
                f"  - {word}: {escape(r['case'])} · {escape(r['change'])}"
                + (f" — {escape(r['state'])} by {escape(r['author'])}" if word == "triaged" else "")
                for r in rows
            ]
    return lines


GROUP_TABLE = ("scope", "device", "dtype", "compile", "compared", "regressed", "triaged", "faster", "slower")
GROUP_TABLE += ("unchanged", "undecided", "untested", "unconfirmed", "contended", "unmatched", "memory")
GROUP_TABLE += ("correctness", "detects")


def summary_markdown(summary: dict[str, Any], escape) -> list[str]:
    """The summary as Markdown lines (escape: the export's cell escaper), for the top of the review export."""
    lines = [
        f"## Release summary: {escape(summary['candidate'])} against baseline {escape(summary['baseline'])}",
        "",
        f"**{escape(summary['verdict'])}** (threshold {summary['threshold']:g} % worse for replicated figures; "
        "each metric's own rule otherwise; counts are of cases)",
        *answers_markdown(summary, escape),
        "",
        "| " + " | ".join(name.replace("undecided", "not decided") for name in GROUP_TABLE) + " |",
        "|" + "---|" * len(GROUP_TABLE),
    ]
    for g in summary["groups"]:
        lines.append("| " + " | ".join(escape(g.get(k, 0)) for k in GROUP_TABLE) + " |")
    if summary["families"]:
        lines += [
            "",
            f"Geomean per family (timing; candidate against baseline {escape(summary['baseline'])}, > 1× is better):",
            "",
        ]
        lines += [f"- {escape(f['summary'])}" for f in summary["families"]]
    if summary["notes"]:
        lines += ["", *(f"- {escape(n)}" for n in summary["notes"])]
    return lines + [""]


def md_escape(text: object) -> str:
    """Table-cell-safe text: HTML escaped, pipes/backticks/Markdown punctuation neutralised, one line."""
    out = html.escape(str(text), quote=False).replace("\r", " ").replace("\n", " ")
    for ch in "\\`*_[]|#<>~":
        out = out.replace(ch, "\\" + ch) if ch not in "<>" else out
    return out


def _significance(r) -> str:
    """A test's verdict with its p-value; a figure judged by its metric's own rule (memory growth, PSNR drop,
    passed → failed) says so: its p-value over identical repeats of one figure would be a degenerate 0."""
    rule = getattr(r, "rule", "significant")
    if rule != "significant":
        return f"judged by its {rule} rule"
    return f"{r.significance} (p={r.p_value:.2g})" if r.p_value == r.p_value else r.significance


def review_markdown(
    frame: pd.DataFrame,
    baseline: str,
    candidate: str,
    notes: Sequence[str] = (),
    summary: dict[str, Any] | None = None,
    changes: Sequence[dict[str, Any]] = (),
    doubts: pd.DataFrame | None = None,
) -> str:
    """The review as Markdown: the release summary first (db.review.release.summary; it carries the notes, the wins by
    rule and each group's evidence), then every regression worst first by its case's name with its caveats, then
    the doubtful cases (unconfirmed, contended, suspected: db.review.release.listing.doubtful) with the command that
    decides them, then the status changes, one per case."""
    top = (
        summary_markdown(summary, md_escape)
        if summary
        else [*(f"- {md_escape(note)}" for note in notes), *([""] if notes else [])]
    )
    lines = [
        f"Regressions of {md_escape(candidate)} against baseline {md_escape(baseline)}",
        "",
        *top,
        "| scope | workload | case | dtype | compile | metric | baseline | candidate | change (baseline "
        f"{md_escape(baseline)}) | significance | state | comment | caveats |",
        "|" + "---|" * 13,
    ]
    for r in frame.itertuples():
        cells = [
            r.scope,
            r.workload,
            getattr(r, "case", "") or r.case_key,
            r.dtype,
            r.compile,
            r.metric,
            format_value(r.baseline_median, r.unit),
            format_value(r.candidate_median, r.unit),
            f"{r.change} ({r.why})" + (f"; figures: {r.figures}" if getattr(r, "figures", "") else ""),
            _significance(r),
            r.state,
            r.comment,
            _text(getattr(r, "caveats", "")),
        ]
        lines.append("| " + " | ".join(md_escape(c) for c in cells) + " |")
    if doubts is not None and len(doubts):
        lines += [
            "",
            f"Doubtful, not regressions ({len(doubts)} case{'s' * (len(doubts) != 1)}: worse beyond the "
            "threshold with nothing to test them on, contended, or past their own test only), worst first:",
            "",
            "| scope | case | metric | baseline | candidate | change | why |",
            "|" + "---|" * 7,
        ]
        for r in doubts.itertuples():
            cells = [
                r.scope,
                getattr(r, "case", "") or r.case_key,
                r.metric,
                format_value(r.baseline_median, r.unit),
                format_value(r.candidate_median, r.unit),
                r.change,
                r.doubt,
            ]
            lines.append("| " + " | ".join(md_escape(c) for c in cells) + " |")
        if summary and summary.get("confirm"):
            lines += [
                "",
                "Decide them on a machine of each scope (each build's environment filled in):",
                "",
                "```",
                summary["confirm"],
                "```",
            ]
    if len(changes):
        lines += ["", f"Status changes ({len(changes)} case{'s' * (len(changes) != 1)}):", ""]
        lines += [
            f"- {md_escape(c['scope'])} · {md_escape(c['case'])}: {md_escape(c['kind'])} "
            f"({md_escape(c['change'])}; {md_escape(c['metric'])})"
            for c in changes
        ]
    return "\n".join(lines) + "\n"


def _text(value: object) -> str:
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A text cell a spreadsheet would run as a formula (=HYPERLINK(…), +cmd|…, @SUM…) gets a leading ' (OWASP's
    CSV-injection rule); numbers stay numbers (a negative change is data, not a formula)."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def review_csv(frame: pd.DataFrame, doubts: pd.DataFrame | None = None) -> str:
    """The regressions, then the doubtful cases (their `verdict` and `doubt` say which), every cell quoted, so a
    CR or LF inside a note or a tag value stays inside its row."""
    safe = frame.copy() if doubts is None or doubts.empty else pd.concat([frame, doubts], ignore_index=True)
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]):
            safe[column] = safe[column].map(csv_cell).astype(object)
    safe.columns = [csv_cell(str(c)) for c in safe.columns]
    return safe.to_csv(index=False, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
