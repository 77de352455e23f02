"""Sweeps (`mpsbench sweep`): the list, and one sweep's builds, rounds and A/A pairs with the comparisons it
answers. A comparison of two builds of a sweep takes each build's runs as its replicates (one run per round,
`runs:` selectors); the A/A pairs (the baseline run twice in a round) measure the noise. The Sweeps page and
GET /api/v1/sweeps[/ID] both call these functions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlencode

import pandas as pd
from sqlalchemy import Engine

from db.errors import Problem, StoreError
from db.query.sweeps import sweep_runs

SWEEP_ID_PATTERN = "^[0-9a-f]{6,32}$"  # what `mpsbench sweep` prints (api/openapi.py states it)
_SWEEP_ID = re.compile(SWEEP_ID_PATTERN)
LIST_COLUMNS = ["sweep", "started_at", "machine_name", "n_builds", "rounds", "n_runs", "aa_pairs", "builds"]


def sweeps(engine: Engine) -> pd.DataFrame:
    """One row per sweep, newest first: machine, builds (labels, baseline first), rounds, runs, A/A pairs."""
    runs = sweep_runs(engine)
    rows = []
    for sweep, group in runs.groupby("sweep", sort=False):
        labels = group.sort_values("spec").drop_duplicates("spec").build.tolist()
        rows.append(
            {
                "sweep": sweep,
                "started_at": group.started_at.min(),
                "machine_name": ", ".join(sorted(set(group.machine_name))),
                "n_builds": len(labels),
                "rounds": int(group["round"].max()),
                "n_runs": len(group),
                "aa_pairs": len(_aa_pairs(group)),
                "builds": " | ".join(labels),
            }
        )
    frame = pd.DataFrame(rows, columns=LIST_COLUMNS)
    return frame.sort_values("started_at", ascending=False).reset_index(drop=True)


@dataclass
class SweepDetail:
    sweep: str
    builds: pd.DataFrame  # per --build: spec, label, torch_version, git_hash, channel, n_runs, selector
    runs: pd.DataFrame  # in run order: round, position, spec, build, aa, run_id, started_at, machine_name
    aa_pairs: pd.DataFrame  # round, run_a (the baseline's first run), run_b (its A/A repeat)
    comparisons: pd.DataFrame  # what the sweep answers: baseline, candidate (selectors), what, link


def sweep_detail(engine: Engine, sweep_id: str) -> SweepDetail:
    """One sweep; a malformed id is a 400 naming `sweep`, an unknown one a 404."""
    sid = (sweep_id or "").strip().lower()
    if not _SWEEP_ID.match(sid):
        raise StoreError(
            400,
            f"sweep: must be a sweep id (6-32 hex digits, got {sweep_id[:40]!r})",
            [Problem("sweep", "must be the hex id `mpsbench sweep` printed")],
        )
    runs = sweep_runs(engine, sid)
    if runs.empty:
        raise StoreError(
            404, f"sweep: no stored run belongs to sweep {sid}", [Problem("sweep", "must be a stored sweep")]
        )
    builds = _builds(runs)
    return SweepDetail(
        sid,
        builds,
        runs[
            [
                "round",
                "position",
                "spec",
                "build",
                "aa",
                "run_id",
                "started_at",
                "machine_name",
                "torch_version",
                "git_hash",
            ]
        ],
        _aa_pairs(runs),
        _comparisons(builds, runs),
    )


def _runs_selector(run_ids) -> str:
    return "runs:" + ",".join(sorted(run_ids))


def _builds(runs: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for spec, group in runs.groupby("spec"):
        first = group.iloc[0]
        main = group[group.aa == 0]
        rows.append(
            {
                "spec": int(spec),
                "baseline": spec == runs.spec.min(),
                "label": first.build,
                "torch_version": first.torch_version,
                "git_hash": first.git_hash,
                "channel": first.channel,
                "n_runs": len(main),
                "n_aa_runs": int((group.aa == 1).sum()),
                "selector": _runs_selector(main.run_id),
            }
        )
    return pd.DataFrame(rows).sort_values("spec").reset_index(drop=True)  # as given: the baseline first


def _aa_pairs(runs: pd.DataFrame) -> pd.DataFrame:
    """Per round, the baseline's run and its A/A repeat (both present: a killed repeat pairs with nothing)."""
    base = runs[runs.spec == runs.spec.min()]
    a = base[base.aa == 0][["round", "run_id"]].rename(columns={"run_id": "run_a"})
    b = base[base.aa == 1][["round", "run_id"]].rename(columns={"run_id": "run_b"})
    return a.merge(b, on="round").sort_values("round").reset_index(drop=True)


def compare_link(baseline: str, candidate: str) -> str:
    """The Compare page's URL for two selectors (the page reads them from its query parameters)."""
    return "/compare?" + urlencode({"baseline": baseline, "candidate": candidate})


def _comparisons(builds: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    base = builds.iloc[0]
    rows = [
        {
            "what": f"{row.label} (build {row.spec}) vs {base.label} (build {base.spec}), rounds as replicates",
            "baseline": base.selector,
            "candidate": row.selector,
        }
        for row in builds.iloc[1:].itertuples()
    ]
    pairs = _aa_pairs(runs)
    if len(pairs):
        rows.append(
            {
                "what": f"A/A: {base.label} against itself, {len(pairs)} rounds (the noise)",
                "baseline": _runs_selector(pairs.run_a),
                "candidate": _runs_selector(pairs.run_b),
            }
        )
    frame = pd.DataFrame(rows, columns=["what", "baseline", "candidate"])
    frame["link"] = [compare_link(b, c) for b, c in zip(frame.baseline, frame.candidate)]
    return frame
