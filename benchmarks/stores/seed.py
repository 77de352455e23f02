"""A deterministic seeded store with known answers: two builds on three Macs of two chips.

Baseline torch 2.14.1 (stable, tag role=baseline) vs candidate 2.15.0rc1 (rc, tag role=candidate) on
"studio-1" and "studio-2" (Apple M3 Ultra, 80 GPU cores) and "air-1" (Apple M2, 10 GPU cores). Samples are
`value × (1 + uniform noise ±1 %)` from a seeded RNG, so every true ratio below is known; a result of n ≥ 4
samples came from worker processes of 2 samples each (bundle `processes`: the replicates a review tests on).
studio-1 ran each build twice (repeats to pool); three later builds on studio-1 carry only softmax op_time (for
trends).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

from benchmarks.stores.bundles import typed_bundle
from bundle.schema import Bundle, Result, Status
from collector.kernels.linear import Linear
from collector.kernels.softmax import Softmax

GIB = 1024**3
BASELINE, CANDIDATE = "torch=2.14.1", "torch=2.15.0rc1"
MACHINES = {
    "studio-1": ("Apple M3 Ultra", 80, 192),
    "studio-2": ("Apple M3 Ultra", 80, 96),
    "air-1": ("Apple M2", 10, 16),
}
# case params in the forms the real workloads write: collector/kernels/softmax.py and collector/kernels/linear.py's own specs;
# the model workloads (collector/models/, issue 5) in the form their issue describes (model identity + size)
SOFTMAX = Softmax().specs("quick")[0]  # {"rows": 1, "vocab": 128256}
SOFTMAX_4 = {"rows": 4, "vocab": 128256}
LINEAR_FAST, LINEAR_SLOW, LINEAR_NOISE = Linear().specs("quick")[:3]  # M = 1 projections of Qwen3-0.6B
DECODE_512 = {
    "model": "Qwen3.6-35B-A3B",
    "architecture": "Qwen3MoeForCausalLM",
    "layers": 40,
    "hidden": 2048,
    "experts": 256,
    "top_k": 8,
    "parameters": 35_000_000_000,
    "context": 512,
    "new_tokens": 64,
}
VAE = {"model": "Wan2.2-TI2V-5B", "vae": "AutoencoderKLWan", "tiles": 28, "frames": 21, "height": 704, "width": 1280}
ROUNDTRIP = {"model": "Qwen-Image", "vae": "AutoencoderKLQwenImage", "height": 256, "width": 256}
TREND_BUILDS = [
    ("2.15.0", "stable", None, 45.6),
    ("2.16.0.dev20261120", "nightly", "2026-11-20", 45.6),
    ("2.16.0.dev20261201", "nightly", "2026-12-01", 36.5),
    ("2.16.0.dev20261202", "nightly", "2026-12-02", 36.5),
]


class _Noise:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def samples(self, value: float, n: int) -> list[float]:
        return [float(x) for x in value * (1.0 + self.rng.uniform(-0.01, 0.01, n))]


def processes_of(n: int, per_process: int = 2) -> list[int]:
    """n samples as worker processes of `per_process` samples (the last takes the rest); under 4: one process."""
    if n < 4:
        return []
    sizes = [per_process] * (n // per_process)
    sizes[-1] += n - sum(sizes)
    return sizes


def _ok(
    workload: str,
    suite: str,
    params: dict,
    dtype: str,
    metric: str,
    unit: str,
    samples: list[float],
    compile_mode: str = "eager",
    **extra: Any,
) -> Result:
    return Result(
        workload=workload,
        suite=suite,
        params=params,
        dtype=dtype,
        compile=compile_mode,
        metric=metric,
        unit=unit,
        status=Status.ok,
        samples=samples,
        processes=processes_of(len(samples)),
        **extra,
    )


def _absent(workload: str, params: dict, dtype: str, metric: str, unit: str, status: Status, why: str) -> Result:
    return Result(
        workload=workload,
        suite="kernels" if workload not in ("decode", "vae_tiled_decode") else "models",
        params=params,
        dtype=dtype,
        metric=metric,
        unit=unit,
        status=status,
        message=why,
    )


def _kernel_results(noise: _Noise, candidate: bool, chip: str) -> list[Result]:
    f = 0.8 if candidate else 1.0  # softmax and the fast linear shape: candidate takes 0.8× the time
    ops = [
        ("softmax", SOFTMAX, "float32", 57.37 * f),
        ("softmax", SOFTMAX_4, "float32", 60.0 * f),
        ("linear", LINEAR_FAST, "bfloat16", 20.0 * f),
        ("linear", LINEAR_SLOW, "bfloat16", 30.0 * (1.1 if candidate else 1.0)),
        ("linear", LINEAR_NOISE, "bfloat16", 40.0),
    ]
    out = [_ok(w, "kernels", p, d, "op_time", "µs", noise.samples(v, 10)) for w, p, d, v in ops]
    out.append(
        _ok(
            "constant_pad",
            "kernels",
            {"c": 96, "h": 256, "w": 256},
            "float32",
            "op_time",
            "µs",
            noise.samples(100.0, 2),
        )
    )  # n=2, one process, one run a side: unconfirmed
    out += _candidate_kernels(noise) if candidate else _baseline_kernels(noise)
    psnr, passed = ((20.0, False) if candidate else (60.0, True)) if chip == "Apple M2" else (70.0, True)
    out.append(
        _ok("softmax", "kernels", SOFTMAX, "float32", "psnr_vs_cpu", "dB", [psnr], passed=passed, tolerance=40.0)
    )
    return out


def _candidate_kernels(noise: _Noise) -> list[Result]:
    """The candidate's own kernel cases: a CPU fallback, fp8 (unsupported on the baseline) and a case it alone ran."""
    out = []
    out.append(
        Result(
            workload="grouped_mm",
            suite="kernels",
            params={"experts": 8},
            dtype="bfloat16",
            metric="op_time",
            unit="µs",
            status=Status.fallback,
            samples=noise.samples(500.0, 10),
            message="aten::_grouped_mm fell back to the CPU",
        )
    )
    out.append(
        _ok(
            "fp8",
            "kernels",
            {"m": 256, "k": 256, "n": 256},
            "float8_e4m3fn",
            "op_time",
            "µs",
            noise.samples(80.0, 10),
        )
    )
    out.append(
        _ok("sdpa", "kernels", {"heads": 16, "seq": 512}, "float16", "op_time", "µs", noise.samples(90.0, 10))
    )  # candidate only
    return out


def _baseline_kernels(noise: _Noise) -> list[Result]:
    """The baseline's side of those: grouped_mm on the GPU, fp8 unsupported."""
    out = []
    out.append(_ok("grouped_mm", "kernels", {"experts": 8}, "bfloat16", "op_time", "µs", noise.samples(50.0, 10)))
    out.append(
        _absent(
            "fp8",
            {"m": 256, "k": 256, "n": 256},
            "float8_e4m3fn",
            "op_time",
            "µs",
            Status.unsupported,
            "Trying to convert Float8_e4m3fn to the MPS backend but it does not have support for that dtype.",
        )
    )
    return out


def _model_results(noise: _Noise, candidate: bool) -> list[Result]:
    tps = 51.7 if candidate else 38.7
    driver, live = (8.108, 4.095) if candidate else (270.135, 4.422)
    psnr = 29.95 if candidate else 10.06
    return [
        _ok(
            "decode",
            "models",
            DECODE_512,
            "bfloat16",
            "decode_throughput",
            "tokens/s",
            noise.samples(tps, 5),
            "inductor",
        ),
        _ok("vae_tiled_decode", "models", VAE, "bfloat16", "memory_driver_peak", "B", [driver * GIB]),
        _ok("vae_tiled_decode", "models", VAE, "bfloat16", "memory_allocated_peak", "B", [live * GIB]),
        _absent(
            "vae_tiled_decode",
            VAE,
            "bfloat16",
            "memory_reserved_peak",
            "B",
            Status.unavailable,
            "torch.accelerator.memory has no reserved peak for MPS in this build",
        ),
        _ok("vae_tiled_decode", "models", VAE, "bfloat16", "pad_calls", "calls", [8764.0]),
        _ok(
            "vae_roundtrip",
            "models",
            ROUNDTRIP,
            "float32",
            "psnr_vs_cpu",
            "dB",
            [psnr],
            passed=candidate,
            tolerance=25.0,
        ),
    ]


def _bundle(
    index: int,
    machine: str,
    torch_version: str,
    channel: str,
    role: str | None,
    results: list[Result],
    nightly_date: str | None = None,
) -> Bundle:
    chip, cores, ram = MACHINES[machine]
    start = datetime(2026, 11, 1, 9, tzinfo=timezone.utc) + timedelta(hours=index)
    return typed_bundle(
        f"5eed{index:028x}",
        start,
        20,
        dict(name=machine, chip=chip, gpu_cores=cores, memory_bytes=ram * GIB),
        dict(
            torch_version=torch_version,
            channel=channel,
            nightly_date=nightly_date,
            python_version="3.11.7",
            command_line="python -m collector run",
        ),
        results,
        {"role": role} if role else {},
    )


def seed_bundles() -> list[Bundle]:
    noise, bundles = _Noise(20261202), []
    plan = [("studio-1", 2), ("studio-2", 1), ("air-1", 1)]  # machine, repeats per build
    for machine, repeats in plan:
        for candidate in (False, True):
            version, channel, role = ("2.15.0rc1", "rc", "candidate") if candidate else ("2.14.1", "stable", "baseline")
            for _ in range(repeats):
                results = _kernel_results(noise, candidate, MACHINES[machine][0])
                if machine == "studio-1":
                    results += _model_results(noise, candidate)
                bundles.append(_bundle(len(bundles), machine, version, channel, role, results))
    for version, channel, date, us in TREND_BUILDS:
        results = [_ok("softmax", "kernels", SOFTMAX, "float32", "op_time", "µs", noise.samples(us, 10))]
        bundles.append(_bundle(len(bundles), "studio-1", version, channel, None, results, date))
    return bundles


def expected() -> dict[str, Any]:
    """The answers the tests check (true values the noisy samples were drawn around)."""
    return {
        "baseline": BASELINE,
        "candidate": CANDIDATE,
        "machines": sorted(MACHINES),
        "softmax_speedup": 1 / 0.8,
        "linear_fast_speedup": 1 / 0.8,
        "linear_slow_oriented": 1 / 1.1,
        "decode_oriented": 51.7 / 38.7,
        "driver_peak_oriented": 270.135 / 8.108,
        "live_peak_oriented": 4.422 / 4.095,
        "roundtrip_psnr_db": 29.95 - 10.06,
        "m2_softmax_psnr_db": 20.0 - 60.0,
        "studio1_runs_per_side": 2,
        "trend_step_build": "2.16.0.dev20261201",
        "trend_builds": [
            "2.14.1",
            "2.15.0rc1",
            "2.15.0",
            "2.16.0.dev20261120",
            "2.16.0.dev20261201",
            "2.16.0.dev20261202",
        ],
    }


def seed_store(engine) -> dict[str, Any]:
    from db.ingest.core import ingest_bundle
    from db.store.writers.upkeep import catch_up

    bundles = seed_bundles()
    for bundle in bundles:
        ingest_bundle(engine, bundle.model_dump_json().encode())
    catch_up(engine)  # as a server leaves it once its uploads pause (db.store.writers.upkeep)
    return {**expected(), "run_ids": [b.run_id for b in bundles], "bundles": bundles}
