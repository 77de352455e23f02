"""Stand-in workloads for the collector's tests: known behaviour, no dependency on collector/kernels/ or models/."""

from __future__ import annotations

import os
import subprocess
import time
import warnings

import torch

from collector.workload import Bench, Case, Unsupported, Workload

FALLBACK_TEXT = (
    "The operator 'aten::_fake_op' is not currently supported on the MPS backend and will fall back "
    "to run on the CPU. This may have performance implications."
)
FP8_TEXT = "Trying to convert Float8_e4m3fn to the MPS backend but it does not have support for that dtype."


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class AddWorkload(Workload):
    name, suite = "fake_add", "kernels"
    metrics = (
        "op_time",
        "first_call_time",
        "achieved_bandwidth",
        "bandwidth_fraction",
        "psnr_vs_cpu",
        "max_abs_error",
        "max_rel_error",
        "memory_driver_peak",
        "memory_reserved_peak",
        "memory_allocated_peak",
        "memory_outside_allocator",
    )

    def cases(self, profile, dtypes=None, compile_modes=("eager",)):
        sizes = (1024, 4096) if profile == "quick" else (1024, 4096, 65536)
        return [
            Case(self.name, {"n": n}, d, c)
            for n in sizes
            for d in dtypes or self.default_dtypes
            for c in compile_modes
            if c == "eager"
        ]

    def run(self, case: Case, bench: Bench) -> None:
        g = torch.Generator().manual_seed(0)
        a = torch.randn(case.params["n"], generator=g).to(bench.device)
        b = torch.randn(case.params["n"], generator=g).to(bench.device)
        bench.time_op(lambda: a + b, bytes_per_call=3 * a.numel() * a.element_size())
        bench.memory(lambda: a + b)
        bench.correctness(a + b, a.double().cpu() + b.double().cpu())


class SleepWorkload(Workload):
    """Each case sleeps in a long region; MPSBENCH_FAKE_SLEEP_S sets how long (kill/Ctrl-C tests)."""

    name, suite = "fake_sleep", "models"
    metrics = ("decode_time",)

    def cases(self, profile, dtypes=None, compile_modes=("eager",)):
        return [Case(self.name, {"i": i}, "float32") for i in range(int(os.environ.get("MPSBENCH_FAKE_CASES", "4")))]

    def run(self, case: Case, bench: Bench) -> None:
        seconds = float(os.environ.get("MPSBENCH_FAKE_SLEEP_S", "0.01"))
        bench.time_region(lambda: time.sleep(seconds), metric="decode_time", repeats=2)


class SpinWorkload(Workload):
    """Two µs-scale spins; MPSBENCH_FAKE_FACTOR makes case 0 that many times slower (a planted regression)."""

    name, suite = "fake_spin", "kernels"
    metrics = ("op_time", "first_call_time")

    def cases(self, profile, dtypes=None, compile_modes=("eager",)):
        return [Case(self.name, {"i": i}, "float32") for i in range(2)]

    def run(self, case: Case, bench: Bench) -> None:
        factor = float(os.environ.get("MPSBENCH_FAKE_FACTOR", "1")) if case.params["i"] == 0 else 1.0
        bench.time_op(lambda: spin(2e-4 * factor))


class FallbackWorkload(Workload):
    name, suite = "fake_fallback", "kernels"
    metrics = ("op_time", "first_call_time")

    def cases(self, profile, dtypes=None, compile_modes=("eager",)):
        return [Case(self.name, {}, "float32")]

    def run(self, case: Case, bench: Bench) -> None:
        def op() -> None:
            warnings.warn(FALLBACK_TEXT, UserWarning, stacklevel=1)
            spin(1e-4)

        bench.time_op(op)


class Fp8Workload(Workload):
    name, suite = "fake_fp8", "kernels"
    metrics = ("op_time", "first_call_time", "psnr_vs_cpu")

    def cases(self, profile, dtypes=None, compile_modes=("eager",)):
        return [Case(self.name, {"how": h}, "float8_e4m3fn") for h in ("typeerror", "unsupported", "crash")]

    def run(self, case: Case, bench: Bench) -> None:
        how = case.params["how"]
        if how == "typeerror":
            raise TypeError(FP8_TEXT)
        if how == "unsupported":
            raise Unsupported("float8_e4m3fn needs torch >= 2.15 on this device")
        bench.record("first_call_time", [0.5])
        raise RuntimeError("something else broke")


class ChildWorkload(Workload):
    """One case that starts a process of its own (as inductor's compile workers are started), appends "worker_pid
    child_pid" to the file MPSBENCH_FAKE_PIDS, sleeps MPSBENCH_FAKE_SLEEP_S in a timed region, and ends its child
    when it finishes: only a case that is killed can leave that child behind (process-lifetime tests)."""

    name, suite = "fake_child", "models"
    metrics = ("decode_time",)

    def cases(self, profile, dtypes=None, compile_modes=("eager",)):
        return [Case(self.name, {}, "float32")]

    def run(self, case: Case, bench: Bench) -> None:
        child = subprocess.Popen(["sleep", "600"])
        try:
            with open(os.environ["MPSBENCH_FAKE_PIDS"], "a", encoding="utf-8") as f:
                f.write(f"{os.getpid()} {child.pid}\n")
            seconds = float(os.environ.get("MPSBENCH_FAKE_SLEEP_S", "0.01"))
            bench.time_region(lambda: time.sleep(seconds), metric="decode_time", repeats=2)
        finally:
            child.kill()
            child.wait()


WORKLOADS = [AddWorkload(), SleepWorkload(), SpinWorkload(), FallbackWorkload(), Fp8Workload(), ChildWorkload()]
