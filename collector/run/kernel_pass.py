"""The kernel pass (`run --kernels`): each case's call under the backend's own profiler, in a worker of its own.

After the run's timing processes, every case that was timed gets a fresh case worker (collector.isolation.isolator, with the
backend's profiler in its spec: collector.adapters.profilers) that runs the case's call a fixed number of times
under the profiler (collector.isolation.profiled) and exits; its output goes to a log file, which MPS's profiler prints its
statistics into as the worker exits. So no timed figure ever runs under a profiler, a crash or a hang in the pass is
the case's breakdown `error` (the run goes on), and MPSProfiler's process-wide tables hold one case only.

Here the answer becomes the bundle's breakdown (bundle.kernels.CaseKernels, as JSON): per entry the calls per op
call, the device time per op call (µs) and its share. A process-wide profiler (MPS) counts the case's setup too:
an entry that ran fewer times than the op was called (the input's copy to the device, a fill before the calls) is
the setup, left out with a warning naming it.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from bundle.contention import contended
from bundle.kernels import CaseKernels, KernelEntry, device_time_us, share_of
from bundle.metrics import TIMINGS
from bundle.metrics import metric as metric_info
from bundle.schema import Status
from collector.adapters.profilers import KernelProfiler, Profiled, Raw
from collector.isolation.isolator import Isolator, WorkerSpec
from collector.isolation.processes import RunState
from collector.run.plan import PlannedCase
from collector.timing.contention import cores

LOG_TAIL = 600  # characters of the worker's output quoted in an error
RETAKES = 2  # times a case profiled while other processes took the cores is profiled again, at most


def pending(cases: list[PlannedCase], state: RunState, processes: int) -> list[PlannedCase]:
    """The cases the pass still has to profile: finished, not crashed, timed (a case with no timing figure,
    unsupported on this device, has no call to break down), and without a breakdown yet."""
    todo = []
    for c in cases:
        if c.id in state.kernels or c.id in state.crashed or not state.finished(c.id, processes):
            continue
        timed = (r for results in state.parts.get(c.id, {}).values() for r in results if r["metric"] in TIMINGS)
        if any(r["status"] in (Status.ok.value, Status.fallback.value) for r in timed):
            todo.append(c)
    return todo


def first_latency(metrics: tuple[str, ...]) -> str:
    """The time per call a case's breakdown explains when the pass could not say (op_time where it has one)."""
    latencies = [m for m in metrics if metric_info(m).quantity == "latency"]
    return "op_time" if "op_time" in latencies or not latencies else latencies[0]


def entries(raw: list[Raw], op_calls: int, process_wide: bool) -> tuple[list[KernelEntry], list[str]]:
    """Raw entries over op_calls calls as per-call entries, largest device time first; warnings. An entry seen call
    by call (torch.profiler) has the median of its per-call times (a call stalled by another process moves it no
    more than it moves the timing's median); one seen only in all (MPSProfiler) its total over op_calls."""
    merged: dict[tuple[str, str], list] = {}
    for r in raw:  # one entry per (kind, name): a profiler may list a name twice (MPS: two pipelines, one name)
        found = merged.setdefault((r.kind, r.name), [0, 0.0, None, None])
        found[0] += r.count
        found[1] += r.total_us
        if r.bytes is not None:
            found[2] = (found[2] or 0) + r.bytes
        if r.per_call_us is not None:
            found[3] = [a + b for a, b in zip(found[3] or [0.0] * len(r.per_call_us), r.per_call_us)]
    setup = {key: v for key, v in merged.items() if process_wide and v[0] < op_calls}
    per_call = [
        KernelEntry(
            name=name,
            kind=kind,
            calls_per_call=count / op_calls,
            device_time_us=statistics.median(calls) if calls else total / op_calls,
            share=0.0,
            bytes_per_call=None if size is None else size / op_calls,
        )
        for (kind, name), (count, total, size, calls) in merged.items()
        if (kind, name) not in setup
    ]
    total = device_time_us(per_call)
    shared = [e.model_copy(update={"share": share_of(e.device_time_us, total)}) for e in per_call]
    shared.sort(key=lambda e: (-e.device_time_us, e.kind.value, e.name))
    warnings = []
    if setup:
        named = ", ".join(f"{kind} {name} ×{count:g}" for (kind, name), (count, *_) in list(setup.items())[:8])
        warnings.append(
            f"left out as the case's setup (ran fewer times than the {op_calls} op calls the profiler counted): {named}"
        )
    return shared, warnings


def breakdown(
    planned: PlannedCase, profiler: KernelProfiler, answer: dict[str, Any] | None, log: str, failure: str | None
) -> dict[str, Any]:
    """The case's CaseKernels (validated, as JSON) from the worker's answer, its output and how it ended."""
    case = planned.case
    base = {
        "workload": case.workload,
        "params": dict(case.params),
        "dtype": case.dtype,
        "compile": case.compile,
        "profiler": profiler.name,
    }
    metric = (answer or {}).get("metric") or first_latency(planned.workload.metrics)
    if failure is not None or answer is None:
        return _failed(base, metric, Status.error, failure or "the kernel pass's worker gave no answer", log)
    if answer["status"] != Status.ok.value:
        return _failed(base, metric, Status(answer["status"]), answer["message"], "")
    found: Profiled | str = (
        profiler.from_log(log) if answer["raw"] is None else Profiled([Raw(**r) for r in answer["raw"]])
    )
    if isinstance(found, str):
        return _failed(base, metric, Status.error, found, log)
    listed, notes = entries(found.raw, answer["op_calls"], profiler.process_wide)
    share = answer.get("contention")
    if contended(share):
        notes.append(
            f"profiled while other processes took {share * 100:.0f} % of the machine's {cores()} cores: its times "
            "are not evidence (rerun on an idle machine)"
        )
    if not listed:
        why = "the profiler listed nothing that ran at least once per op call"
        return _failed(base, metric, Status.unavailable, why, "")
    kernels = CaseKernels(
        **base,
        metric=metric,
        status=Status.ok,
        op_calls=answer["op_calls"],
        entries=listed,
        warnings=[*answer.get("warnings", []), *found.warnings, *notes],
    )
    return kernels.model_dump(mode="json", exclude={"case_key"})


def _failed(base: dict[str, Any], metric: str, status: Status, message: str, log: str) -> dict[str, Any]:
    tail = log.strip()[-LOG_TAIL:]
    text = f"{message}; the worker's last output: {tail}" if tail else message
    kernels = CaseKernels(**base, metric=metric, status=status, message=text[:20_000])
    return kernels.model_dump(mode="json", exclude={"case_key"})


def profile_cases(
    cases: list[PlannedCase],
    spec: WorkerSpec,
    profiler: KernelProfiler,
    each: Callable[[PlannedCase, dict[str, Any]], None],
    before: Callable[[PlannedCase], None] = lambda planned: None,
    retake: Callable[[], bool] = lambda: False,
) -> None:
    """Each case in a worker of its own (a process-wide profiler's tables hold one case); `each` gets its breakdown
    as soon as it has one. A case profiled while other processes took the cores is profiled again (up to RETAKES
    times, while `retake()` allows: the run's idle wait), and the calmest profile is kept."""
    for planned in cases:
        kept: tuple[dict[str, Any] | None, str, str | None] | None = None
        for _ in range(1 + RETAKES):
            before(planned)
            found = _profiled(planned, spec, profiler)
            if kept is None or _calmer(found[0], kept[0]):
                kept = found
            if found[2] is not None or not contended((found[0] or {}).get("contention")) or not retake():
                break
        each(planned, breakdown(planned, profiler, *kept))


def _calmer(answer: dict[str, Any] | None, than: dict[str, Any] | None) -> bool:
    """Whether a profile ran under less contention than another (an unmeasured share counts as calm)."""
    share, other = (answer or {}).get("contention") or 0.0, (than or {}).get("contention") or 0.0
    return answer is not None and share < other


def _profiled(
    planned: PlannedCase, spec: WorkerSpec, profiler: KernelProfiler
) -> tuple[dict[str, Any] | None, str, str | None]:
    """(the worker's answer, its output, the crash or timeout in words) for one case in a fresh worker."""
    fd, log_path = tempfile.mkstemp(prefix="mpsbench-kernels-", suffix=".log")
    os.close(fd)
    try:
        answer, failure = _run_one(planned, replace(spec, profiler=profiler, log_path=log_path))
        return answer, Path(log_path).read_text(encoding="utf-8", errors="replace"), failure
    finally:
        Path(log_path).unlink(missing_ok=True)


def _run_one(planned: PlannedCase, spec: WorkerSpec) -> tuple[dict[str, Any] | None, str | None]:
    """The worker's answer, or (None, the crash or timeout in words); the worker has exited either way."""
    with Isolator(spec, spec.context()) as isolator:
        outcome = isolator.run(planned.workload, planned.case)
    if outcome.failure is not None or not isinstance(outcome.records, dict):
        messages = [r.get("message") for r in outcome.records if isinstance(r, dict)] if outcome.records else []
        return None, next((m for m in messages if m), "the kernel pass's worker failed")
    return outcome.records, None
