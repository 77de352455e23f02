"""The runs a sweep made (`mpsbench sweep` tags each: sweep, round, build, aa, spec, position), one row per run."""

from __future__ import annotations

import json

import pandas as pd
from sqlalchemy import Engine

from db.query.read import read_frame

SWEEP_TAGS = ("round", "position", "spec", "aa", "build")
COLUMNS = [
    "sweep",
    "run_id",
    "started_at",
    "machine_name",
    "chip",
    "gpu_cores",
    "torch_version",
    "git_hash",
    "channel",
    "debug",
    "nightly_date",
    *SWEEP_TAGS,
]


def sweep_runs(engine: Engine, sweep_id: str | None = None) -> pd.DataFrame:
    """Every sweep run (or one sweep's), its sweep tags as columns (round, position, spec, aa as integers)."""
    where, params = ("AND t.value = ?", [sweep_id]) if sweep_id else ("", [])
    found = read_frame(
        engine,
        "SELECT t.value AS sweep, r.run_id, r.started_at, r.machine_name, r.chip, r.gpu_cores,"
        " r.torch_version, r.git_hash, r.channel, r.debug, r.nightly_date, r.tags_json"
        f" FROM run_tags t JOIN runs r ON r.run_id = t.run_id WHERE t.key = 'sweep' {where}",
        params,
    )
    tags = [json.loads(t) for t in found.pop("tags_json")]
    for name in SWEEP_TAGS:
        values = [t.get(name) for t in tags]
        found[name] = values if name == "build" else pd.to_numeric(pd.Series(values, dtype=object), errors="coerce")
    found = found.dropna(subset=["round", "spec", "aa"])  # a hand-tagged run without the sweep's tags is not one
    for name in ("round", "position", "spec", "aa"):
        found[name] = found[name].fillna(0).astype(int)
    return found.sort_values(["sweep", "round", "position"]).reset_index(drop=True)[COLUMNS]
