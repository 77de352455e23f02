"""A release manager's store: two Macs (an M4 Pro and an M3 Ultra) × 2.14.1 (stable) and 2.15.0rc1, plus a
2.16 nightly, with the planted effects of issue 35 — so a test computes every expected answer from these
constants:
- sdpa decode op_time 1.21× slower on the rc on the M4 Pro only (SDPA_SLOWER);
- linear M=4 op_time 1.18× slower on the rc on both chips (LINEAR_SLOWER);
- softmax op_time 4.25× faster on the rc on both chips (SOFTMAX_FASTER);
- a float8 matmul unsupported on 2.14.1, newly supported on the rc but failing its PSNR tolerance;
- bf16 linear psnr_vs_cpu moving by rounding jitter (within 1 dB of its rounding level): never a regression.
Every other case is the same on every build. `walk_bundles(processes=1, runs=1)` gives single-process, single-run
bundles (nothing to test the changes on: each is unconfirmed); `processes=10, runs=3` gives what a review can test.
Within a process the samples spread ±0.5 %; processes of a run ±2 %; runs ±1 % (a seeded RNG)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from benchmarks.stores.bundles import typed_bundle
from bundle.schema import Bundle, Result, Status

BASELINE, CANDIDATE, NIGHTLY = "torch=2.14.1", "torch=2.15.0rc1", "torch=2.16.0.dev20261201"
BUILDS = {
    BASELINE: ("2.14.1", "stable", "a" * 40, None),
    CANDIDATE: ("2.15.0rc1", "rc", "b" * 40, None),
    NIGHTLY: ("2.16.0.dev20261201", "nightly", "c" * 40, "2026-12-01"),
}
MACS = {"mbp-m4pro": ("Apple M4 Pro", 20), "studio-m3u": ("Apple M3 Ultra", 80)}
SDPA = {"phase": "decode", "batch": 1, "heads": 16, "kv_len": 4096, "head_dim": 128}
LINEAR_4 = {"M": 4, "K": 2048, "N": 6144}
LINEAR_1 = {"M": 1, "K": 2048, "N": 6144}
SOFTMAX = {"rows": 1, "vocab": 128256}
FP8 = {"M": 64, "K": 1024, "N": 1024}
SDPA_SLOWER, LINEAR_SLOWER, SOFTMAX_FASTER = 1.21, 1.18, 4.25
PSNR_LEVEL, PSNR_TOLERANCE = 38.0, 25.0  # bf16 rounding level and stated tolerance of the linear's output


def _level(workload: str, params: dict, chip: str, build: str) -> float:
    """The true µs per call of a case: every build the same but for the planted effects (the nightly as the rc)."""
    base = {"sdpa": 40.0, "linear": 25.0 if params.get("M") == 4 else 20.0, "softmax": 60.0}[workload]
    if build == BASELINE:
        return base
    if workload == "sdpa" and chip == "Apple M4 Pro":
        return base * SDPA_SLOWER
    if workload == "linear" and params.get("M") == 4:
        return base * LINEAR_SLOWER
    return base / SOFTMAX_FASTER if workload == "softmax" else base


def _timing(workload: str, params: dict, dtype: str, level: float, processes: int, rng) -> Result:
    per = 20 if processes == 1 else 4
    samples = [
        float(v)
        for p in range(processes)
        for v in level * (1 + rng.normal(0, 0.02 if processes > 1 else 0)) * (1 + rng.uniform(-0.005, 0.005, per))
    ]
    return Result(
        workload=workload,
        suite="kernels",
        params=params,
        dtype=dtype,
        compile="eager",
        metric="op_time",
        unit="µs",
        status=Status.ok,
        samples=samples,
        processes=[per] * processes,
        contention=[0.0] * processes,
    )


def _results(chip: str, build: str, processes: int, rng) -> list[Result]:
    run_level = 1 + rng.normal(0, 0.01)
    out = [
        _timing(w, p, d, _level(w, p, chip, build) * run_level, processes, rng)
        for w, p, d in (
            ("sdpa", SDPA, "float16"),
            ("linear", LINEAR_4, "bfloat16"),
            ("linear", LINEAR_1, "bfloat16"),
            ("softmax", SOFTMAX, "float32"),
        )
    ]
    jitter = float(rng.uniform(-0.8, 0.8))
    out.append(
        Result(
            workload="linear",
            suite="kernels",
            params=LINEAR_1,
            dtype="bfloat16",
            compile="eager",
            metric="psnr_vs_cpu",
            unit="dB",
            status=Status.ok,
            samples=[PSNR_LEVEL + jitter],
            passed=True,
            tolerance=PSNR_TOLERANCE,
            rounding=PSNR_LEVEL,
        )
    )
    if build == BASELINE:  # the collector writes each metric of an unsupported case as unsupported
        out += [
            Result(
                workload="fp8_matmul",
                suite="kernels",
                params=FP8,
                dtype="float8_e4m3fn",
                compile="eager",
                metric=metric,
                unit=unit,
                status=Status.unsupported,
                message="float8_e4m3fn is not supported on MPS",
            )
            for metric, unit in (("op_time", "µs"), ("psnr_vs_cpu", "dB"))
        ]
    else:
        out += [
            _timing("fp8_matmul", FP8, "float8_e4m3fn", 30.0, processes, rng),
            Result(
                workload="fp8_matmul",
                suite="kernels",
                params=FP8,
                dtype="float8_e4m3fn",
                compile="eager",
                metric="psnr_vs_cpu",
                unit="dB",
                status=Status.ok,
                samples=[12.0],
                passed=False,
                tolerance=20.0,
            ),
        ]
    return out


def walk_bundles(processes: int = 1, runs: int = 1, seed: int = 35) -> list[Bundle]:
    """Every (round, Mac, build) run, builds interleaved within a round as a sweep runs them."""
    rng, out = np.random.default_rng(seed), []
    for run in range(runs):
        for name, (chip, cores) in MACS.items():
            for build, (version, channel, sha, nightly) in BUILDS.items():
                start = datetime(2026, 12, 3, 9, tzinfo=timezone.utc) + timedelta(minutes=10 * len(out))
                out.append(
                    typed_bundle(
                        f"3500{len(out):028x}",
                        start,
                        8,
                        dict(name=name, chip=chip, gpu_cores=cores, memory_bytes=64 * 1024**3),
                        dict(
                            torch_version=version,
                            git_hash=sha,
                            channel=channel,
                            nightly_date=nightly,
                            python_version="3.12.8",
                            collector_version="0.2.0",
                            command_line=f"mpsbench run --processes {processes}",
                        ),
                        _results(chip, build, processes, rng),
                        {"round": str(run)},
                    )
                )
    return out


def walk_store(engine, processes: int = 1, runs: int = 1) -> list[Bundle]:
    from db.ingest.core import ingest_bundle
    from db.store.writers.upkeep import catch_up

    bundles = walk_bundles(processes, runs)
    for bundle in bundles:
        ingest_bundle(engine, bundle.model_dump_json().encode())
    catch_up(engine)  # as a server leaves it once its uploads pause (db.store.writers.upkeep)
    return bundles


# --- the smaller items of issue 35 (item 5): memory peaks and an NVIDIA upload beside the walk ---------------------
VAE = {"model": "Wan2.1-VAE", "height": 480, "width": 832}
DECODE = {"model": "Qwen3-0.6B", "context": 512}
# GiB per (chip, build): (driver total, allocator reserved, live tensors) of the VAE and of the decode; the M3
# Ultra's driver total runs to 270 GiB (the picture that squashed 0.4–8 GiB bars); the M4 Pro's live tensors of
# the VAE shrink 6 → 4 GiB on the rc (a memory win); its decode's live peak is unavailable (never 0)
MEMORY = {
    ("Apple M3 Ultra", BASELINE): ((270.0, 8.07, 6.0), (2.0, 0.9, 0.4)),
    ("Apple M3 Ultra", CANDIDATE): ((262.0, 8.07, 5.9), (2.1, 0.9, 0.42)),
    ("Apple M4 Pro", BASELINE): ((14.0, 8.0, 6.0), (2.0, 0.9, None)),
    ("Apple M4 Pro", CANDIDATE): ((14.2, 8.0, 4.0), (2.0, 0.9, None)),
}
FIGURES = ("memory_driver_peak", "memory_reserved_peak", "memory_allocated_peak")
CUDA_BUILD = "2.13.0+cu126"  # sorts before every Mac build: the Matrix once took it as its baseline
CUDA_CASES = 8  # first_call_time cases of the NVIDIA run: more than any Mac metric's


def _memory(params: dict, peaks: tuple) -> list[Result]:
    return [
        Result(
            workload="vae" if params is VAE else "decode",
            suite="models",
            params=params,
            dtype="bfloat16",
            compile="eager",
            metric=m,
            unit="B",
            status=Status.ok,
            samples=[gib * 1024**3],
        )
        if gib is not None
        else Result(
            workload="decode",
            suite="models",
            params=params,
            dtype="bfloat16",
            compile="eager",
            metric=m,
            unit="B",
            status=Status.unavailable,
            message="the device reports no live-tensor peak",
        )
        for m, gib in zip(FIGURES, peaks)
    ]


def extras_bundles() -> list[Bundle]:
    """A memory run per Mac and build (stable, rc), and one NVIDIA run of CUDA_BUILD timing first calls only."""
    out = []
    start = datetime(2026, 12, 4, 9, tzinfo=timezone.utc)
    for i, ((chip, build), (vae, decode)) in enumerate(MEMORY.items()):
        name = next(n for n, (c, _) in MACS.items() if c == chip)
        version, channel, sha, nightly = BUILDS[build]
        out.append(
            typed_bundle(
                f"3501{i:028x}",
                start + timedelta(minutes=10 * i),
                8,
                dict(name=name, chip=chip, gpu_cores=MACS[name][1], memory_bytes=64 * 1024**3),
                dict(
                    torch_version=version,
                    git_hash=sha,
                    channel=channel,
                    nightly_date=nightly,
                    python_version="3.12.8",
                    collector_version="0.2.0",
                    command_line="mpsbench run",
                ),
                _memory(VAE, vae) + _memory(DECODE, decode),
            )
        )
    firsts = [
        Result(
            workload="softmax",
            suite="kernels",
            params={"rows": r, "vocab": 128256},
            dtype="float32",
            compile="eager",
            metric="first_call_time",
            unit="ms",
            status=Status.ok,
            samples=[3.0 + r],
        )
        for r in range(1, CUDA_CASES + 1)
    ]
    out.append(
        typed_bundle(
            f"3502{0:028x}",
            start + timedelta(hours=2),
            5,
            dict(
                name="h100-box",
                chip="NVIDIA H100 80GB HBM3",
                memory_bytes=256 * 1024**3,
                os="Linux",
                os_version="6.8",
                arch="x86_64",
            ),
            dict(
                torch_version=CUDA_BUILD,
                git_hash="d" * 40,
                channel="stable",
                python_version="3.12.8",
                collector_version="0.2.0",
                command_line="mpsbench run",
            ),
            firsts,
            device="cuda",
        )
    )
    return out


def walk_extras_store(engine, processes: int = 1, runs: int = 1) -> list[Bundle]:
    """walk_store and extras_bundles in one store."""
    from db.ingest.core import ingest_bundle

    bundles = walk_store(engine, processes, runs) + extras_bundles()
    for bundle in bundles[-len(MEMORY) - 1 :]:
        ingest_bundle(engine, bundle.model_dump_json().encode())
    return bundles
