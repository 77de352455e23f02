"""Stand-in workloads that kill or hang their process (isolation tests: MPSBENCH_CATALOG=tests.crash_workloads).

`fake_crash` has cases ok, segv, exit, hang, ok2 in that order. With MPSBENCH_CRASH=0 every case behaves.
Each case appends its name to MPSBENCH_CRASH_LOG (when set) before acting, so a test counts what ran.
"""

from __future__ import annotations

import os
import signal
import time

from collector.workload import Bench, Case, Workload

HOWS = ("ok", "segv", "exit", "hang", "ok2")


class CrashWorkload(Workload):
    name, suite = "fake_crash", "kernels"
    metrics = ("decode_time",)

    def cases(self, profile, dtypes=None, compile_modes=("eager",)):
        return [Case(self.name, {"how": how}, "float32") for how in HOWS]

    def run(self, case: Case, bench: Bench) -> None:
        how = case.params["how"]
        log = os.environ.get("MPSBENCH_CRASH_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as f:
                f.write(f"{how} {os.getpid()}\n")
        if os.environ.get("MPSBENCH_CRASH", "1") == "1":
            if how == "segv":
                os.kill(os.getpid(), signal.SIGSEGV)
            elif how == "exit":
                os._exit(3)
            elif how == "hang":
                time.sleep(float(os.environ.get("MPSBENCH_HANG_S", "120")))
        bench.time_region(lambda: None, metric="decode_time", repeats=2)


class TrivialWorkload(Workload):
    """One near-empty case per index."""

    name, suite = "fake_trivial", "kernels"
    metrics = ("decode_time",)

    def cases(self, profile, dtypes=None, compile_modes=("eager",)):
        return [Case(self.name, {"i": i}, "float32") for i in range(int(os.environ.get("MPSBENCH_TRIVIAL_CASES", "8")))]

    def run(self, case: Case, bench: Bench) -> None:
        bench.time_region(lambda: None, metric="decode_time", repeats=1)


class UnpicklableWorkload(TrivialWorkload):
    """Holds a lambda, so it cannot be sent to the case worker."""

    name = "fake_unpicklable"

    def __init__(self) -> None:
        self.make = lambda: None


WORKLOADS = [CrashWorkload(), TrivialWorkload(), UnpicklableWorkload()]
