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

from bundle.contention import contended
from bundle.kernels import CaseKernels
from bundle.schema import SCHEMA_VERSION, Build, Bundle, DeviceInfo, Machine, Result
from collector.adapters import get_adapter, resolve
from collector.catalog import Catalog
from collector.errors import CollectorError
from collector.fingerprint import current_machine, run_warnings
from collector.fingerprint.build import current_build
from collector.isolation.isolator import CaseOutcome, Isolator, WorkerSpec
from collector.isolation.processes import RunState, merged_results, process_share, run_note
from collector.isolation.runner import records, run_case
from collector.journal.run_journal import SUFFIX, Journal
from collector.run.kernel_pass import pending, profile_cases
from collector.run.plan import CaseList, Plan, PlannedCase, expand
from collector.timing.contention import IdleGate, IdlePolicy

COLLECTOR_VERSION = "0.2.0"
# event ("start" | "done" | "retake" | "kernels"), the case, its merged results once every process has measured it, the
# process index
Progress = Callable[[str, PlannedCase | None, list[Result] | None, int], None]
RETAKES = 2  # times a contended worker process's timing is re-timed, at most (each a fresh process)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


@dataclass
class Session:
    out_dir: Path
    journal: Journal
    state: RunState
    cases: CaseList
    plan: Plan
    results: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    retry_crashed: bool = False  # --retry-crashed: cases that crashed or timed out count as pending
    gate: IdleGate | None = None  # the wait for an idle machine (made from the plan when the run starts)
    written: Bundle | None = None  # the bundle last written (write_bundle): what the run's summary shows

    @property
    def run_id(self) -> str:
        return self.state.header["run_id"]

    @property
    def bundle_path(self) -> Path:
        return self.out_dir / f"{self.run_id}.json"

    def pending(self, process: int | None = None) -> list[PlannedCase]:
        """The cases still to measure (in worker process `process`, or in any)."""
        todo = []
        for c in self.cases.cases:
            if self.retry_crashed and c.id in self.state.crashed:
                todo.append(c)
            elif c.id not in self.state.crashed and (
                process not in self.state.parts.get(c.id, {})
                if process is not None
                else not self.state.finished(c.id, self.plan.processes)
            ):
                todo.append(c)
        return todo

    def pending_measurements(self) -> int:
        """(case, process) measurements still to make: what the progress bar counts."""
        return sum(len(self.pending(p)) for p in range(self.plan.processes))

    def needs_retake(self, cid: str) -> bool:
        """Whether a finished case has a contended process still to re-time: it has fewer clean processes than
        the plan's, and its retakes so far are fewer than RETAKES for each of its contended processes."""
        parts, planned = self.state.parts.get(cid, {}), self.plan.processes
        if cid in self.state.crashed or not self.state.finished(cid, planned):
            return False
        shares = {p: process_share(results) for p, results in parts.items()}
        hot = sum(contended(shares[p]) for p in shares if p < planned)
        clean = sum(not contended(share) for share in shares.values())
        retakes = sum(p >= planned for p in shares)
        return bool(hot) and clean < planned and retakes < RETAKES * hot

    def next_retake_process(self) -> int:
        """The process index of the next retake round (after every journaled one)."""
        used = [p for parts in self.state.parts.values() for p in parts]
        return max([self.plan.processes - 1, *used]) + 1


def start(
    out_dir: Path,
    plan: Plan,
    catalog: Catalog,
    device: str,
    machine_name: str | None,
    tags: dict[str, str],
    command_line: str = "",
    channel: str | None = None,
    install_source: str | None = None,
) -> Session:
    machine = current_machine(machine_name, resolve(device))
    build = current_build(COLLECTOR_VERSION, command_line, channel, install_source)
    adapter = get_adapter(device, chip=machine.chip)
    cases = expand(plan, catalog)
    run_id = uuid.uuid4().hex
    header = {
        "run_id": run_id,
        "started_at": _now(),
        "machine": machine.model_dump(mode="json"),
        "build": build.model_dump(mode="json"),
        "device": {"type": adapter.device_type, "name": adapter.name},
        "device_choice": device,
        "tags": tags,
        "warnings": run_warnings(machine),
        "plan": plan.to_json(),
    }
    journal = Journal(Journal.path_for(out_dir, run_id))
    journal.start(header)
    return Session(out_dir, journal, RunState(header), cases, plan)


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
        raise CollectorError(
            f"--resume: {journal_path} was recorded with torch {recorded}; this is torch "
            f"{torch.__version__} (a run measures one build)"
        )
    plan = Plan.from_json(state.header["plan"])
    journal.mark_resume()
    state.resumes += 1
    return Session(journal_path.parent, journal, state, expand(plan, catalog), plan, retry_crashed=retry_crashed)


def worker_spec(session: Session, process: int = 0) -> WorkerSpec:
    """Device, chip and policy from the journal header, so a resumed run measures like the original. Process 0
    runs every pass, the others the timing passes only (collector.isolation.processes)."""
    header = session.state.header
    return WorkerSpec(
        header.get("device_choice", header["device"]["type"]),
        session.plan.profile,
        session.plan.case_time_limit_s,
        header["machine"].get("chip"),
        header["machine"].get("gpu_cores"),
        session.plan.processes,
        full=process == 0,
    )


def _rotated(cases: list[PlannedCase], process: int) -> list[PlannedCase]:
    """Each process starts the case list at another place, so no case is always first after a worker starts."""
    if not cases:
        return cases
    start = (process * max(1, len(cases) // 7)) % len(cases)
    return cases[start:] + cases[:start]


def _run_pending(session: Session, notify: Progress, isolate: bool) -> None:
    """Process after process, each a fresh worker running every pending case: the cases interleave across the
    processes, so drift over the run spreads over each case's replicates instead of biasing one case. Before
    each case the run waits for an idle machine (collector.timing.contention.IdleGate); then the contended processes
    are re-timed (_retake)."""
    gate = _gate(session)
    for process in range(session.plan.processes):
        todo = session.pending(process)
        if not todo:
            continue
        spec = worker_spec(session, process)
        ctx = spec.context()
        with Isolator(spec, ctx) if isolate else nullcontext() as isolator:
            for planned in _rotated(todo, process):
                gate.wait()
                notify("start", planned, None, process)
                if isolator is None:
                    outcome = CaseOutcome(records(run_case(planned.workload, planned.case, ctx)))
                else:
                    outcome = isolator.run(planned.workload, planned.case)
                dumped = outcome.records
                gate.saw(process_share(dumped))
                session.journal.finish_case(planned.id, dumped, outcome.failure, process)
                session.state.record(planned.id, dumped, outcome.failure, process)
                done = session.state.finished(planned.id, session.plan.processes)
                notify("done", planned, case_results(session, planned.id) if done else None, process)
        session.retry_crashed = False  # a crash retried in this pass is not retried again in the next process
    if isolate:
        _retake(session, notify, gate)
    if session.plan.kernels:
        _kernel_pass(session, notify, gate)


def _kernel_pass(session: Session, notify: Progress, gate: IdleGate) -> None:
    """Each timed case's call under the backend's profiler, each in a worker of its own (collector.run.kernel_pass),
    after every timing: no timed figure runs beside a profiler. Like a timing, each waits for an idle machine (a
    profiled time on a busy one is as slow as a timed one). Each breakdown is journaled as it comes."""
    spec = worker_spec(session, 0)

    def before(planned: PlannedCase) -> None:
        gate.wait()
        notify("kernels", planned, None, 0)

    def each(planned: PlannedCase, kernels: dict[str, Any]) -> None:
        session.journal.finish_kernels(planned.id, kernels)
        session.state.kernels[planned.id] = kernels

    profiler = spec.context().adapter.kernel_profiler()
    todo = pending(session.cases.cases, session.state, session.plan.processes)
    profile_cases(todo, spec, profiler, each, before, retake=lambda: gate.enabled and not gate.spent)


def _gate(session: Session) -> IdleGate:
    """The run's gate: the plan's wait (a caller may have set session.gate, with progress on each wait)."""
    if session.gate is None:
        session.gate = IdleGate(IdlePolicy(wait_s=session.plan.idle_wait_s))
    return session.gate


def _retake(session: Session, notify: Progress, gate: IdleGate) -> None:
    """Re-time the cases whose processes ran contended, in rounds: each round a fresh worker process (timing
    passes only) that waits for an idle machine before each case and times every case still short of clean
    processes once. Both timings are kept (collector.isolation.processes words them). A retake that fails is not kept:
    the case keeps what its processes measured. No retakes without the wait, nor once the run's wait budget is
    spent on a machine still busy (they would run contended again)."""
    for _ in range(RETAKES * session.plan.processes if gate.enabled else 0):  # a retake that keeps failing ends
        todo = [c for c in session.cases.cases if session.needs_retake(c.id)]
        if not todo or (gate.spent and contended(gate.wait())):
            return
        process = session.next_retake_process()
        spec = worker_spec(session, process)
        with Isolator(spec, spec.context()) as isolator:
            for planned in todo:
                gate.wait()
                notify("retake", planned, None, process)
                outcome = isolator.run(planned.workload, planned.case)
                dumped = outcome.records
                measured = any(r["samples"] for r in dumped)
                if outcome.failure or not measured:
                    continue
                gate.saw(process_share(dumped))
                session.journal.finish_case(planned.id, dumped, None, process)
                session.state.record(planned.id, dumped, None, process)


def case_results(session: Session, cid: str) -> list[Result]:
    return merged_results(session.state.parts.get(cid, {}), session.plan.processes)


def run(session: Session, on_progress: Progress | None = None, isolate: bool = True) -> Path:
    """Run every pending case (each in the case worker unless isolate is False), journaling each at once.
    Ctrl-C: the bundle is written incomplete, re-raised."""
    if not isolate and session.plan.processes > 1:
        raise CollectorError(
            f"--in-process runs in this one process; this run times each case in "
            f"{session.plan.processes} worker processes (resume it without --in-process)"
        )
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
    done = [cid for cid in planned if session.state.finished(cid, session.plan.processes)]
    unprofiled = pending(session.cases.cases, session.state, session.plan.processes) if session.plan.kernels else []
    complete = len(done) == len(planned) and not unprofiled
    warnings = list(h.get("warnings", []))
    warnings += [f"workload {w}: {why}" for w, why in session.cases.failed.items()]
    if session.state.resumes:
        warnings.append(f"run resumed {session.state.resumes} time(s) after an interruption (same run_id)")
    if len(done) < len(planned):
        warnings.append(f"incomplete: {len(done)} of {len(planned)} cases finished")
    if unprofiled:
        warnings.append(f"incomplete: the kernel pass has {len(unprofiled)} case(s) still to break down (--resume)")
    results = [r for cid in done for r in case_results(session, cid)]
    kernels = [CaseKernels.model_validate(session.state.kernels[cid]) for cid in done if cid in session.state.kernels]
    busy = run_note(results)
    if busy:
        warnings.append(busy)
    return Bundle(
        schema_version=SCHEMA_VERSION,
        run_id=h["run_id"],
        started_at=h["started_at"],
        ended_at=_now(),
        complete=complete,
        machine=Machine.model_validate(h["machine"]),
        build=Build.model_validate(h["build"]),
        device=DeviceInfo.model_validate(h["device"]),
        tags=h.get("tags", {}),
        warnings=warnings,
        kernels=kernels,
        results=results,
    )


def write_bundle(session: Session) -> Path:
    """Write <out>/<run_id>.json atomically (a reader never sees half a bundle)."""
    bundle = session.written = build_bundle(session)
    path = session.bundle_path
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(bundle.model_dump_json(indent=1), encoding="utf-8")
    os.replace(tmp, path)
    return path
