"""`mpsbench compare` (also `python -m db compare`): a review from the command line, for a CI job to gate on.

The same answer as the Regressions page and GET /api/v1/regressions: locally it calls the view the route calls
(db.review.release.summary.review_answer) on the local store; with --url it reads that route's JSON from a running server
(token from MPSBENCH_TOKEN when the server wants one for reads). Prints the release summary and the regressions
as a table, a CI job summary in Markdown (`md`: verdict first, the worst rows bounded, links to the dashboard with
--url: db.views.exports.ci_summary), the full Markdown export (`md-full`: the Regressions page's download), JSON (the API's
answer) or CSV (the page's CSV); exits 1 when the
--fail-on condition holds: `regression` (any regression), `untriaged` (a regression without a triage state other
than "new"), `unconfirmed` (a regression, or a case worse beyond its bound with nothing to test it on: no
replicates, no A/A data; `regression` lets those pass). Errors are "ERROR: …" and exit 1 (db.cli prints them)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import pandas as pd

from db.errors import Problem, StoreError
from db.review.cases.columns import (
    BASELINE_MEDIAN,
    CANDIDATE_MEDIAN,
    CI_HIGH,
    CI_LOW,
    DIFFERENCE,
    ORIENTED_RATIO,
    P_VALUE,
)
from db.review.decisions import case_id
from db.store.writers.triage import TRIAGED_AWAY

FORMATS, FAIL_ON = ("table", "md", "md-full", "json", "csv"), ("regression", "unconfirmed", "untriaged")
NUMBERS = (BASELINE_MEDIAN, CANDIDATE_MEDIAN, ORIENTED_RATIO, DIFFERENCE, CI_LOW, CI_HIGH, P_VALUE, "worse_by", "bound")
# figures last: a correctness case's three figures, or a timing's tokens/s or bandwidth, are long
SHOWN = ["scope", "workload", "case_key", "dtype", "compile", "metric", "change", "why", "state", "figures"]
DOUBT_SHOWN = [
    "scope",
    "workload",
    "case_key",
    "dtype",
    "compile",
    "metric",
    "change",
    "doubt",
    "contention",
    "figures",
]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would exit 2 with its usage: one error shape instead
        raise StoreError(400, message, [Problem("arguments", "see mpsbench compare --help")])


def _parser() -> _Parser:
    p = _Parser(
        prog="mpsbench compare",
        description="baseline → candidate review: release summary and regressions; exit 1 when --fail-on holds",
    )
    p.add_argument("--baseline", required=True, help="selector: torch=VERSION, tag:key=value, runs:id,id")
    p.add_argument("--candidate", required=True)
    p.add_argument("--scope", default="machine", help="machine (default) or chip")
    p.add_argument("--threshold", help="percent worse a replicated figure must exceed (1-100, default 5)")
    p.add_argument("--rules", help="rule overrides, metric.field=value,… (docs/regressions.md)")
    for name in ("workload", "dtype", "compile", "metric"):
        p.add_argument(f"--{name}", help="comma list")
    p.add_argument("--pool", action="store_true", help="a side may span several builds")
    p.add_argument(
        "--format",
        default="table",
        choices=FORMATS,
        help="table (default); md: a CI job summary (>> $GITHUB_STEP_SUMMARY: verdict, worst rows, doubtful "
        "cases, dashboard links with --url); md-full: every row, as the Regressions page's Markdown "
        "download; json: the API's answer; csv",
    )
    p.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        help="exit 1 when any regression (regression), any regression or "
        "unconfirmed case (unconfirmed), or any regression not triaged yet (untriaged) is found",
    )
    p.add_argument("--url", help="read GET <url>/api/v1/regressions of a running server instead of the local store")
    return p


def main(args: list[str]) -> int:
    opts = _parser().parse_args(args)
    from db.review.review import Review

    params = {
        k: getattr(opts, k)
        for k in ("baseline", "candidate", "scope", "threshold", "rules", "workload", "dtype", "compile", "metric")
        if getattr(opts, k) is not None
    }
    params["pool"] = "1" if opts.pool else ""
    review = Review.from_params(params)  # bad input refused here, before any store or server is asked
    answer = remote_answer(opts.url, review.params()) if opts.url else local_answer(review)
    print(render(answer, opts.format, review.params(), opts.url))
    return _gate(answer, opts.fail_on)


def local_answer(review) -> dict[str, Any]:
    from db.review.release.summary import review_answer
    from db.store.engine import reading

    with reading() as engine:  # a read: a missing store is an ERROR, never a new empty one
        return json.loads(json.dumps(review_answer(engine, review)))  # exactly what the API would send


def remote_answer(url: str, params: dict[str, str]) -> dict[str, Any]:
    from db.remote import call_api

    return call_api("GET", url, "/api/v1/regressions", params=params, timeout=120)


def regression_frame(answer: dict[str, Any]) -> pd.DataFrame:
    frame = pd.DataFrame(answer["regressions"])
    for name in NUMBERS:
        if name in frame:
            frame[name] = pd.to_numeric(frame[name], errors="coerce")  # null (NaN, ∞ in JSON) back to NaN
    return frame


def render(answer: dict[str, Any], fmt: str, params: dict[str, str] | None = None, url: str | None = None) -> str:
    """The answer in `fmt`; `params` (the review as URL parameters) and `url` (the dashboard) make md's links."""
    from db.views.exports.ci_summary import job_summary
    from db.views.exports.review_export import review_csv, review_markdown

    frame = regression_frame(answer)
    doubts = regression_frame({"regressions": answer.get("unconfirmed", []) + answer.get("suspected", [])})
    if len(doubts):  # one list, worst first, as the review lists them
        doubts = doubts.sort_values("worse_by", ascending=False, kind="stable", na_position="last")
    if fmt == "json":
        return json.dumps(answer, indent=2, ensure_ascii=False)
    if fmt == "csv":
        return review_csv(frame, doubts).rstrip("\n")
    if fmt == "md":
        return job_summary(answer, params or {}, url).rstrip("\n")
    if fmt == "md-full":
        return review_markdown(
            frame,
            answer["baseline"],
            answer["candidate"],
            answer["notes"],
            answer["summary"],
            answer.get("status_changes") or (),
            doubts,
        ).rstrip("\n")
    summary = answer["summary"]
    lines = [
        f"{answer['candidate']} against baseline {answer['baseline']} ({answer['scope']} scope, threshold "
        f"{answer['threshold']:g} % worse): {summary['verdict']}",
        "",
    ]
    groups = pd.DataFrame(summary["groups"])
    if len(groups):
        lines += [groups.to_string(index=False), ""]
    lines += [f["summary"] for f in summary["families"]] + [""] if summary["families"] else []
    lines += [f"{len(frame)} regression(s), worst first:"]
    if len(frame):
        lines += [frame[SHOWN].to_string(index=False)]
    for kind, what in (
        (
            "unconfirmed",
            "unconfirmed (not regressions: nothing to test them on, or contended — too "
            "few clean worker processes; `mpsbench confirm` reruns them)",
        ),
        ("suspected", "suspected (their own test passed, the review's family-wise step did not)"),
    ):
        doubts = regression_frame({"regressions": answer.get(kind, [])})
        if len(doubts):
            shown = [c for c in DOUBT_SHOWN if c in doubts and (c != "contention" or doubts[c].astype(bool).any())]
            lines += ["", f"{len(doubts)} {what}:", doubts[shown].to_string(index=False)]
    if summary.get("confirm"):
        lines += ["", f"decide the doubtful cases on a machine of each scope: {summary['confirm']}"]
    return "\n".join(lines + [""] + [f"note: {n}" for n in answer["notes"]])


def _gate(answer: dict[str, Any], fail_on: str | None) -> int:
    """Exit 1 when `fail_on` holds. A regression triaged away (noise, expected, accepted: db.store.writers.triage) is no
    regression to fail on; the lines say how many were left out and who triaged them."""
    found = [r for r in answer["regressions"] if r.get("state") not in TRIAGED_AWAY]
    away = [r for r in answer["regressions"] if r.get("state") in TRIAGED_AWAY]
    hit = {
        "regression": found,
        "unconfirmed": found + answer.get("unconfirmed", []),
        "untriaged": [r for r in found if r.get("state") == "new"],
    }.get(fail_on or "", [])
    if fail_on and away:
        said = "; ".join(
            f"{r.get('case') or r.get('case_key')} {r.get('metric')}: {r['state']} ({r.get('author')})" for r in away
        )
        print(f"not counted: {len(away)} regression(s) triaged away — {said}", file=sys.stderr)
    if hit:
        what = {
            "regression": "regression(s)",
            "unconfirmed": "regression(s) or unconfirmed case(s)",
            "untriaged": "untriaged regression(s)",
        }[fail_on]
        cases = len({case_id(r) + "|" + str(r.get("scope")) for r in hit})
        print(f"FAIL: {len(hit)} {what} in {cases} case(s) (--fail-on {fail_on})", file=sys.stderr)
        return 1
    if fail_on:
        what = {
            "regression": "regression",
            "unconfirmed": "regression or unconfirmed case",
            "untriaged": "untriaged regression",
        }[fail_on]
        verdict = _pass_words(answer, fail_on)
        print(f"{verdict}: no {what} (--fail-on {fail_on})", file=sys.stderr)
        if verdict != "PASS" and (answer.get("summary") or {}).get("confirm"):
            print(f"decide them on a machine of each scope: {answer['summary']['confirm']}", file=sys.stderr)
    return 0


def _pass_words(answer: dict[str, Any], fail_on: str) -> str:
    """ "PASS", or "PASS with 6 unconfirmed (2 contended), 1 suspected, 8 untested (no replicates)": never a bare
    PASS over cases the review could not test."""
    summary = answer.get("summary") or {}
    apart = [] if fail_on == "unconfirmed" else answer.get("unconfirmed", [])
    busy = sum(1 for r in apart if str(r.get("doubt", "")).startswith("contended"))
    said = [
        f"{len(apart)} unconfirmed" + (f" ({busy} contended)" if busy else "") if apart else "",
        f"{len(answer.get('suspected', []))} suspected" if answer.get("suspected") else "",
        f"{summary.get('untested', 0)} untested (no replicates)" if summary.get("untested") else "",
    ]
    said = [w for w in said if w]
    return f"PASS with {', '.join(said)}" if said else "PASS"
