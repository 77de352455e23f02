"""Running a sweep's slots: each (build, round[, A/A]) is one `<env python> -m collector run` process writing
its own bundle into its own folder, tagged sweep / round / build / aa / spec / position. The parent journals
each slot's start and end; a slot found started but not ended on --resume continues its own run journal (its
finished cases are kept) or, if its bundle is complete, is simply recorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from collector.isolation import lifeline
from collector.journal.run_journal import SUFFIX as RUN_SUFFIX
from collector.sweep.envs import ROOT, child_env
from collector.sweep.journal import SweepJournal
from collector.sweep.schedule import Slot

POLL_S = 0.2


@dataclass
class SlotRun:
    """What a slot needs to start its process."""

    slot: Slot
    python: str
    label: str
    install_source: str
    channel: str | None  # the user's --channel for the build
    folder: Path

    def command(self, sweep_id: str, run_args: list[str]) -> list[str]:
        s = self.slot
        tags = {
            "sweep": sweep_id,
            "round": s.round,
            "build": self.label,
            "aa": s.aa,
            "spec": s.build + 1,
            "position": s.position,
        }
        cmd = [
            self.python,
            "-m",
            "collector",
            "run",
            "--out",
            str(self.folder),
            *run_args,
            "--install-source",
            self.install_source,
        ]
        cmd += ["--channel", self.channel] if self.channel else []
        for k, v in tags.items():
            cmd += ["--tag", f"{k}={v}"]
        journal = unfinished_run(self.folder)
        return cmd + (["--resume", str(journal)] if journal else [])


def _bundle(folder: Path) -> tuple[Path | None, dict | None]:
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and "run_id" in data:
            return path, data
    return None, None


def complete_bundle(folder: Path) -> Path | None:
    path, data = _bundle(folder)
    return path if data and data.get("complete") else None


def unfinished_run(folder: Path) -> Path | None:
    """The slot's run journal when its run started and its bundle is not complete."""
    if complete_bundle(folder):
        return None
    found = sorted(folder.glob(f"*{RUN_SUFFIX}"))
    return found[0] if found else None


def cases_done(folder: Path) -> int:
    for journal in folder.glob(f"*{RUN_SUFFIX}"):
        try:
            return sum(1 for line in journal.read_text().splitlines() if '"type":"case"' in line)
        except OSError:
            return 0
    return 0


@dataclass
class SlotOutcome:
    key: str
    ok: bool
    exit_code: int | None
    bundle: str | None = None
    run_id: str | None = None
    detail: str = ""
    seconds: float = 0.0
    record: dict = field(default_factory=dict)  # its slot_end journal record


def run_slot(
    run: SlotRun, sweep_id: str, run_args: list[str], journal: SweepJournal, on_cases: Callable[[int], None]
) -> SlotOutcome:
    """Run (or finish) one slot; on_cases(n) reports its finished case count as it grows. The child runs in its
    own session, tied to this process (collector.isolation.lifeline): Ctrl-C or SIGTERM here is passed on as SIGTERM (its
    Ctrl-C: the incomplete bundle is written), a SIGKILL here reaches it from the kernel; either way the slot is
    left unended for --resume. Whatever the child leaves in its process group is killed when it ends."""
    s, key = run.slot, run.slot.key
    run.folder.mkdir(parents=True, exist_ok=True)
    journal.append(
        {
            "type": "slot_start",
            "key": key,
            "round": s.round,
            "position": s.position,
            "build": s.build,
            "aa": s.aa,
            "label": run.label,
            "folder": str(run.folder),
        }
    )
    started = time.perf_counter()
    if complete_bundle(run.folder) is None:
        with (run.folder / "run.log").open("a") as log:
            child = subprocess.Popen(
                run.command(sweep_id, run_args),
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**child_env(), lifeline.PARENT_VARIABLE: str(os.getpid())},
                start_new_session=True,
            )
            previous = signal.signal(signal.SIGTERM, _raise_interrupt)
            try:
                while child.poll() is None:
                    on_cases(cases_done(run.folder))
                    time.sleep(POLL_S)
            except KeyboardInterrupt:
                _stop(child)
                raise
            finally:
                signal.signal(signal.SIGTERM, previous)
                lifeline.end_group(child.pid)
        code = child.returncode
    else:
        code = 0
    on_cases(cases_done(run.folder))
    return _finish(run, key, code, journal, time.perf_counter() - started)


def _raise_interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def _stop(child: subprocess.Popen) -> None:
    """SIGTERM (the run's Ctrl-C), then wait while it writes its incomplete bundle and journal."""
    try:
        child.terminate()
        child.wait(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
    except KeyboardInterrupt:  # a second Ctrl-C: no more waiting
        child.kill()
        child.wait()


def _finish(run: SlotRun, key: str, code: int | None, journal: SweepJournal, seconds: float) -> SlotOutcome:
    path = complete_bundle(run.folder)
    if code == 0 and path is not None:
        run_id = json.loads(path.read_text())["run_id"]
        outcome = SlotOutcome(key, True, code, str(path), run_id, seconds=seconds)
    else:
        tail = (run.folder / "run.log").read_text(errors="replace").strip().splitlines()[-5:]
        outcome = SlotOutcome(key, False, code, detail=" | ".join(tail) or "no output", seconds=seconds)
    outcome.record = {
        "type": "slot_end",
        "key": key,
        "ok": outcome.ok,
        "exit_code": code,
        "bundle": outcome.bundle,
        "run_id": outcome.run_id,
        "detail": outcome.detail,
        "seconds": round(seconds, 3),
    }
    journal.append(outcome.record)
    return outcome
