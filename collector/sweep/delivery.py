"""A sweep's --push: each finished run delivered once, and the journal knows which were.

Every push answer for one of the sweep's runs is journaled (`push` records: slot key, run_id, state); a run counts
as delivered once an answer was `sent` (the server acknowledged it). A resume first pushes the finished runs not
yet delivered (finished before a kill, or queued in the outbox while the server was away), then each run as it
finishes. A push that the server acknowledged just before a SIGKILL, with no time left to journal it, is sent
once more on resume: the server keeps one run per run_id, so that is the one repeat possible.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from collector.push.pusher import Pusher
from collector.push.report import report_push  # the CLI's one way of printing push answers
from collector.sweep.journal import SweepJournal, SweepState


class Delivery:
    def __init__(self, pusher: Pusher, journal: SweepJournal, state: SweepState, console: Console) -> None:
        self.pusher, self.journal, self.state, self.console = pusher, journal, state, console

    def delivered(self, key: str) -> bool:
        return (self.state.pushed.get(key) or {}).get("state") == "sent"

    def backlog(self) -> None:
        """Push the runs that finished but were never acknowledged (a resume does this before running on)."""
        waiting = [k for k, end in self.state.done.items() if end.get("ok") and not self.delivered(k)]
        if waiting:
            self.console.print(
                f"delivering {len(waiting)} finished run(s) not yet acknowledged by {self.pusher.endpoint}"
            )
            self.push(waiting)

    def push(self, keys: list[str]) -> None:
        """Push these slots' bundles (and whatever waits in the outbox), journaling each answer for our runs."""
        ours = {end["run_id"]: key for key, end in self.state.done.items() if end.get("ok") and end.get("run_id")}
        outcomes = self.pusher.push([Path(self.state.done[k]["bundle"]) for k in keys])
        for o in outcomes:
            key = ours.get(o.path.stem) if o.path.suffix == ".json" else None
            if key is not None and not self.delivered(key):
                record = {"type": "push", "key": key, "run_id": o.path.stem, "state": o.state, "detail": o.detail}
                self.journal.append(record)
                self.state.pushed[key] = record
        report_push(outcomes, self.console)

    def summary(self) -> str:
        ok = [k for k, end in self.state.done.items() if end.get("ok")]
        sent = sum(self.delivered(k) for k in ok)
        return f"{sent} of {len(ok)} finished runs delivered to {self.pusher.endpoint}" + (
            "" if sent == len(ok) else " (`mpsbench sweep --resume` with this journal delivers the others)"
        )
