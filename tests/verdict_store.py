"""A store with known verdicts: baseline torch 2.14.1 → candidate 2.15.0rc1, two runs per side on one Mac.

Every figure is chosen here, so each test computes the expected answer from these constants:
- linear op_time: candidate 1.5× slower in both runs (a regression); its achieved_bandwidth falls with it
  (derived: never a row of its own).
- softmax op_time: the runs differ by run-to-run noise only (baseline runs at 100 and 101 µs, candidate at
  101.5 and 102.5 µs, within-run spread ±0.05 %): the pooled per-call samples would call it significant, the runs
  as replicates do not.
- memory_driver_peak 1 GiB → 10 GiB (regression); memory_allocated_peak 1 GiB → 1.03 GiB (3 %, 30.72 MiB: under
  the 64 MiB floor, not one); memory_reserved_peak 2 GiB → 2.2 GiB (10 %, 204.8 MiB: one).
- vae psnr_vs_cpu 70 → 50 dB, both passing a 25 dB tolerance (a 20 dB drop: a regression).
- softmax correctness: psnr_vs_cpu 60 → 20 dB (tolerance 40: passed → failed), max_abs_error 1e-4 → 1e-2 and
  max_rel_error 1e-5 → 1e-3 (both past their 1e-3 tolerance): ONE correctness row carrying all three figures.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from benchmarks.stores.bundles import typed_bundle
from bundle.schema import Bundle, Result, Status

GIB, MIB = 1024**3, 1024**2
BASELINE, CANDIDATE = "torch=2.14.1", "torch=2.15.0rc1"
SOFTMAX, LINEAR, VAE = {"rows": 1, "vocab": 128256}, {"m": 1, "k": 1024, "n": 3072}, {"model": "tiny-vae"}
NOISE_RUNS = {False: (100.0, 101.0), True: (101.5, 102.5)}  # softmax op_time run levels (µs) per side
LINEAR_US = {False: 20.0, True: 30.0}
DRIVER = {False: 1 * GIB, True: 10 * GIB}
ALLOCATED = {False: 1 * GIB, True: 1.03 * GIB}
RESERVED = {False: 2 * GIB, True: 2.2 * GIB}
VAE_PSNR = {False: 70.0, True: 50.0}
CORRECT = {False: (60.0, 1e-4, 1e-5), True: (20.0, 1e-2, 1e-3)}  # psnr dB, max abs, max rel
TOL = (40.0, 1e-3, 1e-3)
FASTER_US = 50.0


def _ok(workload, params, metric, unit, samples, dtype="float32", **extra) -> Result:
    return Result(
        workload=workload,
        suite="models" if workload == "vae" else "kernels",
        params=params,
        dtype=dtype,
        compile="eager",
        metric=metric,
        unit=unit,
        status=Status.ok,
        samples=list(samples),
        **extra,
    )


def _results(candidate: bool, run: int, rng: np.random.Generator, faster: bool) -> list[Result]:
    def around(value: float, n: int = 10, spread: float = 0.0005) -> list[float]:
        return [float(x) for x in value * (1.0 + rng.uniform(-spread, spread, n))]

    linear = around(LINEAR_US[candidate])
    psnr, abs_err, rel_err = CORRECT[candidate]
    bytes_moved = 2 * 1024 * 3072 * 2  # the bandwidth is bytes / time: derived from op_time
    return [
        _ok(
            "softmax",
            SOFTMAX,
            "op_time",
            "µs",
            around(FASTER_US if faster and candidate else NOISE_RUNS[candidate][run]),
        ),
        _ok("linear", LINEAR, "op_time", "µs", linear, "bfloat16"),
        _ok("linear", LINEAR, "achieved_bandwidth", "GB/s", [bytes_moved / (t * 1e3) for t in linear], "bfloat16"),
        _ok("vae", VAE, "memory_driver_peak", "B", [DRIVER[candidate]]),
        _ok("vae", VAE, "memory_allocated_peak", "B", [ALLOCATED[candidate]]),
        _ok("vae", VAE, "memory_reserved_peak", "B", [RESERVED[candidate]]),
        _ok("vae", VAE, "psnr_vs_cpu", "dB", [VAE_PSNR[candidate]], passed=True, tolerance=25.0),
        _ok("softmax", SOFTMAX, "psnr_vs_cpu", "dB", [psnr], passed=psnr >= TOL[0], tolerance=TOL[0]),
        _ok("softmax", SOFTMAX, "max_abs_error", "1", [abs_err], passed=abs_err <= TOL[1], tolerance=TOL[1]),
        _ok("softmax", SOFTMAX, "max_rel_error", "1", [rel_err], passed=rel_err <= TOL[2], tolerance=TOL[2]),
    ]


def m4max_bundle(
    run_id: str, start: datetime, version: str, channel: str, machine: str, tags: dict, results: list[Result]
) -> Bundle:
    """One five-minute run on an M4 Max (40 GPU cores, 64 GiB, macOS 26.1, on AC power)."""
    return typed_bundle(
        run_id,
        start,
        5,
        dict(name=machine, chip="Apple M4 Max", gpu_cores=40, memory_bytes=64 * GIB),
        dict(torch_version=version, channel=channel, python_version="3.11.7", command_line="mpsbench run"),
        results,
        tags,
    )


def verdict_bundles(faster: bool = False) -> list[Bundle]:
    """faster=True: the candidate's softmax op_time is FASTER_US in both runs (faster, and still wrong)."""
    rng, out = np.random.default_rng(1414), []
    for candidate in (False, True):
        version, channel = ("2.15.0rc1", "rc") if candidate else ("2.14.1", "stable")
        for run in (0, 1):
            start = datetime(2026, 12, 1, 9, tzinfo=timezone.utc) + timedelta(hours=len(out))
            out.append(
                m4max_bundle(
                    f"7e5d{len(out):028x}",
                    start,
                    version,
                    channel,
                    "mac-a",
                    {"role": "candidate" if candidate else "baseline"},
                    _results(candidate, run, rng, faster),
                )
            )
    return out


def verdict_store(engine, faster: bool = False) -> None:
    from db.ingest.core import ingest_bundle

    for bundle in verdict_bundles(faster):
        ingest_bundle(engine, bundle.model_dump_json().encode())
