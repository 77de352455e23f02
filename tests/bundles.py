"""Valid bundles for tests. make_bundle: a raw one (a dict), deterministic except the run_id (pass run_id= to fix
it too); make_result: one of its results. A typed bundle (the seeded stores' envelope): benchmarks/stores/bundles.py."""

from __future__ import annotations

import uuid
from typing import Any


def make_result(**overrides: Any) -> dict:
    base = dict(
        workload="softmax",
        suite="kernels",
        params={"rows": 1, "vocab": 128256},
        dtype="float32",
        compile="eager",
        metric="op_time",
        unit="µs",
        status="ok",
        samples=[7.1, 7.3, 7.2, 9.0],
    )
    return base | overrides


def _results() -> list[dict]:
    return [
        make_result(),
        make_result(params={"rows": 2, "vocab": 128256}, unit="ms", samples=[0.0071, 0.0073]),
        make_result(
            workload="decode",
            suite="models",
            params={"model": "tiny", "tokens": 32},
            metric="decode_throughput",
            unit="tokens/s",
            samples=[41.0, 42.5, 40.0],
        ),
        make_result(metric="memory_driver_peak", unit="MiB", samples=[512.0]),
        make_result(metric="psnr_vs_cpu", unit="dB", samples=[61.2], passed=True, tolerance=40.0),
        make_result(
            metric="memory_reserved_peak",
            unit="B",
            status="unavailable",
            samples=[],
            message="device has no allocator API",
        ),
    ]


def make_bundle(**overrides: Any) -> dict:
    base = dict(
        schema_version=1,
        run_id=uuid.uuid4().hex,
        started_at="2026-12-02T10:00:00+00:00",
        ended_at="2026-12-02T10:05:00+00:00",
        complete=True,
        machine={
            "name": "m3u",
            "os": "macOS",
            "os_version": "15.2",
            "chip": "Apple M3 Ultra",
            "arch": "arm64",
            "memory_bytes": 192 * 1024**3,
            "power_source": "ac",
        },
        build={"torch_version": "2.15.0rc1", "channel": "rc", "python_version": "3.11.7", "collector_version": "0.1.0"},
        device={"type": "mps", "name": "Apple M3 Ultra"},
        tags={"role": "candidate"},
        warnings=[],
        results=_results(),
    )
    return base | overrides
