"""A review as a CI job summary: `mpsbench compare --format md >> $GITHUB_STEP_SUMMARY`.

GitHub renders a step's summary as Markdown above the job's log and caps it (1 MiB a step); a reader wants the
answer, not the export. So: the verdict line first, the review's sides and threshold, links to the dashboard's
Regressions and Compare pages with the review's own parameters (when the review was read from a server, `--url`),
the worst regressions and the worst doubtful cases (unconfirmed, contended, suspected: the release answer's
lists, db.review.release.summary.review_answer) each bounded to ROWS_SHOWN with "N more", the `mpsbench confirm` line that
decides the doubtful ones, the status changes (bounded too), and the groups and notes folded away. Every figure
keeps its unit (the answer's `baseline_value` / `candidate_value` carry it). The full export — every row, the
summary table, the caveats — is db.views.exports.review_export.review_markdown (`--format md-full`, the Regressions page's
Markdown download). Both are written with the one renderer's parts, db.views.exports.review_markdown."""

from __future__ import annotations

from typing import Any, Sequence
from urllib.parse import urlencode

from bundle.metrics import METRICS
from db.views.browse.trends import FIELDS as TREND_FIELDS
from db.views.browse.trends import trend_urls
from db.views.exports.review_markdown import (
    answers_markdown,
    confirm_lines,
    escaped_row,
    link,
    md_escape,
    plural,
    row,
    status_change_lines,
    table_head,
)

ROWS_SHOWN = 10  # regressions, doubtful cases and status changes each shown, worst first; the rest counted
GROUPS_SHOWN = 30  # groups in the folded table (50 machines × 4 dtypes would be 200)
GROUP_KEYS = ("scope", "device", "dtype", "compile", "verdict", "regressed", "faster", "slower", "unchanged")
GROUP_KEYS += ("undecided", "detects")
GROUP_TABLE = tuple(k.replace("undecided", "not decided") for k in GROUP_KEYS)  # the folded table's header
COMPARE_PARAMS = ("baseline", "candidate", "scope", "workload", "dtype", "compile", "metric", "pool")


def page_links(url: str, params: dict[str, str]) -> dict[str, str]:
    """The Regressions page of the review and the Compare page of its sides (Compare has no threshold or rules)."""
    base = url.rstrip("/")
    return {
        "Regressions": f"{base}/regressions?{urlencode(params)}",
        "Compare": f"{base}/compare?{urlencode({k: v for k, v in params.items() if k in COMPARE_PARAMS})}",
    }


def _more(total: int, shown: int, what: str, where: str) -> list[str]:
    return ["", f"… and {total - shown} more {what} ({where})."] if total > shown else []


def _case_cell(row: dict[str, Any], base: str | None) -> str:
    """The case's name, linked to its Trends page where the metric is a stored one (a correctness row is three)."""
    name = md_escape(row.get("case") or row.get("case_key", ""))
    if not base or row.get("metric") not in METRICS:
        return name
    [path] = trend_urls([tuple(str(row.get(k, "")) for k in TREND_FIELDS)])
    return link(name, f"{base.rstrip('/')}/{path}")


def _table(rows: Sequence[dict[str, Any]], last: str, base: str | None) -> list[str]:
    """scope | case | metric | baseline | candidate | change | <last>: the figures with their units."""
    head = table_head(("scope", "case", "metric", "baseline", "candidate", "change", last))
    body = []
    for r in rows:
        tail = str(r.get(last) or "")
        if last == "doubt" and r.get("contention"):
            tail += f" ({r['contention']})"
        cells = [
            md_escape(r.get("scope", "")),
            _case_cell(r, base),
            md_escape(r.get("metric", "")),
            md_escape(r.get("baseline_value") or "unavailable"),
            md_escape(r.get("candidate_value") or "unavailable"),
            md_escape(r.get("change", "")),
            md_escape(tail),
        ]
        body.append(row(cells))
    return head + body


def _worst_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The doubtful cases as the review lists them: largest `worse_by` first, those without one last."""
    return sorted(rows, key=lambda r: (r.get("worse_by") is None, -(r.get("worse_by") or 0.0)))


def job_summary(answer: dict[str, Any], params: dict[str, str], url: str | None = None, limit: int = ROWS_SHOWN) -> str:
    """The review's answer (GET /api/v1/regressions, `mpsbench compare --format json`) as a job summary; `params`:
    the review as URL parameters (db.review.review.Review.params, filters included); `url`: the dashboard the links
    point at."""
    summary = answer["summary"]
    links = page_links(url, params) if url else {}
    lines = [
        f"### mpsbench: {md_escape(summary['verdict'])}",
        "",
        f"{md_escape(answer['candidate'])} against baseline {md_escape(answer['baseline'])} · "
        f"{md_escape(answer['scope'])} scope · threshold {float(answer['threshold']):g} % worse for replicated "
        "figures, each metric's own rule otherwise"
        + (f" · rules {md_escape(answer['rules'])}" if answer.get("rules") else ""),
    ]
    lines += answers_markdown(summary, md_escape)
    if links:
        lines += ["", " · ".join(link(f"{name} page", address) for name, address in links.items())]
    where = "the Regressions page" if links else "`mpsbench compare --format md-full`"
    lines += _listed(answer, url, limit, where)
    lines += _groups(summary["groups"]) + _notes(answer.get("notes") or [])
    return "\n".join(lines) + "\n"


def _listed(answer: dict[str, Any], url: str | None, limit: int, where: str) -> list[str]:
    """The regressions, the doubtful cases (with the line that decides them) and the status changes, each worst
    first and bounded to `limit`, the rest counted and pointed at `where`."""
    lines = []
    found = answer.get("regressions") or []
    if found:
        lines += ["", f"**{len(found)} {plural(len(found), 'regression')}**, worst first:", ""]
        lines += _table(found[:limit], "why", url) + _more(len(found), limit, "regressions", where)
    doubts = _worst_first((answer.get("unconfirmed") or []) + (answer.get("suspected") or []))
    if doubts:
        lines += [
            "",
            f"**{len(doubts)} doubtful, not regressions** (unconfirmed: nothing to test them on, or "
            "contended; suspected: past their own test only), worst first:",
            "",
        ]
        lines += _table(doubts[:limit], "doubt", url) + _more(len(doubts), limit, "doubtful cases", where)
        lines += confirm_lines(answer["summary"])
    changes = answer.get("status_changes") or []
    if changes:
        lines += ["", f"**{len(changes)} {plural(len(changes), 'status change')}:**", ""]
        lines += status_change_lines(changes[:limit]) + _more(len(changes), limit, "status changes", where)
    return lines


def _groups(groups: Sequence[dict[str, Any]]) -> list[str]:
    if not groups:
        return []
    out = [
        "",
        f"<details><summary>{len(groups)} {plural(len(groups), 'group')}: one per chip (machine), device, dtype "
        "and compile mode</summary>",
        "",
        *table_head(GROUP_TABLE),
    ]
    for g in groups[:GROUPS_SHOWN]:
        out.append(escaped_row(g.get(k, "") for k in GROUP_KEYS))
    if len(groups) > GROUPS_SHOWN:
        out += ["", f"… and {len(groups) - GROUPS_SHOWN} more groups."]
    return out + ["", "</details>"]


def _notes(notes: Sequence[str]) -> list[str]:
    if not notes:
        return []
    return [
        "",
        f"<details><summary>{len(notes)} {plural(len(notes), 'note')}</summary>",
        "",
        *(f"- {md_escape(n)}" for n in notes),
        "",
        "</details>",
    ]
