"""Stand-in workloads and a stand-in profiler for the kernel pass's tests (MPSBENCH_CATALOG=tests.kernel_workloads).

- `fake_ops`: case "ops" calls aten::exp once and aten::sum twice per op call (torch.profiler's counts are exact);
  case "unsupported" raises Unsupported (no timing, so no breakdown); case "untimed" records a figure but times no
  call (the pass has nothing to break down).
- `fake_regions`: two timed regions, as decode times its prefill and then its decode: the decode is profiled.
- `fake_logged`: one op call of nothing; in a worker started with MPSBENCH_FAKE_LOG=<file> it prints that file to
  stderr when the process exits, as MPSProfiler prints its statistics (FixtureLogProfiler sets the variable);
  with MPSBENCH_FAKE_PASS=segv it kills itself in the pass's worker (a crash inside the pass).
"""

from __future__ import annotations

import atexit
import os
import signal
import sys

import torch

from collector.adapters.profilers import MpsStatsProfiler
from collector.workload import Bench, Case, Unsupported, Workload


class OpsWorkload(Workload):
    name, suite = "fake_ops", "kernels"
    metrics = ("op_time", "first_call_time")

    def cases(self, profile, dtypes=None, compile_modes=("eager",)):
        return [Case(self.name, {"how": how}, "float32") for how in ("ops", "unsupported", "untimed")]

    def run(self, case: Case, bench: Bench) -> None:
        how = case.params["how"]
        if how == "unsupported":
            raise Unsupported("not on this device")
        if how == "untimed":
            bench.record("first_call_time", [0.5])
            return
        x = torch.randn(4096, generator=torch.Generator().manual_seed(0)).to(bench.device)

        def call():
            y = torch.exp(x)
            return torch.sum(y) + torch.sum(x)

        bench.time_op(call)


def _print_at_exit(path: str) -> None:
    text = open(path, encoding="utf-8").read()
    sys.stderr.write(text)
    sys.stderr.flush()


class LoggedWorkload(Workload):
    name, suite = "fake_logged", "kernels"
    metrics = ("op_time", "first_call_time")

    def cases(self, profile, dtypes=None, compile_modes=("eager",)):
        return [Case(self.name, {}, "float32")]

    def run(self, case: Case, bench: Bench) -> None:
        fixture = os.environ.get("MPSBENCH_FAKE_LOG")
        if fixture:  # only the kernel pass's worker starts with it
            if os.environ.get("MPSBENCH_FAKE_PASS") == "segv":
                os.kill(os.getpid(), signal.SIGSEGV)
            atexit.register(_print_at_exit, fixture)
        bench.time_op(lambda: None)


class RegionsWorkload(Workload):
    """As decode times its regions: a prefill (aten::sum) first, then the decode (aten::exp twice per call)."""

    name, suite = "fake_regions", "models"
    metrics = ("time_to_first_token", "decode_time")

    def cases(self, profile, dtypes=None, compile_modes=("eager",)):
        return [Case(self.name, {}, "float32")]

    def run(self, case: Case, bench: Bench) -> None:
        x = torch.randn(4096, generator=torch.Generator().manual_seed(0)).to(bench.device)
        bench.time_region(lambda: torch.sum(x), metric="time_to_first_token")
        bench.time_region(lambda: torch.exp(torch.exp(x)), metric="decode_time")


class FixtureLogProfiler(MpsStatsProfiler):
    """MPSProfiler's reading of a worker's output, on a CPU worker that prints a fixture instead."""

    name = "fixture MPSProfiler"

    def __init__(self, fixture: str, crash: bool = False) -> None:
        self.fixture, self.crash = fixture, crash

    def environment(self) -> dict[str, str]:
        return {"MPSBENCH_FAKE_LOG": self.fixture, **({"MPSBENCH_FAKE_PASS": "segv"} if self.crash else {})}


WORKLOADS = [OpsWorkload(), LoggedWorkload(), RegionsWorkload()]
