"""A Bench for workload tests: calls fn a few times instead of timing it, and keeps what was asked.

It enforces the real engine's rules (a metric at most once per case, only metrics the workload declares) so
a workload that passes here does not trip the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from collector.workload import Bench, Case, Workload

MEMORY_METRICS = ("memory_driver_peak", "memory_reserved_peak", "memory_allocated_peak", "memory_outside_allocator")


@dataclass
class Comparison:
    output: torch.Tensor
    reference: torch.Tensor
    psnr_metric: str


@dataclass
class Timed:
    bytes_per_call: int | None
    last_output: Any


@dataclass
class FakeBench(Bench):
    workload: Workload
    case: Case
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    calls: int = 2
    chip: str | None = None
    gpu_cores: int | None = None
    claimed: list[str] = field(default_factory=list)
    timed: list[Timed] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    records: dict[str, list[float]] = field(default_factory=dict)
    unavailable_reasons: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    memory_calls: int = 0

    @property
    def device_type(self) -> str:  # type: ignore[override]
        return self.device.type

    def _claim(self, *metrics: str) -> None:
        for metric in metrics:
            if metric not in self.workload.metrics:
                raise AssertionError(f"{self.workload.name} emits {metric!r} but does not declare it")
            if metric in self.claimed:
                raise AssertionError(f"{metric!r} recorded twice for {self.case.label()}")
            self.claimed.append(metric)

    def time_op(self, fn: Callable[[], Any], *, bytes_per_call: int | None = None) -> None:
        out = None
        for _ in range(self.calls):
            out = fn()
        self._claim("op_time", "first_call_time")
        if bytes_per_call is not None:
            self._claim("achieved_bandwidth", "bandwidth_fraction")
        self.timed.append(Timed(bytes_per_call, out))

    def time_region(
        self, fn: Callable[[], Any], *, metric: str = "decode_time", repeats: int | None = None
    ) -> list[float]:
        for _ in range(repeats or self.calls):
            fn()
        self._claim(metric)
        return [1.0] * (repeats or self.calls)

    def memory(self, fn: Callable[[], Any]) -> None:
        fn()
        self.memory_calls += 1
        self._claim(*MEMORY_METRICS)

    def correctness(self, output: torch.Tensor, reference: torch.Tensor, *, psnr_metric: str = "psnr_vs_cpu") -> None:
        self._claim(psnr_metric, "max_abs_error", "max_rel_error")
        self.comparisons.append(Comparison(output.detach().cpu(), reference.detach().cpu(), psnr_metric))

    def record(
        self,
        metric: str,
        samples: list[float],
        unit: str | None = None,
        *,
        warnings: list[str] | None = None,
        passed: bool | None = None,
        tolerance: float | None = None,
    ) -> None:
        self._claim(metric)
        self.records[metric] = list(samples)

    def unavailable(self, metric: str, reason: str) -> None:
        self._claim(metric)
        self.unavailable_reasons[metric] = reason

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def run_case(workload: Workload, case: Case, **kwargs: Any) -> FakeBench:
    bench = FakeBench(workload, case, **kwargs)
    workload.run(case, bench)
    return bench
