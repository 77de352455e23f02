"""The review's Markdown: the one renderer of a review in Markdown. Both written reviews compose its parts — the
full export (db.views.exports.review_export.review_markdown: the Regressions page's download, `mpsbench compare
--format md-full`) and the CI job summary (db.views.exports.ci_summary.job_summary, `--format md`) — so a figure,
an answer, a doubtful case's `mpsbench confirm` line and a status change read the same in both. Every string from a
bundle or a note goes through md_escape."""

from __future__ import annotations

import html
from typing import Any, Callable, Iterable, Sequence


def md_escape(text: object) -> str:
    """Table-cell-safe text: HTML escaped, pipes/backticks/Markdown punctuation neutralised, one line."""
    out = html.escape(str(text), quote=False).replace("\r", " ").replace("\n", " ")
    for ch in "\\`*_[]|#<>~":
        out = out.replace(ch, "\\" + ch) if ch not in "<>" else out
    return out


def link(text: str, url: str | None) -> str:
    """A Markdown link whose address cannot close the link early (spaces, parentheses and angle brackets quoted)."""
    if not url:
        return text
    safe = url.replace(" ", "%20").replace("(", "%28").replace(")", "%29").replace("<", "%3C").replace(">", "%3E")
    return f"[{text}]({safe})"


def plural(n: int, word: str) -> str:
    """`word` with an "s" unless there is one."""
    return word + "s" * (n != 1)


def table_head(names: Sequence[str]) -> list[str]:
    """A Markdown table's header line and its separator."""
    return ["| " + " | ".join(names) + " |", "|" + "---|" * len(names)]


def row(cells: Iterable[str]) -> str:
    """A table row of cells already written as Markdown."""
    return "| " + " | ".join(cells) + " |"


def escaped_row(cells: Iterable[object]) -> str:
    """A table row of plain values, each escaped."""
    return row(md_escape(c) for c in cells)


def answers_markdown(summary: dict[str, Any], escape: Callable[[object], str] = md_escape) -> list[str]:
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


def confirm_lines(summary: dict[str, Any] | None) -> list[str]:
    """The `mpsbench confirm` command that decides the doubtful cases, as a code block (none: no lines)."""
    if not summary or not summary.get("confirm"):
        return []
    return [
        "",
        "Decide them on a machine of each scope (each build's environment filled in):",
        "",
        "```",
        summary["confirm"],
        "```",
    ]


def status_change_lines(changes: Sequence[dict[str, Any]]) -> list[str]:
    """One list item per case whose status changed: scope · case: kind (change; metric)."""
    return [
        f"- {md_escape(c['scope'])} · {md_escape(c['case'])}: {md_escape(c['kind'])} "
        f"({md_escape(c['change'])}; {md_escape(c['metric'])})"
        for c in changes
    ]
