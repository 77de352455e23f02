"""What one `mpsbench bisect` step does: make the interval's ends and its midpoint ready (each build's
environment reused by its spec's hash, as `sweep` makes them), run the three interleaved in rounds (the order
rotating each round, as a sweep's), store or push each run, and ask the review after every round until the step
is decided or its rounds are spent. Everything is journaled as it happens (<out>/bisect-<id>.bisect.jsonl): a
killed bisect resumes where it stopped, a run cut short continuing its own run journal."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from collector.errors import CollectorError
from collector.journal.lines import append_line
from collector.journal.read import FLAG, PRESENT, TEXT, WHOLE, list_of, obj, one_of, optional, read_journal, text_like
from collector.sweep.envs import Installer
from collector.sweep.journal import PLAN, READY_BUILD, SLOT_KEY
from collector.sweep.options import run_args
from collector.sweep.runner import SlotRun, run_slot
from collector.sweep.schedule import schedule
from collector.sweep.spec import parse_spec
from db.review.decisions import BAD, GOOD, UNCLEAR, bisect_verdict, target_rows

SUFFIX = ".bisect.jsonl"
TEXTS = list_of(TEXT)
# what a resume reads of each record (mpsbench.workflows.bisect: _main, _answer; Stepper; State.of)
KINDS = {
    "bisect": {
        "bisect_id": TEXT,
        "builds": TEXTS,
        "targets": TEXTS,
        "scope": optional(TEXT),
        "rounds": WHOLE,
        "plan": obj(**PLAN),
        "options": obj(**{k: optional(TEXT) for k in ("db", "push", "scope", "threshold", "rules")}),
        "envs": TEXT,
    },
    "build": READY_BUILD,
    "slot_end": lambda r: (
        {"key": text_like(SLOT_KEY, "r1-b0-aa0"), "step": WHOLE, "ok": FLAG, "bundle": TEXT, "run_id": TEXT}
        if r.get("ok")
        else {"ok": FLAG}
    ),
    "verdict": {
        "step": WHOLE,
        "index": WHOLE,
        "verdict": one_of(GOOD, BAD, UNCLEAR),
        "rounds": WHOLE,
        "why": TEXT,
        "rows": list_of(
            obj(**dict.fromkeys(("case", "metric", "baseline_value", "candidate_value", "change"), PRESENT))
        ),
    },
}


class BisectError(Exception):
    """Bad arguments, a build that cannot be made ready, a run that failed: printed as ERROR, exit 1."""


class Journal:
    """One JSON line per event, fsynced by the collector's one journal writer (collector.journal.lines): bisect (the header), build,
    slot_start / slot_end (a run), verdict (a step decided, or left unclear after its rounds)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        append_line(self.path, record)

    def read(self) -> list[dict[str, Any]]:
        """The records; a last line torn by a kill is dropped and cut off (the collector's one journal reader)."""
        try:  # each record checked against what a resume reads of it (collector.journal.read)
            return read_journal(self.path, "bisect journal", "bisect", KINDS)
        except CollectorError as exc:
            raise BisectError(f"--resume: {exc}") from None


class _StepJournal:
    """run_slot's journal: its slot records carry the step they belong to."""

    def __init__(self, journal: Journal, step: int) -> None:
        self.journal, self.step = journal, step

    def append(self, record: dict[str, Any]) -> None:
        self.journal.append({**record, "step": self.step})


@dataclass
class _BisectRun(SlotRun):
    """A step's run: tagged as the bisect's (not as a sweep's: the Sweeps page would read its rounds wrongly)."""

    tags: dict[str, Any] = field(default_factory=dict)

    def command(self, sweep_id: str, args: list[str]) -> list[str]:
        base = super().command(sweep_id, args)
        cut = base.index("--tag")  # the sweep's own tags follow the plan: replaced by the bisect's
        resume = base[base.index("--resume") :] if "--resume" in base else []
        return base[:cut] + [x for k, v in self.tags.items() for x in ("--tag", f"{k}={v}")] + resume


@dataclass
class State:
    header: dict[str, Any]
    builds: dict[int, dict[str, Any]] = field(default_factory=dict)  # index -> ReadyBuild's record
    runs: dict[tuple[int, int, int], dict[str, Any]] = field(default_factory=dict)  # (step, round, build) -> end
    verdicts: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, records: list[dict[str, Any]]) -> "State":
        state = cls(records[0])
        for r in records[1:]:
            if r.get("type") == "build":
                state.builds[r["index"]] = r
            elif r.get("type") == "slot_end" and r.get("ok"):
                state.runs[_run_key(r["key"], r["step"])] = r
            elif r.get("type") == "verdict":
                state.verdicts.append(r)
        return state

    def run_ids(self, step: int, build: int) -> list[str]:
        return [r["run_id"] for (s, _, b), r in sorted(self.runs.items()) if s == step and b == build]


def _run_key(slot_key: str, step: int) -> tuple[int, int, int]:
    r, b, _ = slot_key.split("-")  # Slot.key: r{round}-b{build}-aa0
    return step, int(r[1:]), int(b[1:])


class Stepper:
    """Runs steps for a bisect; `store(bundle)` stores or pushes a run, `review(baseline, candidate)` answers a
    review of two `runs:` selectors (the local store's or the server's)."""

    def __init__(
        self,
        journal: Journal,
        state: State,
        store: Callable[[Path], None],
        review: Callable[[str, str], dict],
        scope: str | None,
        say: Callable[[str], None],
    ) -> None:
        self.journal, self.state, self.store, self.review = journal, state, store, review
        self.scope, self.say = scope, say
        self.installer = Installer(Path(state.header["envs"]), log=say)
        self.stored: set[tuple[int, int, int]] = set()  # runs this process stored (or pushed)

    def ready(self, index: int) -> dict[str, Any]:
        if index not in self.state.builds:
            text = self.state.header["builds"][index]
            try:
                build = self.installer.ensure(parse_spec(text), index)
            except CollectorError as exc:
                raise BisectError(f"build {index + 1} ({text}) cannot be made ready: {exc}") from None
            record = {"type": "build", **build.to_json()}
            self.journal.append(record)
            self.state.builds[index] = record
            self.say(f"build {index + 1}: {build.label} ({'created' if build.created else 'reused'} {build.python})")
        return self.state.builds[index]

    def step(self, step: int, lo: int, mid: int, hi: int) -> dict[str, Any]:
        """Run the step's rounds until decided; its verdict record (journaled)."""
        h = self.state.header
        for i in (lo, mid, hi):
            self.ready(i)
        rounds, folder = int(h["rounds"]), self.journal.path.parent / f"bisect-{h['bisect_id']}"
        slots = schedule([lo, mid, hi], rounds, False)
        verdict, targets, why, answers = UNCLEAR, [], "not run", {}
        for round_ in range(1, rounds + 1):
            for slot in (s for s in slots if s.round == round_):
                key = (step, round_, slot.build)
                if key not in self.state.runs:
                    self._run(step, slot, folder)
                elif key not in self.stored:  # resumed: a kill may have come before it was stored (idempotent)
                    self.store(Path(self.state.runs[key]["bundle"]))
                    self.stored.add(key)
            answers = {
                name: self.review(self._side(step, a), self._side(step, b))
                for name, (a, b) in (("ends", (lo, hi)), ("before", (lo, mid)), ("after", (mid, hi)))
            }
            verdict, targets, why = bisect_verdict(
                h["targets"], answers["ends"], answers["before"], answers["after"], self.scope
            )
            self.say(f"  after round {round_}/{rounds}: {self.label(mid)} is {verdict} ({why})")
            if verdict != UNCLEAR:
                break
        decisive = answers.get("before") if verdict == "bad" else answers.get("after")
        record = {
            "type": "verdict",
            "step": step,
            "index": mid,
            "lo": lo,
            "hi": hi,
            "verdict": verdict,
            "rounds": round_,
            "why": why,
            "targets": targets,
            "rows": [_figures(r) for r in target_rows(targets, decisive or {}, self.scope)],
        }
        self.journal.append(record)
        self.state.verdicts.append(record)
        return record

    def label(self, index: int) -> str:
        build = self.state.builds.get(index)
        return build["label"] if build else self.state.header["builds"][index]

    def _side(self, step: int, build: int) -> str:
        return "runs:" + ",".join(self.state.run_ids(step, build))

    def _run(self, step: int, slot, folder: Path) -> None:
        h, build = self.state.header, self.state.builds[slot.build]
        self.say(f"  step {step} round {slot.round}: {build['label']}")
        tags = {
            "bisect": h["bisect_id"],
            "bisect_step": step,
            "round": slot.round,
            "build": build["label"],
            "position": slot.position,
        }
        run = _BisectRun(
            slot, build["python"], build["label"], build["install_source"], None, folder / f"s{step}-{slot.key}", tags
        )
        outcome = run_slot(run, h["bisect_id"], run_args(h["plan"]), _StepJournal(self.journal, step), lambda n: None)
        if not outcome.ok:
            raise BisectError(
                f"the run of {build['label']} (step {step}, round {slot.round}) failed: "
                f"{outcome.detail}; `mpsbench bisect --resume {self.journal.path}` runs it again"
            )
        self.store(Path(outcome.bundle))
        self.state.runs[(step, slot.round, slot.build)] = outcome.record
        self.stored.add((step, slot.round, slot.build))


def _figures(row: dict) -> dict:
    """What the answer prints of a regression row: the case, the metric, the medians with their unit."""
    keep = (
        "case",
        "metric",
        "baseline_value",
        "candidate_value",
        "change",
        "baseline_median",
        "candidate_median",
        "unit",
        "oriented_ratio",
        "what_ran",  # what changed in what ran (bisect runs break their cases down): a path change named
    )
    return {k: row.get(k) for k in keep}
