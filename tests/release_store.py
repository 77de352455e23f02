"""Issue 44's walk as a store: two Macs (M4 Pro 20c, M3 Ultra 80c) × 2.14.1 (stable, run twice a round: A/A
pairs) and 2.15.0rc1 (rc), plus a 2.16 nightly, ROUNDS rounds, 10 worker processes per timing case. Every expected
answer follows from the constants here:

- regressed on the rc, 3 cases: sdpa decode op time on the M4 Pro only (70.9 → 86.2 µs), linear M=4 on both chips
  (1.17× slower). The sdpa case's first-call time is planted 1.63× slower too: one case, not two regressions.
- better on the rc: softmax 1×128256 8× faster, constant_pad 1.82× faster, the decode 39.1 → 52.1 tokens/s, the
  Wan VAE's driver peak 270 → 8.1 GiB and its decode 96 → 41 s, a round trip's PSNR +19.9 dB (every chip).
- first-call times are one figure a run, the same in every run of a build: their A/A spread is exactly 0.
- the nightly's inductor decode is 7 % slower than 2.14.1's: a change its few runs cannot see.
Within a process samples spread ±0.5 %, processes ±2 %, runs ±1 % (seeded)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from benchmarks.stores.bundles import typed_bundle
from bundle.schema import Bundle, Result, Status

STABLE, RC, NIGHTLY = "torch=2.14.1", "torch=2.15.0rc1", "torch=2.16.0.dev20261201"
BUILDS = {
    STABLE: ("2.14.1", "stable", "a" * 40, None),
    RC: ("2.15.0rc1", "rc", "b" * 40, None),
    NIGHTLY: ("2.16.0.dev20261201", "nightly", "c" * 40, "2026-12-01"),
}
M4, M3 = "Apple M4 Pro", "Apple M3 Ultra"
MACS = {"mbp-m4pro": (M4, 20), "studio-m3u": (M3, 80)}
CHIP_SCOPE = {M4: "Apple M4 Pro (20-core GPU)", M3: "Apple M3 Ultra (80-core GPU)"}
ROUNDS, PROCESSES, PER_PROCESS = 3, 10, 4
GIB = 1024**3

# (workload, params, dtype): µs per call on 2.14.1, and the rc's factor (> 1 slower) per chip
SDPA = ("sdpa", {"phase": "decode", "batch": 1, "heads": 16, "kv_len": 4096, "head_dim": 128}, "float16")
LINEAR_4 = ("linear", {"M": 4, "K": 2048, "N": 6144}, "bfloat16")
LINEAR_1 = ("linear", {"M": 1, "K": 2048, "N": 6144}, "bfloat16")
SOFTMAX = ("softmax", {"rows": 1, "vocab": 128256}, "float32")
PAD = ("constant_pad", {"C": 96, "H": 256, "W": 256, "pad": 1}, "bfloat16")
KERNELS = [
    (SDPA, 70.9, {M4: 86.2 / 70.9, M3: 1.0}),
    (LINEAR_4, 25.0, {M4: 1.17, M3: 1.17}),
    (LINEAR_1, 20.0, {M4: 1.0, M3: 1.0}),
    (SOFTMAX, 57.4, {M4: 7.1 / 57.4, M3: 7.1 / 57.4}),
    (PAD, 182.0, {M4: 1 / 1.82, M3: 1 / 1.82}),
]
FIRST_CALL_MS = 4.0  # every kernel's first call on 2.14.1; the sdpa's on the M4 Pro's rc: ×1.63
SDPA_FIRST_CALL = 1.63
REGRESSED = {(M4, "sdpa"), (M4, "linear M=4"), (M3, "linear M=4")}  # the planted regressions: 3 cases
DECODE = {"model": "Qwen3-30B-A3B", "source": "random", "context": 512, "new_tokens": 64, "parameters": 1300000000}
TOKENS = {STABLE: 39.1, RC: 52.1, NIGHTLY: 39.1}  # decode tokens/s (eager)
INDUCTOR_S = {STABLE: 1.00, RC: 0.98, NIGHTLY: 1.07}  # the inductor decode's wall time (s)
VAE = {"model": "Wan2.1-VAE", "source": "random", "height": 480, "width": 832, "tiles": 28}
VAE_DRIVER_GIB = {STABLE: 270.0, RC: 8.1, NIGHTLY: 8.1}
VAE_DECODE_S = {STABLE: 96.0, RC: 41.0, NIGHTLY: 41.0}
ROUNDTRIP = {"model": "qwen-image-vae", "source": "random", "height": 256, "width": 256}
PSNR_INPUT = {STABLE: 10.06, RC: 29.95, NIGHTLY: 29.95}


def _timed(workload, params, dtype, metric, unit, level, rng, processes=PROCESSES, per=PER_PROCESS, **kw) -> Result:
    samples = [
        float(v)
        for _ in range(processes)
        for v in level * (1 + rng.normal(0, 0.02)) * (1 + rng.uniform(-0.005, 0.005, per))
    ]
    return Result(
        workload=workload,
        suite="models" if workload in ("decode", "vae_tiled_decode", "vae_roundtrip") else "kernels",
        params=params,
        dtype=dtype,
        compile=kw.pop("compile", "eager"),
        metric=metric,
        unit=unit,
        status=Status.ok,
        samples=samples,
        processes=[per] * processes,
        contention=[0.0] * processes,
        **kw,
    )


def _single(workload, params, dtype, metric, unit, value, **kw) -> Result:
    """One figure a run (a first call, a peak, a PSNR): the same in every run of a build."""
    return Result(
        workload=workload,
        suite="models" if workload in ("decode", "vae_tiled_decode", "vae_roundtrip") else "kernels",
        params=params,
        dtype=dtype,
        compile="eager",
        metric=metric,
        unit=unit,
        status=Status.ok,
        samples=[float(value)],
        **kw,
    )


def _results(chip: str, build: str, rng) -> list[Result]:
    run = 1 + rng.normal(0, 0.01)
    out = []
    for (workload, params, dtype), us, factor in KERNELS:
        change = 1.0 if build == STABLE else factor[chip]
        out.append(_timed(workload, params, dtype, "op_time", "µs", us * change * run, rng))
        first = FIRST_CALL_MS * (SDPA_FIRST_CALL if (workload, chip, build) == ("sdpa", M4, RC) else 1.0)
        out.append(_single(workload, params, dtype, "first_call_time", "ms", first))
    decode_s = DECODE["new_tokens"] / TOKENS[build]
    out.append(_timed("decode", DECODE, "bfloat16", "decode_time", "s", decode_s * run, rng, processes=1, per=3))
    out.append(
        _timed("decode", DECODE, "bfloat16", "decode_time", "s", INDUCTOR_S[build] * run, rng, 1, 3, compile="inductor")
    )
    out.append(_single("vae_tiled_decode", VAE, "bfloat16", "memory_driver_peak", "B", VAE_DRIVER_GIB[build] * GIB))
    out.append(_timed("vae_tiled_decode", VAE, "bfloat16", "decode_time", "s", VAE_DECODE_S[build] * run, rng, 1, 2))
    out.append(
        _single(
            "vae_roundtrip", ROUNDTRIP, "float32", "psnr_vs_input", "dB", PSNR_INPUT[build], passed=True, tolerance=8.0
        )
    )
    return out


def release_bundles(seed: int = 44) -> list[Bundle]:
    """Every (round, Mac, build) run; the baseline twice a round (its A/A pairs), builds interleaved."""
    rng, out = np.random.default_rng(seed), []
    order = [STABLE, RC, STABLE, NIGHTLY]
    for round_ in range(ROUNDS):
        for name, (chip, cores) in MACS.items():
            for build in order:
                version, channel, sha, nightly = BUILDS[build]
                start = datetime(2026, 12, 3, 9, tzinfo=timezone.utc) + timedelta(minutes=10 * len(out))
                out.append(
                    typed_bundle(
                        f"4400{len(out):028x}",
                        start,
                        8,
                        dict(name=name, chip=chip, gpu_cores=cores, memory_bytes=64 * GIB),
                        dict(
                            torch_version=version,
                            git_hash=sha,
                            channel=channel,
                            nightly_date=nightly,
                            python_version="3.12.8",
                            collector_version="0.2.0",
                            command_line=f"mpsbench run --processes {PROCESSES}",
                        ),
                        _results(chip, build, rng),
                        {"round": str(round_)},
                    )
                )
    return out


def release_store(engine) -> list[Bundle]:
    from db.ingest.core import ingest_bundle
    from db.store.writers.upkeep import catch_up

    bundles = release_bundles()
    for bundle in bundles:
        ingest_bundle(engine, bundle.model_dump_json().encode())
    catch_up(engine)  # as a server leaves it once its uploads pause (db.store.writers.upkeep)
    return bundles
