"""The sweep journal: one JSON line per event, appended and fsynced at once (collector.journal.lines, as the run journal), so Ctrl-C,
SIGKILL or a crash loses nothing that finished; `sweep --resume` reads it back and continues. Events: sweep (the
header: options, builds, rounds), build, schedule, slot_start, slot_end, push (a delivery answer), options."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collector.errors import CollectorError
from collector.journal.lines import append_line
from collector.journal.read import (
    FLAG,
    NUMBER,
    TEXT,
    WHOLE,
    list_of,
    nullable,
    obj,
    optional,
    read_journal,
    text_like,
)

SUFFIX = ".sweep.jsonl"
TEXTS = list_of(TEXT)
# a sweep's recorded options (collector.sweep.options: recorded, run_args), also a bisect's plan: what run_args
# indexes is required, what it reads with .get() optional
PLAN = {
    "profile": TEXT,
    "device": TEXT,
    "compile": TEXT,
    **{name: optional(TEXTS, null=False) for name in ("workload", "suite", "tag", "case")},
    "dtype": optional(TEXT),
    "machine_name": optional(TEXT),
    "case_time_limit": optional(NUMBER),
    "processes": optional(WHOLE),
    "idle_wait": optional(NUMBER),
    "push": optional(TEXT),
}
READY_BUILD = {  # collector.sweep.envs.ReadyBuild, as to_json writes it
    "index": WHOLE,
    "spec": TEXT,
    "python": TEXT,
    "torch_version": TEXT,
    "git_hash": nullable(TEXT),
    "label": TEXT,
    "install_source": TEXT,
}
SLOT_KEY = r"r[0-9]+-b[0-9]+-aa[01]"  # collector.sweep.schedule.Slot.key
# what a resume reads of each record (collector.sweep.command, .delivery, .options)
KINDS = {
    "sweep": {
        "sweep_id": TEXT,
        "rounds": WHOLE,
        "aa": FLAG,
        "builds": TEXTS,
        "options": obj(**PLAN),
        "n_cases": WHOLE,
        "envs": TEXT,
    },
    "build": lambda r: {"ok": FLAG, **READY_BUILD} if r.get("ok") else {"ok": FLAG, "index": WHOLE, "spec": TEXT},
    "schedule": {"slots": list_of(obj(closed=True, round=WHOLE, position=WHOLE, build=WHOLE, aa=WHOLE))},
    "slot_start": {"key": text_like(SLOT_KEY, "r1-b0-aa0")},
    "slot_end": {
        "key": text_like(SLOT_KEY, "r1-b0-aa0"),
        "ok": FLAG,
        "bundle": optional(TEXT),
        "run_id": optional(TEXT),
    },
    "push": {"key": text_like(SLOT_KEY, "r1-b0-aa0"), "state": optional(TEXT)},
    "options": {"options": obj(**{k: optional(f) if f.required else f for k, f in PLAN.items()})},
}


@dataclass
class SweepState:
    header: dict[str, Any]
    builds: dict[int, dict[str, Any]] = field(default_factory=dict)  # index -> ready or failed record
    order: list[dict[str, Any]] | None = None  # the schedule, fixed once the builds are known
    started: dict[str, dict[str, Any]] = field(default_factory=dict)  # slot key -> its start record
    done: dict[str, dict[str, Any]] = field(default_factory=dict)  # slot key -> its end record (ok or failed)
    pushed: dict[str, dict[str, Any]] = field(default_factory=dict)  # slot key -> its last push answer


class SweepJournal:
    def __init__(self, path: Path) -> None:
        self.path = path

    @staticmethod
    def path_for(out_dir: Path, sweep_id: str) -> Path:
        return out_dir / f"sweep-{sweep_id}{SUFFIX}"

    def append(self, record: dict[str, Any]) -> None:
        append_line(self.path, record)

    def start(self, header: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.append({"type": "sweep", **header})

    def read(self) -> SweepState:
        try:  # a torn last line dropped and cut off; each record checked (collector.journal.read)
            records = read_journal(self.path, "sweep journal", "sweep", KINDS)
        except CollectorError as exc:
            raise CollectorError(f"--resume: {exc}") from None
        state = SweepState(records[0])
        for r in records[1:]:
            kind = r.get("type")
            if kind == "build":
                state.builds[r["index"]] = r
            elif kind == "schedule":
                state.order = r["slots"]
            elif kind == "slot_start":
                state.started[r["key"]] = r
            elif kind == "slot_end":
                state.done[r["key"]] = r
            elif kind == "push":
                state.pushed[r["key"]] = r
            elif kind == "options":  # an option a resume added (--push on a sweep that had none)
                state.header.setdefault("options", {}).update(r["options"])
        return state


def latest(out_dir: Path) -> Path:
    found = sorted(out_dir.glob(f"sweep-*{SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True)
    if not found:
        raise CollectorError(f"--resume: no sweep journal (sweep-*{SUFFIX}) in {out_dir}")
    return found[0]
