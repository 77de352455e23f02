"""Overview: the release verdict per chip (the comparison asked for in `baseline` / `candidate`, else the release
question: latest stable against the newest rc), the nightly preview apart and labelled, then machines × builds
with their latest run, result counts by status, open warnings."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd
from sqlalchemy import Engine

from db.query import browse
from db.query.params import Params, only
from db.views.empty_reason import NEXT_BUILD, same_build
from db.views.release.live_run import live_run
from db.views.release.verdict_cards import overview_cards

LATEST = [
    "machine_name",
    "chip",
    "memory_GiB",
    "gpu_cores",
    "device_type",
    "build",
    "git_hash",
    "runs",
    "run_id",
    "started_at",
    "complete",
    "n_results",
]


@dataclass(frozen=True)
class Overview:
    runs: int  # runs stored
    latest: pd.DataFrame  # one row per (machine, build): its latest run and how many runs it has
    status: pd.DataFrame  # results per status
    warnings: pd.DataFrame  # open warnings: run and result warnings, fallbacks, battery, incomplete runs
    verdict: dict | None  # the comparison's verdict cards (db.views.release.verdict_cards.Cards as a dict), chip scope;
    # None with fewer than two builds
    preview: dict | None = None  # the nightly against the stable build, beside an rc default (labelled); else None
    hint: str = ""  # with runs of one build only: what a second build would show, and how to collect it
    live: dict | None = None  # the run collecting on this machine now (db.views.release.live_run), while it runs
    empty: str = ""  # why the comparison asked for has no verdict (baseline and candidate one build)


PARAMS = ("baseline", "candidate")


def overview(engine: Engine, params: Params | None = None) -> Overview:
    """The page and GET /api/v1/overview: `baseline` / `candidate` as on Compare (both optional)."""
    p = only(params or {}, PARAMS)
    return overview_of(engine, p["baseline"], p["candidate"])


def overview_of(engine: Engine, baseline: str = "", candidate: str = "") -> Overview:
    runs = browse.runs(engine)
    if runs.empty:
        latest = pd.DataFrame(columns=LATEST)
    else:
        latest = runs.sort_values("started_at").groupby(["machine_name", "build"], as_index=False).last()
        latest = latest.assign(runs=runs.groupby(["machine_name", "build"]).size().values)[LATEST]
    # the preview goes with the release question only; another chosen comparison is the one shown
    cards, preview = overview_cards(engine, baseline, candidate) if len(runs) else (None, None)
    builds = sorted(set(latest["build"]))
    hint = (
        f"One build stored ({builds[0]}): a verdict compares two builds — which cases got faster or slower, "
        f"what newly runs or fails, memory and correctness moves. {NEXT_BUILD}"
        if len(builds) == 1
        else ""
    )
    return Overview(
        len(runs),
        latest,
        browse.status_counts(engine),
        browse.open_warnings(engine),
        asdict(cards) if cards else None,
        asdict(preview) if preview else None,
        hint,
        live_now(),
        same_build(baseline) if baseline and baseline == candidate else "",
    )


def live_now() -> dict | None:
    """The run collecting here now (not cached with the store's data: it moves while the store does not)."""
    live = live_run()
    return asdict(live) if live is not None and live.running else None
