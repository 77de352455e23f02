"""collector.workload.Bench for one case on one adapter: measurements in, bundle Results out.

Timing, memory and correctness are separate passes: the memory sampler thread only runs inside memory(), and
nothing but the clock and synchronize() runs inside time_op() / time_region().
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from bundle.metrics import metric as metric_info
from bundle.schema import Result, Status
from bundle.units import conversion_factor
from collector.adapters.base import Adapter, Figure
from collector.fingerprint.chips import peak_bandwidth_gbs
from collector.timing.contention import ShareMeter
from collector.timing.correctness import check_against_reference
from collector.timing.loop import S_PER_NS, TimingPolicy, block_ns, time_op, time_region
from collector.workload import Bench, Case, Workload


def chip_peak_bandwidth(chip: str | None, gpu_cores: int | None) -> float | None:
    """The chip's specified memory bandwidth (GB/s) from collector.fingerprint.chips, or None where unknown."""
    return peak_bandwidth_gbs(chip, gpu_cores)


def _in_unit(values: list[float], unit: str, metric: str) -> list[float]:
    """The one place a measured value becomes the bundle's unit: the metric's canonical unit (bundle.metrics),
    converted by bundle.units; timing/loop.py measures in seconds, a workload's record() states its own unit."""
    factor = conversion_factor(unit, metric_info(metric).unit)
    return [x * factor for x in values]


# Figures a run records from its first worker process only: a torch.compile in a later process of the same run
# hits the inductor cache the first one filled, so its time would be a warm compile mixed with the cold one.
ONCE_PER_RUN = ("compile_time",)


class CaseBench(Bench):
    def __init__(
        self,
        case: Case,
        workload: Workload,
        adapter: Adapter,
        policy: TimingPolicy | None = None,
        *,
        deadline: float | None = None,
        chip: str | None = None,
        gpu_cores: int | None = None,
        full: bool = True,
    ) -> None:
        self.case, self.workload, self.adapter = case, workload, adapter
        self.full = full  # False: memory() and correctness() do nothing (a run's timing-only worker processes)
        self.policy = policy or TimingPolicy()
        self.deadline = deadline
        self.device: torch.device = adapter.device
        self.device_type = adapter.device_type
        self.chip, self.gpu_cores = chip, gpu_cores
        self.results: list[Result] = []
        self.case_warnings: list[str] = []
        self.meter = ShareMeter()  # other processes' share of the cores while the case ran (collector.isolation.runner)

    # --- records -------------------------------------------------------------------------------------------
    def _add(
        self,
        metric: str,
        status: Status,
        *,
        unit: str | None = None,
        samples: list[float] | None = None,
        message: str | None = None,
        warnings: list[str] | None = None,
        passed: bool | None = None,
        tolerance: float | None = None,
        rounding: float | None = None,
    ) -> None:
        if any(r.metric == metric for r in self.results):
            raise ValueError(f"metric {metric!r} recorded twice for case {self.case.label()}")
        self.results.append(
            Result(
                workload=self.case.workload,
                suite=self.workload.suite,
                params=dict(self.case.params),
                dtype=self.case.dtype,
                compile=self.case.compile,
                metric=metric,
                unit=unit or metric_info(metric).unit,
                status=status,
                message=message,
                warnings=list(warnings or []),
                samples=[float(x) for x in samples or []],
                passed=passed,
                tolerance=tolerance,
                rounding=rounding,
            )
        )

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
        values = _in_unit(samples, unit, metric) if unit else list(samples)
        self._add(metric, Status.ok, samples=values, warnings=warnings, passed=passed, tolerance=tolerance)

    def unavailable(self, metric: str, reason: str) -> None:
        self._add(metric, Status.unavailable, message=reason)

    def warn(self, message: str) -> None:
        if message not in self.case_warnings:
            self.case_warnings.append(message)

    # --- timing pass ---------------------------------------------------------------------------------------
    def time_op(self, fn: Callable[[], Any], *, bytes_per_call: int | None = None) -> None:
        t = time_op(self.adapter, fn, self.policy, self.deadline)
        self._add(
            "op_time", Status.ok, samples=_in_unit(t.samples, "s", "op_time"), message=t.describe(), warnings=t.warnings
        )
        self._add(
            "first_call_time",
            Status.ok,
            samples=[t.first_call_s or 0.0],
            message="first call after input construction, synchronised (includes lazy init)",
        )
        if bytes_per_call is not None:
            self._bandwidth(bytes_per_call, t.samples, t.warnings)

    def _bandwidth(self, bytes_per_call: int, per_call_s: list[float], warnings: list[str]) -> None:
        achieved = _in_unit([bytes_per_call / s for s in per_call_s], "B/s", "achieved_bandwidth")
        note = f"{bytes_per_call} B read+written per call / time per call"
        self._add("achieved_bandwidth", Status.ok, samples=achieved, message=note, warnings=warnings)
        peak = chip_peak_bandwidth(self.chip, self.gpu_cores)
        if peak is None:
            cores = f" with {self.gpu_cores} GPU cores" if self.gpu_cores is not None else ""
            which = f"chip {self.chip!r}{cores}" if self.chip else "an unknown chip"
            self.unavailable("bandwidth_fraction", f"no specified peak memory bandwidth is known for {which}")
            return
        self._add(
            "bandwidth_fraction",
            Status.ok,
            samples=[a / peak * 100 for a in achieved],
            message=f"achieved bandwidth / the chip's specified peak of {peak:g} GB/s",
            warnings=warnings,
        )

    def time_region(
        self, fn: Callable[[], Any], *, metric: str = "decode_time", repeats: int | None = None
    ) -> list[float]:
        t = time_region(self.adapter, fn, self.policy, repeats, self.deadline, what=metric)
        self._add(
            metric,
            Status.ok,
            samples=_in_unit(t.samples, "s", metric),
            warnings=t.warnings,
            message=f"{len(t.samples)} synchronised calls after one warm-up call of {t.first_call_s:.4g} s",
        )
        return list(t.samples)

    def time_once(self, fn: Callable[[], Any], *, metric: str = "first_call_time", note: str | None = None) -> float:
        seconds = block_ns(self.adapter, fn, 1) * S_PER_NS
        if metric in ONCE_PER_RUN and not self.full:
            return seconds  # run (the case needs it), not recorded: see ONCE_PER_RUN
        what = "one call timed on its own, synchronised before both clock reads"
        self._add(
            metric, Status.ok, samples=_in_unit([seconds], "s", metric), message=f"{note}; {what}" if note else what
        )
        return seconds

    # --- memory pass ---------------------------------------------------------------------------------------
    def memory(self, fn: Callable[[], Any]) -> None:
        if not self.full:
            return
        report = self.adapter.measure_memory(fn)
        figures = {
            "memory_driver_peak": report.driver_peak,
            "memory_reserved_peak": report.reserved_peak,
            "memory_allocated_peak": report.allocated_peak,
            "memory_outside_allocator": report.outside_allocator,
        }
        for name, figure in figures.items():
            self._figure(
                name, figure, report.warnings if name in ("memory_driver_peak", "memory_outside_allocator") else []
            )

    def _figure(self, name: str, figure: Figure, warnings: list[str]) -> None:
        if figure.value is None:
            self.unavailable(name, figure.reason or "not measurable on this device/build")
        else:
            self._add(name, Status.ok, samples=[float(figure.value)], warnings=warnings)

    # --- correctness pass ----------------------------------------------------------------------------------
    def correctness(self, output: torch.Tensor, reference: torch.Tensor, *, psnr_metric: str = "psnr_vs_cpu") -> None:
        if not self.full:
            return
        c = check_against_reference(output, reference, self.case.dtype)
        levels = c.rounding or (None, None, None)
        figures = {
            psnr_metric: (c.psnr_db, None, levels[0]),
            "max_abs_error": (c.max_abs_error, c.tolerance.atol, levels[1]),
            "max_rel_error": (c.max_rel_error, c.tolerance.rtol, levels[2]),
        }
        for name, (value, tol, level) in figures.items():
            if value is None:
                self._add(name, Status.error, message=c.error, passed=False)
            else:
                self._add(
                    name,
                    Status.ok,
                    samples=[value],
                    message=f"{self.case.dtype} tolerance: {c.rule}",
                    warnings=c.warnings if name == psnr_metric else [],
                    passed=c.passed,
                    tolerance=tol,
                    rounding=level,
                )
