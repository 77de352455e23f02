"""A regression review written out in full: Markdown (for an issue / PR; its parts are the one renderer's,
db.views.exports.review_markdown) and CSV. Strings from bundles and notes are escaped."""

from __future__ import annotations

import csv
from typing import Any, Sequence

import pandas as pd

from db.review.cases.wording import format_value
from db.views.exports.review_markdown import (
    answers_markdown,
    confirm_lines,
    escaped_row,
    md_escape,
    plural,
    status_change_lines,
    table_head,
)

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
        *table_head([name.replace("undecided", "not decided") for name in GROUP_TABLE]),
    ]
    lines += ["| " + " | ".join(escape(g.get(k, 0)) for k in GROUP_TABLE) + " |" for g in summary["groups"]]
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
    lines = [f"Regressions of {md_escape(candidate)} against baseline {md_escape(baseline)}", "", *top]
    lines += _regression_table(frame, baseline)
    if doubts is not None and len(doubts):
        lines += _doubt_table(doubts) + confirm_lines(summary)
    if len(changes):
        lines += ["", f"Status changes ({len(changes)} {plural(len(changes), 'case')}):", ""]
        lines += status_change_lines(changes)
    return "\n".join(lines) + "\n"


REGRESSION_TABLE = ("scope", "workload", "case", "dtype", "compile", "metric", "baseline", "candidate")


def _regression_table(frame: pd.DataFrame, baseline: str) -> list[str]:
    """Every regression, worst first: its figures with their units, its test, its triage and its caveats."""
    names = [*REGRESSION_TABLE, f"change (baseline {md_escape(baseline)})", "significance", "state", "comment"]
    lines = table_head([*names, "caveats"])
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
        lines.append(escaped_row(cells))
    return lines


def _doubt_table(doubts: pd.DataFrame) -> list[str]:
    """The doubtful cases (unconfirmed, contended, suspected), worst first, each with why it is in doubt."""
    lines = [
        "",
        f"Doubtful, not regressions ({len(doubts)} {plural(len(doubts), 'case')}: worse beyond the "
        "threshold with nothing to test them on, contended, or past their own test only), worst first:",
        "",
        *table_head(("scope", "case", "metric", "baseline", "candidate", "change", "why")),
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
        lines.append(escaped_row(cells))
    return lines


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
