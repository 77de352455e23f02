"""Bundles shaped like two Macs' for a release review: 2.14.1 (release) → 2.15.0 (rc), 3 runs of each build on
an M2 Pro and on an M4 Max, so each (machine, build) has 3 A/A pairs.

Every figure is set here, so a test computes its expected answer from these constants:
- op_time of 6 softmax and 6 linear cases: every case of a run is scaled by that run's level (RUN_LEVELS),
  within a run the samples spread ±0.5 %. No build changes these: their differences are run-to-run noise. The
  M2 Pro is noisy: its baseline runs differ by up to 10 % and its candidate's 3 runs all happen to run high, so
  the candidate looks 6 % slower than the baseline (past the 5 % threshold; its pooled per-call samples would
  call that significant), yet it is inside the M2 Pro's own A/A noise (~10 %): not a regression.
- on the M4 Max, linear K=1024 N=3072 is SLOWER times slower in the candidate's 3 runs (a real regression).
- vae_tiled_decode memory_driver_peak on the M4 Max: 8 GiB → 80 GiB (10×: a regression); reserved and allocated
  peaks unchanged. On the M2 Pro the driver peak grows 3 % (246 MiB: past the 64 MiB floor, under 5 %: not one).
- vae_roundtrip psnr_vs_cpu on the M2 Pro: 72 → 47 dB, both passing their 30 dB tolerance (a 25 dB drop: a
  regression); on the M4 Max 72 → 71.5 dB (not one).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from benchmarks.stores.bundles import typed_bundle
from bundle.schema import Bundle, Result, Status

GIB = 1024**3
BASELINE, CANDIDATE = "torch=2.14.1", "torch=2.15.0"
MACS = {"mini-m2pro": ("Apple M2 Pro", 19), "studio-m4max": ("Apple M4 Max", 40)}
RUN_LEVELS = {
    ("Apple M2 Pro", False): (0.95, 1.05, 1.00),
    ("Apple M2 Pro", True): (1.06, 1.07, 1.05),
    ("Apple M4 Max", False): (0.998, 1.002, 1.0),
    ("Apple M4 Max", True): (1.001, 0.999, 1.0),
}
SOFTMAX = [{"rows": r, "vocab": v} for r in (1, 8) for v in (32000, 128256, 151936)]
LINEAR = [
    {"M": 1, "K": k, "N": n}
    for k, n in ((1024, 2048), (1024, 1024), (2048, 1024), (1024, 3072), (3072, 1024), (2048, 6144))
]
SLOWER, SLOW_CASE = 1.25, {"M": 1, "K": 1024, "N": 3072}
DRIVER = {
    ("Apple M4 Max", False): 8 * GIB,
    ("Apple M4 Max", True): 80 * GIB,
    ("Apple M2 Pro", False): 8 * GIB,
    ("Apple M2 Pro", True): 8.24 * GIB,
}
PSNR = {
    ("Apple M2 Pro", False): 72.0,
    ("Apple M2 Pro", True): 47.0,
    ("Apple M4 Max", False): 72.0,
    ("Apple M4 Max", True): 71.5,
}
PSNR_TOLERANCE = 30.0
TILED = {"model": "wan-tiny", "tiles": 4}
ROUNDTRIP = {"model": "kl-tiny"}


def _timed(workload: str, params: dict, level_us: float, rng: np.random.Generator, dtype: str) -> Result:
    samples = level_us * (1.0 + rng.uniform(-0.005, 0.005, 20))
    return Result(
        workload=workload,
        suite="kernels",
        params=params,
        dtype=dtype,
        compile="eager",
        metric="op_time",
        unit="µs",
        status=Status.ok,
        samples=[float(x) for x in samples],
    )


def _single(workload: str, params: dict, metric: str, unit: str, value: float, **extra) -> Result:
    return Result(
        workload=workload,
        suite="models",
        params=params,
        dtype="float32",
        compile="eager",
        metric=metric,
        unit=unit,
        status=Status.ok,
        samples=[float(value)],
        **extra,
    )


def _results(chip: str, candidate: bool, run: int, rng: np.random.Generator) -> list[Result]:
    factor = RUN_LEVELS[chip, candidate][run]
    out = [_timed("softmax", p, (5 + p["rows"] * p["vocab"] / 4000) * factor, rng, "float32") for p in SOFTMAX]
    for p in LINEAR:
        slower = SLOWER if candidate and chip == "Apple M4 Max" and p == SLOW_CASE else 1.0
        out.append(_timed("linear", p, (4 + p["K"] * p["N"] / 100_000) * factor * slower, rng, "bfloat16"))
    out += [
        _single("vae_tiled_decode", TILED, "memory_driver_peak", "B", DRIVER[chip, candidate]),
        _single("vae_tiled_decode", TILED, "memory_reserved_peak", "B", 7.5 * GIB),
        _single("vae_tiled_decode", TILED, "memory_allocated_peak", "B", 6 * GIB),
        _single(
            "vae_roundtrip",
            ROUNDTRIP,
            "psnr_vs_cpu",
            "dB",
            PSNR[chip, candidate],
            passed=True,
            tolerance=PSNR_TOLERANCE,
        ),
    ]
    return out


def release_bundles(seed: int = 2150) -> list[Bundle]:
    rng, out = np.random.default_rng(seed), []
    for run in range(3):
        for name, (chip, cores) in MACS.items():
            for candidate in (False, True):  # builds alternate within each round, as a sweep runs them
                version, channel, sha = ("2.15.0", "rc", "b" * 40) if candidate else ("2.14.1", "release", "a" * 40)
                start = datetime(2026, 12, 2, 9, tzinfo=timezone.utc) + timedelta(minutes=10 * len(out))
                out.append(
                    typed_bundle(
                        f"5eed{len(out):028x}",
                        start,
                        8,
                        dict(name=name, chip=chip, gpu_cores=cores, memory_bytes=32 * GIB),
                        dict(
                            torch_version=version,
                            git_hash=sha,
                            channel=channel,
                            python_version="3.12.8",
                            command_line="mpsbench run --profile quick",
                        ),
                        _results(chip, candidate, run, rng),
                        {"round": str(run)},
                    )
                )
    return out


def write_release_bundles(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for bundle in release_bundles():
        path = folder / f"{bundle.run_id}.json"
        path.write_text(bundle.model_dump_json())
        paths.append(path)
    return paths
