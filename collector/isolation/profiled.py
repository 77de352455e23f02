"""The kernel pass's worker side: one case's call run a fixed number of times under the backend's profiler.

The workload runs as in a timing pass (same inputs, same call), with a bench whose time_op, or time_region of the
region PROFILED_REGION, profiles the call instead of timing it: WARMUP calls, then CALLS profiled calls and a
synchronize; the workload then stops (nothing after it is needed). Another region (decode's prefill, timed before
its decode) runs once, so the workload goes on to the one profiled. Memory and correctness passes do nothing here. A case that times
no call has nothing to break down ("unavailable"). The answer is a plain dict (it crosses a pipe):
collector.run.kernel_pass turns it into the bundle's breakdown.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Callable

from bundle.schema import Status
from collector.adapters.profilers import KernelProfiler
from collector.isolation.capture import CaseWarnings
from collector.isolation.failures import describe, is_unsupported
from collector.isolation.runner import RunContext
from collector.timing.bench import CaseBench
from collector.workload import Case, Workload

OP_WARMUP, OP_CALLS = 3, 20  # an op (time_op): µs to ms per call
REGION_WARMUP, REGION_CALLS = 1, 2  # a region (time_region: a decode, a VAE decode): up to seconds per call
PROFILED_REGION = "decode_time"  # the region a models workload's breakdown explains


class _Profiled(BaseException):
    """Ends the workload once its call is profiled (BaseException: a workload's `except Exception` lets it by)."""

    def __init__(self, answer: dict[str, Any]) -> None:
        super().__init__("profiled")
        self.answer = answer


class ProfiledBench(CaseBench):
    def __init__(self, case: Case, workload: Workload, ctx: RunContext, profiler: KernelProfiler) -> None:
        super().__init__(case, workload, ctx.adapter, ctx.policy, chip=ctx.chip, gpu_cores=ctx.gpu_cores, full=False)
        self.profiler = profiler

    def time_op(self, fn: Callable[[], Any], *, bytes_per_call: int | None = None) -> None:
        self._profile(fn, "op_time", OP_WARMUP, OP_CALLS)

    def time_region(
        self, fn: Callable[[], Any], *, metric: str = "decode_time", repeats: int | None = None
    ) -> list[float]:
        if metric == PROFILED_REGION:
            self._profile(fn, metric, REGION_WARMUP, REGION_CALLS)
        return [self.time_once(fn, metric=metric)]  # another region: once, so the workload reaches the profiled one

    def _profile(self, fn: Callable[[], Any], metric: str, warmup: int, calls: int) -> None:
        for _ in range(warmup):
            fn()
        self.adapter.synchronize()
        with self.meter.measuring():  # other processes' share of the cores while the calls were profiled
            found = self.profiler.profile(fn, calls, self.adapter.synchronize)
        answer: dict[str, Any] = {"status": Status.ok.value, "metric": metric, "contention": self.meter.share()}
        if found is None:  # read from the process's output at its exit: every call of the process counts
            answer.update(op_calls=warmup + calls, raw=None, warnings=[])
        else:
            answer.update(op_calls=calls, raw=[asdict(r) for r in found.raw], warnings=list(found.warnings))
        raise _Profiled(answer)


def profile_case(workload: Workload, case: Case, ctx: RunContext, profiler: KernelProfiler) -> dict[str, Any]:
    """The case's call profiled: {"status": "ok", "metric", "op_calls", "raw" (None: from the log), "warnings",
    "contention" (other processes' share of the cores meanwhile)}, or {"status": "unsupported" | "error" |
    "unavailable", "message"}."""
    bench = ProfiledBench(case, workload, ctx, profiler)
    with CaseWarnings():
        try:
            workload.run(case, bench)
        except _Profiled as done:
            return done.answer
        except Exception as exc:  # noqa: BLE001 - every failure becomes the breakdown's status
            status = Status.unsupported if is_unsupported(exc) else Status.error
            return {"status": status.value, "message": describe(exc)}
    return {
        "status": Status.unavailable.value,
        "message": "the case times no op call or region (time_op / time_region): nothing to break down",
    }
