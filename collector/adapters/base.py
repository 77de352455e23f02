"""The device adapter: the only place that knows how a device synchronises and reports memory.

Timing on every device uses the host clock (perf_counter_ns) read right after synchronize(): on torch <= 2.14
MPS Event timing can hang or report reversed intervals (fixed upstream ~2.15, PR #196395), and one clock for
every device keeps CPU, CUDA and MPS figures comparable.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Callable

import torch

from collector.adapters.profilers import KernelProfiler, TorchProfiler
from collector.adapters.sampler import PeakSampler


@dataclass(frozen=True)
class Figure:
    """One memory figure in bytes, or the reason this device/build cannot give it (never a stand-in 0)."""

    value: int | None
    reason: str | None = None

    @staticmethod
    def missing(reason: str) -> "Figure":
        return Figure(None, reason)


@dataclass
class MemoryReport:
    driver_peak: Figure
    reserved_peak: Figure
    allocated_peak: Figure
    warnings: list[str] = field(default_factory=list)

    @property
    def outside_allocator(self) -> Figure:
        if self.driver_peak.value is None or self.reserved_peak.value is None:
            missing = "driver peak" if self.driver_peak.value is None else "allocator reserved peak"
            return Figure.missing(f"needs both the driver peak and the reserved peak; the {missing} is unavailable")
        return Figure(self.driver_peak.value - self.reserved_peak.value)


class Adapter(ABC):
    """Synchronise, read the clock, and measure memory for one device type."""

    device_type: str
    sample_interval_s = 0.001

    def __init__(self) -> None:
        self.device = torch.device(self.device_type)

    @property
    @abstractmethod
    def name(self) -> str:
        """Human name of the device, e.g. "Apple M3 Ultra (MPS)"."""

    @abstractmethod
    def synchronize(self) -> None:
        """Block until all queued work on the device is done."""

    def now_ns(self) -> int:
        """Host clock after the device has drained: a clock read never races queued work."""
        self.synchronize()
        return time.perf_counter_ns()

    @abstractmethod
    def driver_memory_probe(self) -> tuple[Callable[[], int] | None, str | None, str | None]:
        """(probe returning current driver/process bytes, reason if none, warning about what it measures)."""

    @abstractmethod
    def allocator_peaks(self) -> tuple[Callable[[], None] | None, Callable[[], tuple[int, int]] | None, str | None]:
        """(reset peaks, read (reserved_peak, allocated_peak), reason if the build has no peak API)."""

    def kernel_profiler(self) -> KernelProfiler:
        """The backend's own profiler for the kernel pass (collector.adapters.profilers): torch.profiler here."""
        return TorchProfiler(self.device_type)

    def release_cached(self) -> None:  # noqa: B027 - a default that does nothing, not an abstract method
        """Hand the caching allocator's free blocks back to the driver (devices without one: nothing)."""

    def measure_memory(self, fn: Callable[[], object]) -> MemoryReport:
        """Run fn once with peaks reset and the driver sampler running; the sampler stops before reading."""
        probe, probe_reason, probe_warning = self.driver_memory_probe()
        reset, read, peak_reason = self.allocator_peaks()
        self.synchronize()
        # Cases share one worker process: without this, blocks an earlier case left cached count in this case's
        # reserved and driver peaks (seen on an H200: every case read the same 156 MiB reserved peak).
        self.release_cached()
        if reset is not None:
            reset()
        sampler = PeakSampler(probe, self.sample_interval_s) if probe is not None else None
        with sampler or nullcontext():
            fn()
            self.synchronize()
        driver = Figure(sampler.peak) if sampler else Figure.missing(probe_reason or "no driver probe")
        reserved, allocated = _allocator_figures(read, peak_reason)
        return MemoryReport(driver, reserved, allocated, warnings=[probe_warning] if probe_warning else [])


def _allocator_figures(read: Callable[[], tuple[int, int]] | None, reason: str | None) -> tuple[Figure, Figure]:
    """(reserved peak, live-tensor peak), read after the measured region; each missing with the same reason."""
    if read is None:
        missing = Figure.missing(reason or "no allocator peak API")
        return missing, missing
    reserved, allocated = read()
    return Figure(int(reserved)), Figure(int(allocated))
