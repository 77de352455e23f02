"""Overview: machines × builds with their latest run, result counts by status, open warnings."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd
from sqlalchemy import Engine

from db.query import browse
from db.query.params import Params, only
from db.views.verdict_cards import overview_cards

LATEST = ["machine_name", "chip", "memory_GiB", "gpu_cores", "device_type", "build", "git_hash", "runs", "run_id",
          "started_at", "complete", "n_results"]


@dataclass(frozen=True)
class Overview:
    runs: int  # runs stored
    latest: pd.DataFrame  # one row per (machine, build): its latest run and how many runs it has
    status: pd.DataFrame  # results per status
    warnings: pd.DataFrame  # open warnings: run and result warnings, fallbacks, battery, incomplete runs
    verdict: dict | None  # the default comparison's verdict cards (db.views.verdict_cards.Cards as a dict), chip
    # scope; None with fewer than two builds


def overview(engine: Engine, params: Params | None = None) -> Overview:
    only(params or {}, ())
    runs = browse.runs(engine)
    if runs.empty:
        latest = pd.DataFrame(columns=LATEST)
    else:
        latest = runs.sort_values("started_at").groupby(["machine_name", "build"], as_index=False).last()
        latest = latest.assign(runs=runs.groupby(["machine_name", "build"]).size().values)[LATEST]
    cards = overview_cards(engine) if len(runs) else None
    return Overview(len(runs), latest, browse.status_counts(engine), browse.open_warnings(engine),
                    asdict(cards) if cards else None)
