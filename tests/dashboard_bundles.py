"""Known-answer bundles for the dashboard tests, built with bundle.schema (so they pass the real validation).

Two builds of one Mac: softmax op_time improves 10 µs -> 7 µs while its PSNR drops from 60 dB (passed) to
20 dB (failed): the one "faster but wrong" case. The allocator's reserved peak is unavailable in both runs.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from benchmarks.stores.bundles import typed_bundle
from bundle.schema import Bundle, Result, Status

GIB = 1024**3
PARAMS = {"n": 1024}
MACHINE_NAME = "mac <b>studio</b>"  # HTML in a name must render as text


def _results(op_us: float, psnr_db: float, passed: bool) -> list[Result]:
    base = dict(workload="softmax", suite="kernels", params=PARAMS, dtype="float16", compile="eager")
    return [
        # five worker processes a little apart (their median the op_us itself): a review can test the change
        Result(
            metric="op_time",
            unit="µs",
            status=Status.ok,
            samples=[op_us * f for f in (0.99, 0.995, 1.0, 1.005, 1.01)],
            processes=[1] * 5,
            **base,
        ),
        Result(
            metric="psnr_vs_cpu", unit="dB", status=Status.ok, samples=[psnr_db], passed=passed, tolerance=40.0, **base
        ),
        Result(metric="memory_driver_peak", unit="B", status=Status.ok, samples=[2.0 * GIB], **base),
        Result(
            metric="memory_reserved_peak",
            unit="B",
            status=Status.unavailable,
            message="torch.mps has no reserved-peak API in this build",
            **base,
        ),
    ]


def known_bundle(index: int, torch_version: str, channel: str, op_us: float, psnr_db: float, passed: bool) -> Bundle:
    start = datetime(2026, 11, 1, 10, tzinfo=timezone.utc) + timedelta(days=index)
    return typed_bundle(
        f"{index + 1:032x}",
        start,
        5,
        dict(
            name=MACHINE_NAME,
            chip="Apple M2 Max",
            gpu_cores=38,
            memory_bytes=64 * GIB,
            os_version="15.1",
            low_power_mode=None,
        ),
        dict(
            torch_version=torch_version,
            git_hash=f"{index:040x}",
            channel=channel,
            python_version="3.11.7",
            env={"PYTORCH_ENABLE_MPS_FALLBACK": "1"},
            libraries={"transformers": f"5.2{4 + index}.0"},
            command_line="python -m collector run --profile quick",
        ),
        _results(op_us, psnr_db, passed),
        {"role": "**bold?**"},
    )


def known_bundles() -> list[Bundle]:
    return [known_bundle(0, "2.14.1", "stable", 10.0, 60.0, True), known_bundle(1, "2.15.0rc1", "rc", 7.0, 20.0, False)]


def raw(bundle: Bundle) -> bytes:
    return bundle.model_dump_json().encode()
