"""The run collecting on this machine right now, as its live status file says (collector.console.live; `scripts/start.sh`
names it in MPSBENCH_LIVE): the Overview shows it while the store is still empty or the run is not yet stored,
so the dashboard is up from the first second, saying what the run does, what it waits for and what finished.
A file that is missing, unreadable or not a status is no live run (never an error on the page)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

LIVE_VARIABLE = "MPSBENCH_LIVE"
STALE_S = 900  # a status not updated for this long is a run that died without saying so


@dataclass(frozen=True)
class LiveRun:
    run_id: str
    device: str
    state: str  # running | finished | interrupted | stopped (stale)
    doing: str  # what it does or waits for now, in words
    done: int  # measurements done (each case × worker process)
    total: int
    updated_s: float  # seconds since the file last changed
    finished_cases: list[dict] = field(default_factory=list)  # newest first: case, metric, median, unit, status

    @property
    def running(self) -> bool:
        return self.state == "running"


def live_run(path: str | None = None) -> LiveRun | None:
    """The live status at `path` (default: MPSBENCH_LIVE), or None."""
    where = path or os.environ.get(LIVE_VARIABLE, "")
    if not where:
        return None
    try:
        found = json.loads(Path(where).read_text(encoding="utf-8"))
        age = max(0.0, time.time() - float(found["updated_at"]))
        state = str(found["state"])
        cases = [c for c in found.get("finished_cases", []) if isinstance(c, dict)]
        live = LiveRun(
            str(found["run_id"]),
            str(found["device"]),
            "stopped" if state == "running" and age > STALE_S else state,
            str(found["doing"]),
            int(found["done"]),
            int(found["total"]),
            age,
            cases,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return live
