"""A store where one decode got 1.3× slower, recorded as the decode workload records it (collector/models/decode.py):
decode_time and decode_throughput from the same samples, time_to_first_token and prefill_throughput from the same
prefill samples. Baseline torch 2.14.1 → candidate 2.15.0rc1, one run a side on one Mac.

Known answers (each test computes them from these constants):
- decode: decode_time 2.0 → 2.6 s (1.3× slower), so decode_throughput 64 / 2.0 → 64 / 2.6 tokens/s;
  time_to_first_token 50 → 65 ms, so prefill_throughput 512 / 0.050 → 512 / 0.065 tokens/s. Two measurements:
  two regressions (decode_time, time_to_first_token), each row carrying its tokens/s.
- vae_tiled_decode: decode_time 4.0 → 5.2 s, a VAE decode's only timing (no throughput): one regression.
- decode at context 2048: the candidate runs out of memory on the decode (decode_time and decode_throughput both
  errored): one status change, one unmatched case.
So three regressions and three slower timing cases; counting each throughput as well would say five.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from benchmarks.stores.seed import processes_of
from bundle.schema import Bundle, Result, Status
from tests.verdict_store import m4max_bundle

BASELINE, CANDIDATE = "torch=2.14.1", "torch=2.15.0rc1"
CONTEXT, NEW_TOKENS = 512, 64
LM = {"model": "tiny-lm", "source": "random", "context": CONTEXT, "new_tokens": NEW_TOKENS}
LM_LONG = {**LM, "context": 2048}
VAE = {"model": "tiny-vae", "tiles": 4}
DECODE_S = {False: 2.0, True: 2.6}
TTFT_MS = {False: 50.0, True: 65.0}
VAE_S = {False: 4.0, True: 5.2}
OOM = "MPS backend out of memory (MPS allocated: 60 GiB)"


def _ok(workload: str, params: dict, metric: str, unit: str, samples: list[float]) -> Result:
    return Result(
        workload=workload,
        suite="models",
        params=params,
        dtype="bfloat16",
        compile="eager",
        metric=metric,
        unit=unit,
        status=Status.ok,
        samples=samples,
        processes=processes_of(len(samples), 3),
    )  # worker processes of 3 samples: its replicates


def _results(candidate: bool, rng: np.random.Generator) -> list[Result]:
    def around(value: float) -> list[float]:
        return [float(x) for x in value * (1.0 + rng.uniform(-0.0005, 0.0005, 9))]

    decode_s, ttft_ms = around(DECODE_S[candidate]), around(TTFT_MS[candidate])
    out = [
        _ok("decode", LM, "time_to_first_token", "ms", ttft_ms),
        _ok("decode", LM, "prefill_throughput", "tokens/s", [CONTEXT / (ms / 1e3) for ms in ttft_ms]),
        _ok("decode", LM, "decode_time", "s", decode_s),
        _ok("decode", LM, "decode_throughput", "tokens/s", [NEW_TOKENS / s for s in decode_s]),
        _ok("vae_tiled_decode", VAE, "decode_time", "s", around(VAE_S[candidate])),
    ]
    for metric, unit, value in (("decode_time", "s", 8.0), ("decode_throughput", "tokens/s", NEW_TOKENS / 8.0)):
        out.append(
            Result(
                workload="decode",
                suite="models",
                params=LM_LONG,
                dtype="bfloat16",
                compile="eager",
                metric=metric,
                unit=unit,
                status=Status.error,
                message=OOM,
            )
            if candidate
            else _ok("decode", LM_LONG, metric, unit, around(value))
        )
    return out


def decode_bundles() -> list[Bundle]:
    rng, out = np.random.default_rng(1300), []
    for candidate in (False, True):
        version, channel = ("2.15.0rc1", "rc") if candidate else ("2.14.1", "stable")
        start = datetime(2026, 12, 5, 9, tzinfo=timezone.utc) + timedelta(hours=len(out))
        out.append(m4max_bundle(f"dec0{len(out):028x}", start, version, channel, "mac-d", {}, _results(candidate, rng)))
    return out


def decode_store(engine) -> None:
    from db.ingest.core import ingest_bundle

    for bundle in decode_bundles():
        ingest_bundle(engine, bundle.model_dump_json().encode())
