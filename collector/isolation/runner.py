"""Run one case of a workload and give back its Results, each with the case's status.

- Python warnings of the case are captured (deduplicated, collector.isolation.capture); torch's warn-always is on so
  TORCH_WARN_ONCE warnings reach every case, not only the first of the process;
- a CPU-fallback warning during the case -> every measured record of the case is `fallback`, naming the ops;
- Unsupported / a not-implemented or unsupported-dtype error -> `unsupported` for each declared metric not
  yet measured; any other exception -> `error` likewise; records already measured are kept;
- the per-case time limit is soft here: passes stop repeating at the deadline; an overrun is a warning;
- the share of the cores other processes took while the case ran is each measured record's `contention`
  (collector.timing.contention; a run's processes are merged and worded in collector.isolation.processes).
  collector.isolation.isolator runs this in a worker process and makes the limit hard (and survives a crash).
"""

from __future__ import annotations

import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import torch

from bundle.schema import Result, Status
from collector.adapters.base import Adapter
from collector.isolation.capture import CaseWarnings
from collector.isolation.failures import describe, fallback_ops, is_unsupported, other_warnings
from collector.timing.bench import CaseBench
from collector.timing.loop import TimingPolicy
from collector.workload import Case, Workload


@dataclass
class RunContext:
    adapter: Adapter
    policy: TimingPolicy
    case_time_limit_s: float | None = None
    chip: str | None = None
    gpu_cores: int | None = None
    full: bool = True  # False: timing passes only (the other worker processes of a run; collector.isolation.processes)


@contextmanager
def _warn_always() -> Iterator[None]:
    """TORCH_WARN_ONCE (the MPS fallback warning is one) would fire only in the first case; make it repeat."""
    before = torch.is_warn_always_enabled()
    torch.set_warn_always(True)
    try:
        yield
    finally:
        torch.set_warn_always(before)


def run_case(workload: Workload, case: Case, ctx: RunContext) -> list[Result]:
    start = time.perf_counter()
    deadline = start + ctx.case_time_limit_s if ctx.case_time_limit_s else None
    bench = CaseBench(
        case,
        workload,
        ctx.adapter,
        ctx.policy,
        deadline=deadline,
        chip=ctx.chip,
        gpu_cores=ctx.gpu_cores,
        full=ctx.full,
    )
    failure: tuple[Status, str] | None = None
    with CaseWarnings() as caught, _warn_always():
        try:
            with bench.meter.measuring():
                workload.run(case, bench)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a status; the suite goes on
            failure = (Status.unsupported if is_unsupported(exc) else Status.error, describe(exc))
    elapsed = time.perf_counter() - start
    return finalize(bench, caught.messages, failure, elapsed, ctx.case_time_limit_s, bench.meter.share())


def records(results: list[Result]) -> list[dict[str, Any]]:
    """One process's Results as the JSON records that travel from the worker, are journaled and merged
    (collector.isolation.processes); no summary (bundle.schema: never written), derived once from the merged samples."""
    return [r.model_dump(mode="json") for r in results]


def finalize(
    bench: CaseBench,
    caught: list[warnings.WarningMessage],
    failure: tuple[Status, str] | None,
    elapsed_s: float,
    limit_s: float | None,
    share: float | None = None,
) -> list[Result]:
    if failure is None and not bench.results:
        failure = (Status.error, "the workload ran but recorded no figure")
    if failure is not None:
        _fill_missing(bench, *failure)
    case_warnings = list(bench.case_warnings) + other_warnings(caught)
    if limit_s and elapsed_s > limit_s:
        case_warnings.append(f"case took {elapsed_s:.1f} s, over its {limit_s:g} s time limit")
    ops = fallback_ops(caught)
    if ops:
        case_warnings.insert(0, f"CPU fallback of {', '.join(ops)}: figures are not the device's alone")
    return [_with_case_status(r, case_warnings, ops, share) for r in bench.results]


def _fill_missing(bench: CaseBench, status: Status, message: str) -> None:
    recorded = {r.metric for r in bench.results}
    for metric in bench.workload.metrics:
        if metric not in recorded:
            try:
                bench._add(metric, status, message=message)
            except ValueError as exc:  # a metric the registry does not know: a workload bug, not a crash
                bench.warn(f"declared metric {metric!r} not recorded: {exc}")


def _with_case_status(result: Result, case_warnings: list[str], ops: list[str], share: float | None) -> Result:
    """The record with the case's warnings, share and status: a copy, not validated again (each field stays
    valid on its own; the Result is checked once, after its processes are merged: collector.isolation.processes)."""
    update: dict[str, object] = {"warnings": result.warnings + [w for w in case_warnings if w not in result.warnings]}
    if result.samples and share is not None:  # one process measured it: one share
        update["contention"] = [share]
    if ops and result.status == Status.ok:
        note = f"ops fell back to the CPU: {', '.join(ops)}"
        update["status"] = Status.fallback
        update["message"] = f"{note}; {result.message}" if result.message else note
    return result.model_copy(update=update)
