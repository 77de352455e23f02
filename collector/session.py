"""One collector run: fingerprint, plan, journal each finished case, write the bundle (also when interrupted)."""
from __future__ import annotations

import json
import os
import uuid
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from bundle.schema import SCHEMA_VERSION, Build, Bundle, DeviceInfo, Machine, Result
from collector.adapters import get_adapter, resolve
from collector.catalog import Catalog
from collector.errors import CollectorError
from collector.fingerprint import current_machine, run_warnings
from collector.fingerprint.build import current_build
from collector.journal import SUFFIX, Journal, JournalState
from collector.plan import CaseList, PlannedCase, Plan, expand
from collector.isolation import CaseOutcome, Isolator, WorkerSpec
from collector.runner import run_case

COLLECTOR_VERSION = "0.1.0"
Progress = Callable[[str, PlannedCase | None, list[Result] | None], None]  # event, case, its results


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


@dataclass
class Session:
    out_dir: Path
    journal: Journal
    state: JournalState
    cases: CaseList
    plan: Plan
    results: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    retry_crashed: bool = False  # --retry-crashed: cases that crashed or timed out count as pending

    @property
    def run_id(self) -> str:
        return self.state.header["run_id"]

    @property
    def bundle_path(self) -> Path:
        return self.out_dir / f"{self.run_id}.json"

    def pending(self) -> list[PlannedCase]:
        return [c for c in self.cases.cases if c.id not in self.state.cases
                or (self.retry_crashed and c.id in self.state.crashed)]


def start(out_dir: Path, plan: Plan, catalog: Catalog, device: str, machine_name: str | None,
          tags: dict[str, str], command_line: str = "", channel: str | None = None,
          install_source: str | None = None) -> Session:
    machine = current_machine(machine_name, resolve(device))
    build = current_build(COLLECTOR_VERSION, command_line, channel, install_source)
    adapter = get_adapter(device, chip=machine.chip)
    cases = expand(plan, catalog)
    run_id = uuid.uuid4().hex
    header = {"run_id": run_id, "started_at": _now(), "machine": machine.model_dump(mode="json"),
              "build": build.model_dump(mode="json"), "device": {"type": adapter.device_type, "name": adapter.name},
              "device_choice": device, "tags": tags, "warnings": run_warnings(machine), "plan": plan.to_json()}
    journal = Journal(Journal.path_for(out_dir, run_id))
    journal.start(header)
    return Session(out_dir, journal, JournalState(header), cases, plan)


def latest_journal(out_dir: Path, retry_crashed: bool = False) -> Path:
    """The newest journal in out_dir whose run has no complete bundle yet (or, retrying, has crashed cases)."""
    for path in sorted(out_dir.glob(f"*{SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True):
        if not _bundle_complete(path.with_name(path.name.removesuffix(SUFFIX) + ".json")):
            return path
        if retry_crashed and _has_crashed_cases(path):
            return path
    what = "unfinished run journal or one with crashed cases" if retry_crashed else "unfinished run journal"
    raise CollectorError(f"--resume: no {what} (*{SUFFIX}) in {out_dir}")


def _has_crashed_cases(journal: Path) -> bool:
    try:
        return bool(Journal(journal).load(repair=False).crashed)
    except CollectorError:  # not a journal (or unreadable): not one to retry
        return False


def _bundle_complete(bundle: Path) -> bool:
    try:
        return bool(json.loads(bundle.read_text()).get("complete"))
    except (OSError, ValueError):  # missing or unreadable: the run is not finished
        return False


def resume(journal_path: Path, catalog: Catalog, retry_crashed: bool = False) -> Session:
    journal = Journal(journal_path)
    state = journal.load()
    import torch
    recorded = state.header["build"]["torch_version"]
    if recorded != torch.__version__:
        raise CollectorError(f"--resume: {journal_path} was recorded with torch {recorded}; this is torch "
                             f"{torch.__version__} (a run measures one build)")
    plan = Plan.from_json(state.header["plan"])
    journal.mark_resume()
    state.resumes += 1
    return Session(journal_path.parent, journal, state, expand(plan, catalog), plan, retry_crashed=retry_crashed)


def worker_spec(session: Session) -> WorkerSpec:
    """Device, chip and policy from the journal header, so a resumed run measures like the original."""
    header = session.state.header
    return WorkerSpec(header.get("device_choice", header["device"]["type"]), session.plan.profile,
                      session.plan.case_time_limit_s, header["machine"].get("chip"), header["machine"].get("gpu_cores"))


def _run_pending(session: Session, notify: Progress, isolate: bool) -> None:
    spec = worker_spec(session)
    ctx = spec.context()
    with Isolator(spec, ctx) if isolate else nullcontext() as isolator:
        for planned in session.pending():
            notify("start", planned, None)
            if isolator is None:
                outcome = CaseOutcome(run_case(planned.workload, planned.case, ctx))
            else:
                outcome = isolator.run(planned.workload, planned.case)
            dumped = [r.model_dump(mode="json") for r in outcome.results]
            session.journal.finish_case(planned.id, dumped, outcome.failure)
            session.state.record(planned.id, dumped, outcome.failure)
            notify("done", planned, outcome.results)


def run(session: Session, on_progress: Progress | None = None, isolate: bool = True) -> Path:
    """Run every pending case (each in the case worker unless isolate is False), journaling each at once.
    Ctrl-C: the bundle is written incomplete, re-raised."""
    try:
        _run_pending(session, on_progress or (lambda *a: None), isolate)
    except KeyboardInterrupt:
        # The journal on disk is the record: a case journaled just before the interrupt (say, during the
        # fsync) but not yet in memory belongs in the incomplete bundle too.
        session.state = session.journal.load()
        write_bundle(session)
        raise
    return write_bundle(session)


def build_bundle(session: Session) -> Bundle:
    h = session.state.header
    planned = [c.id for c in session.cases.cases]
    done = [cid for cid in planned if cid in session.state.cases]
    complete = len(done) == len(planned)
    warnings = list(h.get("warnings", []))
    warnings += [f"workload {w}: {why}" for w, why in session.cases.failed.items()]
    if session.state.resumes:
        warnings.append(f"run resumed {session.state.resumes} time(s) after an interruption (same run_id)")
    if not complete:
        warnings.append(f"incomplete: {len(done)} of {len(planned)} cases finished")
    results = [Result.model_validate(r) for cid in done for r in session.state.cases[cid]]
    return Bundle(schema_version=SCHEMA_VERSION, run_id=h["run_id"], started_at=h["started_at"], ended_at=_now(), complete=complete,
                  machine=Machine.model_validate(h["machine"]), build=Build.model_validate(h["build"]),
                  device=DeviceInfo.model_validate(h["device"]), tags=h.get("tags", {}), warnings=warnings,
                  results=results)


def write_bundle(session: Session) -> Path:
    """Write <out>/<run_id>.json atomically (a reader never sees half a bundle)."""
    bundle = build_bundle(session)
    path = session.bundle_path
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(bundle.model_dump_json(indent=1), encoding="utf-8")
    os.replace(tmp, path)
    return path
