"""The contract between workloads (collector/kernels/, collector/models/) and the collector's engine.

A workload declares cases (frozen identities) and, for one case, builds seeded inputs and asks the bench for
measurements. The bench (collector.timing.bench.Bench) owns the honest parts: synchronising, warm-up, adaptive
repetition, separate timing / memory / correctness passes, and turning what it measured into bundle Results.
A workload never times anything itself and never writes a Result by hand except through bench.record().
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping

from bundle.schema import ParamValue, case_key

if TYPE_CHECKING:  # torch stays out of import time for the server side
    import torch

PROFILES = ("quick", "full")


@dataclass(frozen=True)
class Case:
    """Identity of one measured case. Equal cases from two runs are comparable."""

    workload: str
    params: Mapping[str, ParamValue]
    dtype: str  # torch dtype name without "torch.": "float32", "bfloat16", "float8_e4m3fn", …
    compile: str = "eager"  # "eager" | "inductor"

    @property
    def key(self) -> str:
        return case_key(dict(self.params))

    def label(self) -> str:
        inner = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.workload}[{inner}] {self.dtype} {self.compile}"


class Unsupported(Exception):
    """Raised by a workload when the device/build/dtype cannot run a case (recorded as status 'unsupported')."""


class Bench(ABC):
    """What a workload may ask for while running one case. Implemented by collector.timing.bench."""

    device: "torch.device"
    device_type: str  # "mps" | "cuda" | "cpu"
    chip: str | None  # e.g. "Apple M3 Ultra"; for bandwidth tables
    gpu_cores: int | None

    @abstractmethod
    def time_op(self, fn: Callable[[], Any], *, bytes_per_call: int | None = None) -> None:
        """Timing pass of a µs-scale op: warm-up (first_call_time, s), then k calls per sync, adaptive repeats.
        Records op_time (µs); with bytes_per_call also achieved_bandwidth (GB/s) and, where the chip's
        bandwidth is known, bandwidth_fraction (%)."""

    @abstractmethod
    def time_region(
        self, fn: Callable[[], Any], *, metric: str = "decode_time", repeats: int | None = None
    ) -> list[float]:
        """Timing pass of a long region (one call per sample, sync around each). Records `metric` in its unit
        (time metrics) and returns the raw samples in seconds, for workloads that derive rates from them."""

    def time_once(self, fn: Callable[[], Any], *, metric: str = "first_call_time", note: str | None = None) -> float:
        """One synchronised call of fn, timed on its own (a torch.compile or first-call warm-up that happens
        once per case). Records `metric` in its unit (with `note` saying what the call covered) and returns
        the seconds. Not abstract, so existing benches stay valid; one that cannot time a call says so."""
        raise NotImplementedError(f"{type(self).__name__} cannot time a single call ({metric})")

    @abstractmethod
    def memory(self, fn: Callable[[], Any]) -> None:
        """Memory pass: run fn once with peaks reset and the driver sampler on. Records memory_driver_peak,
        memory_reserved_peak, memory_allocated_peak, memory_outside_allocator (B), unavailable ones so marked."""

    @abstractmethod
    def correctness(
        self, output: "torch.Tensor", reference: "torch.Tensor", *, psnr_metric: str = "psnr_vs_cpu"
    ) -> None:
        """Correctness pass: compare a device output with its CPU reference (float64 where possible). Records
        psnr (dB), max_abs_error, max_rel_error, with passed/tolerance from the case dtype."""

    @abstractmethod
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
        """Record a figure the workload derived itself (tokens/s, TTFT ms, storage bytes, pad calls)."""

    @abstractmethod
    def unavailable(self, metric: str, reason: str) -> None:
        """Record that this device/build cannot give `metric` for this case, and why."""

    @abstractmethod
    def warn(self, message: str) -> None:
        """Attach a quality warning to every record of this case."""


class Workload(ABC):
    """One op family (collector/kernels/) or model workload (collector/models/)."""

    name: ClassVar[str]
    suite: ClassVar[str]  # "kernels" | "models"
    metrics: ClassVar[tuple[str, ...]]  # every metric a case may emit (unsupported cases mark each)
    description: ClassVar[str] = ""
    default_dtypes: ClassVar[tuple[str, ...]] = ("float32",)

    @abstractmethod
    def cases(
        self, profile: str, dtypes: tuple[str, ...] | None = None, compile_modes: tuple[str, ...] = ("eager",)
    ) -> list[Case]:
        """The cases of a profile ("quick" | "full"); dtypes None means default_dtypes."""

    @abstractmethod
    def run(self, case: Case, bench: Bench) -> None:
        """Build seeded inputs on bench.device and ask bench for the passes. Raise Unsupported when the
        device/build cannot run the case; any other exception is recorded as status 'error'."""
