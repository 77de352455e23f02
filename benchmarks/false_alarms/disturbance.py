"""What benchmarks/false_alarms/ does to the runs it collects: a competing CPU load during a random part of a run
(`Burners`), and planted builds (`planted_site`): a `sitecustomize` on PYTHONPATH, loaded by every worker process,
that makes softmax a known factor slower, sums bf16/fp16 linears in rounded chunks (a reordered accumulation:
the correctness jitter a build can bring without anything being wrong), or (MPSBENCH_PLANTED_SOFTMAX=log_softmax,
benchmarks/what_ran.py) computes softmax as exp(log_softmax(x)): the same values through other aten ops, a planted
change of path."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

SLOWED = "softmax"
REORDERED = "linear"
CHUNKS = 4  # a reordered linear's K split in this many chunks, each rounded to the dtype before the sum

SITECUSTOMIZE = """\
# mpsbench benchmarks/false_alarms/disturbance.py: a planted build
import os, time
_factor = float(os.environ.get("MPSBENCH_PLANTED_FACTOR", "1"))
_chunks = int(os.environ.get("MPSBENCH_PLANTED_CHUNKS", "1"))
_route = os.environ.get("MPSBENCH_PLANTED_SOFTMAX", "")
try:
    import torch
    import torch.nn.functional as _F
except Exception:  # not every Python this folder reaches has torch
    _F = None
# first: a planted factor then slows the rerouted softmax (a path change that regressed)
if _F is not None and _route == "log_softmax":

    def softmax(input, dim=None, _stacklevel=3, dtype=None):  # exp(log_softmax): aten::_log_softmax + aten::exp
        return _F.log_softmax(input, dim=dim, dtype=dtype).exp()

    _F.softmax = softmax
if _F is not None and _factor > 1:
    _real = _F.softmax

    def softmax(*args, **kwargs):  # each call timed and followed by a spin of (factor - 1) x its own time
        start = time.perf_counter()
        out = _real(*args, **kwargs)  # CPU: synchronous, so the clock covers the op
        end = start + (time.perf_counter() - start) * _factor
        while time.perf_counter() < end:
            pass
        return out

    _F.softmax = softmax
if _F is not None and _chunks > 1:
    _linear = _F.linear

    def linear(x, w, b=None):  # half-precision: K in chunks, each product rounded to the dtype, then summed
        if x.dtype not in (torch.bfloat16, torch.float16) or x.shape[-1] < _chunks:
            return _linear(x, w, b)
        k = x.shape[-1] // _chunks
        edges = [i * k for i in range(_chunks)] + [x.shape[-1]]
        out = sum(_linear(x[..., a:z], w[:, a:z]) for a, z in zip(edges, edges[1:]))
        return out if b is None else out + b

    _F.linear = linear
"""


def planted_site(
    folder: Path, env: dict[str, str], factor: float | None = None, chunks: int | None = None
) -> dict[str, str]:
    """`env` with what a planted run needs (a sitecustomize first on PYTHONPATH, its settings)."""
    site = folder / "site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    out = {**env, "PYTHONPATH": f"{site}{os.pathsep}{env.get('PYTHONPATH', '')}"}
    if factor:
        out["MPSBENCH_PLANTED_FACTOR"] = f"{factor:g}"
    if chunks:
        out["MPSBENCH_PLANTED_CHUNKS"] = str(chunks)
    return out


@dataclass(frozen=True)
class Disturbance:
    """`burners` busy-loop processes from `start_s` into a run, for `duration_s`."""

    burners: int
    start_s: float
    duration_s: float

    @classmethod
    def draw(cls, rng: random.Random, run_s: float, cores: int, index: int) -> "Disturbance":
        """Half the cores or all of them (alternating), starting in the first 70 % of a run of `run_s`, for 20–50 %
        of it."""
        burners = max(1, cores // 2) if index % 2 == 0 else cores
        return cls(burners, rng.uniform(0.0, 0.7) * run_s, rng.uniform(0.2, 0.5) * run_s)

    def words(self) -> str:
        return f"{self.burners} burner(s) from {self.start_s:.0f} s for {self.duration_s:.0f} s"


class Burners:
    """Runs a Disturbance beside whatever the caller does (use as a context manager); every burner it started is
    gone when it exits."""

    def __init__(self, plan: Disturbance | None) -> None:
        self.plan, self.procs, self.stop = plan, [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True) if plan else None

    def _run(self) -> None:
        if self.stop.wait(self.plan.start_s):
            return
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(self.plan.burners)]
        self.stop.wait(self.plan.duration_s)
        self._end()

    def _end(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()

    def __enter__(self) -> "Burners":
        if self.thread:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.thread:
            self.stop.set()
            self.thread.join()
            self._end()
