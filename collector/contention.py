"""CPU contention during a case: the share of the machine's CPU time that OTHER processes took while it ran.

Why it matters: torch runs an op's work on one thread per core and joins them; when another process holds a core,
the op waits for its descheduled worker for a scheduler time slice (milliseconds). So a busy machine inflates
µs-scale timings by whole orders of magnitude, not by a few percent. Measured on a 2-core Linux box:
softmax 5×51866 fp32 median 117 µs idle; 562 µs (IQR 198 % of the median) beside three busy-loop processes.
The timing pass also flags such samples as noisy; this names the cause, as a warning on the result.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

import psutil

THRESHOLD = 0.25  # other processes' share of all cores above which a case's timings are suspect
_NOT_BUSY = {"idle", "iowait", "guest", "guest_nice"}  # guest time is already counted in user on Linux


@dataclass(frozen=True)
class CpuSnapshot:
    wall_s: float
    machine_busy_s: float  # all processes, summed over cores
    own_s: float  # this process (all its threads)


def snapshot() -> CpuSnapshot:
    machine = psutil.cpu_times()._asdict()
    own = psutil.Process().cpu_times()
    return CpuSnapshot(time.monotonic(), sum(v for k, v in machine.items() if k not in _NOT_BUSY),
                       own.user + own.system)


def other_share(before: CpuSnapshot, after: CpuSnapshot, cores: int) -> float | None:
    """Other processes' CPU time / (wall time × cores); None when the interval is too short to say."""
    wall = after.wall_s - before.wall_s
    if wall <= 0.05 or cores < 1:
        return None
    others = (after.machine_busy_s - before.machine_busy_s) - (after.own_s - before.own_s)
    return min(1.0, max(0.0, others / (wall * cores)))


def contention_warning(share: float | None, cores: int) -> str | None:
    if share is None or share < THRESHOLD:
        return None
    return (f"CPU contention: other processes used {share * 100:.0f} % of the machine's {cores} cores during this "
            "case; timings may be inflated (torch's worker threads wait when descheduled), rerun on an idle machine")


def cores() -> int:
    return os.cpu_count() or 1
