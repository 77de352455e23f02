"""A run's live status for whoever watches it besides the terminal (`mpsbench run --status-file PATH`): the
dashboard `scripts/start.sh` serves while the first run collects shows it, filling in as cases finish.

One small JSON object, replaced atomically at each event (a reader never sees half of it): what the run is doing
now ("timing softmax · 1×128256 · fp32 · process 3/10", or "waiting up to 30 s for an idle machine: other
processes take 70 % of the cores"), how many of its measurements are done, and the latest finished cases' first
figure with its unit. It is a view of the run, never a measurement: the bundle is the record."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from bundle.schema import Result
from bundle.stats import summarize

SHOWN = 40  # finished cases the file lists, newest first
FINISHED, INTERRUPTED = "finished", "interrupted"


class LiveStatus:
    def __init__(self, path: Path, run_id: str, device: str, total: int):
        self.path = path
        self.state: dict[str, Any] = {
            "run_id": run_id,
            "device": device,
            "total": total,
            "done": 0,
            "doing": "starting",
            "state": "running",
            "started_at": time.time(),
            "updated_at": time.time(),
            "finished_cases": [],
        }
        self._write()

    def doing(self, words: str) -> None:
        self.state["doing"] = words
        self._write()

    def advance(self, results: list[Result] | None) -> None:
        self.state["done"] += 1
        first = next((r for r in results or [] if r.samples), None)
        if first is not None:  # the case merged over its worker processes, as the bundle will hold it
            case = {"case": f"{first.workload} · {first.dtype} · {first.compile}", "metric": first.metric}
            case |= {"median": summarize(first.samples).median, "unit": first.unit, "status": first.status.value}
            self.state["finished_cases"] = [case] + self.state["finished_cases"][: SHOWN - 1]
        self._write()

    def end(self, state: str, words: str) -> None:
        self.state["state"], self.state["doing"] = state, words
        self._write()

    def _write(self) -> None:
        self.state["updated_at"] = time.time()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        scratch = self.path.with_name(self.path.name + ".tmp")
        scratch.write_text(json.dumps(self.state), encoding="utf-8")
        os.replace(scratch, self.path)
