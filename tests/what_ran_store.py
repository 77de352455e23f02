"""A store with a planted change of path, for what ran on the review's pages: two builds on one CPU machine
(baseline torch 2.14.1, candidate 2.15.0), two runs a side of five worker processes each. softmax is 1.5× slower
on the candidate and its breakdown took another path — aten::softmax → aten::_softmax on the baseline,
aten::log_softmax → aten::_log_softmax then aten::exp on the candidate (as benchmarks/what_ran.py plants it);
linear is 1.3× slower with no breakdown on either side."""

from __future__ import annotations

import uuid

import numpy as np

from db.ingest.core import ingest_bundle
from tests.bundles import make_bundle, make_result

BASELINE, CANDIDATE = "torch=2.14.1", "torch=2.15.0"
SOFTMAX = ("softmax", '{"rows":1,"vocab":128256}', "float32", "eager")
LINEAR = ("linear", '{"K":1024,"M":1,"N":3072}', "bfloat16", "eager")
PROFILER = "torch.profiler (CPU self time)"
# µs per op call, one call each: the known answer every test states in words
BASE_OPS = {"aten::softmax": 2.0, "aten::_softmax": 40.0}
CAND_OPS = {"aten::log_softmax": 1.5, "aten::_log_softmax": 35.0, "aten::exp": 25.0}
SOFTMAX_US = {"2.14.1": 42.0, "2.15.0": 63.0}  # op_time medians: 1.5× slower
LINEAR_US = {"2.14.1": 20.0, "2.15.0": 26.0}  # 1.3× slower


def _breakdown(ops: dict[str, float]) -> dict:
    total = sum(ops.values())
    return {
        "workload": "softmax",
        "params": {"rows": 1, "vocab": 128256},
        "dtype": "float32",
        "metric": "op_time",
        "status": "ok",
        "profiler": PROFILER,
        "op_calls": 20,
        "entries": [
            {"name": n, "kind": "aten_op", "calls_per_call": 1.0, "device_time_us": t, "share": t / total}
            for n, t in ops.items()
        ],
    }


def _run(version: str, rng: np.random.Generator, hour: int) -> dict:
    def samples(us: float) -> list[float]:
        return [float(x) for x in us * (1 + rng.uniform(-0.01, 0.01, 10))]

    return make_bundle(
        schema_version=5,
        run_id=uuid.uuid4().hex,
        started_at=f"2026-12-02T{hour:02d}:00:00+00:00",
        ended_at=f"2026-12-02T{hour:02d}:05:00+00:00",
        build={"torch_version": version, "channel": "release", "python_version": "3.11.7", "collector_version": "0.2"},
        machine={"name": "linux-1", "os": "Linux", "chip": "x86_64", "arch": "x86_64", "power_source": "ac"},
        device={"type": "cpu", "name": "x86_64"},
        tags={},
        results=[
            make_result(samples=samples(SOFTMAX_US[version]), processes=[2] * 5),
            make_result(
                workload="linear",
                params={"M": 1, "K": 1024, "N": 3072},
                dtype="bfloat16",
                samples=samples(LINEAR_US[version]),
                processes=[2] * 5,
            ),
        ],
        kernels=[_breakdown(BASE_OPS if version == "2.14.1" else CAND_OPS)],
    )


def fill(engine) -> None:
    rng = np.random.default_rng(48)
    for hour, version in enumerate(["2.14.1", "2.15.0", "2.14.1", "2.15.0"], start=9):
        assert ingest_bundle(engine, _run(version, rng, hour)).created
