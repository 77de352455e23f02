"""F.scaled_dot_product_attention at the GQA shapes of the models in collector.kernels.model_shapes.

Decode: q_len 1 against kv lengths 512 / 2048 / 8192 (not causal: one query sees the whole cache). Prefill:
q_len = kv_len ∈ {512, 2048}, causal. Grouped-query attention uses enable_gqa=True (present since torch 2.5;
kv heads are not expanded in memory), so the kernel sees the real kv tensor sizes. Batch 1.
Bytes per call (q, k, v read + output written) are given for decode only: it is bound by reading the cache.
"""

from __future__ import annotations

from typing import Any

from collector.kernels.family import (
    BANDWIDTH_METRICS,
    CORRECTNESS_METRICS,
    TIMING_METRICS,
    KernelFamily,
    generator,
    randn,
    require_op,
    torch_dtype,
)
from collector.kernels.model_shapes import AttentionShape, attention_shapes
from collector.workload import Bench, Case, Unsupported

DECODE_KV = (512, 2048, 8192)
PREFILL_LEN = (512, 2048)


def _params(shape: AttentionShape, mode: str, q_len: int, kv_len: int) -> dict[str, Any]:
    return {
        "mode": mode,
        "q_len": q_len,
        "kv_len": kv_len,
        "heads": shape.heads,
        "kv_heads": shape.kv_heads,
        "head_dim": shape.head_dim,
        "causal": mode == "prefill",
        "gqa": "enable_gqa",
        "model": shape.users[0],
        "used_by": " ".join(shape.users),
    }


def attention_bytes(heads: int, kv_heads: int, head_dim: int, q_len: int, kv_len: int, itemsize: int) -> int:
    return (2 * heads * q_len + 2 * kv_heads * kv_len) * head_dim * itemsize


class Sdpa(KernelFamily):
    name = "sdpa"
    description = "F.scaled_dot_product_attention (enable_gqa) for decode and causal prefill at real GQA shapes"
    metrics = TIMING_METRICS + BANDWIDTH_METRICS + CORRECTNESS_METRICS
    default_dtypes = ("bfloat16",)

    def specs(self, profile: str) -> list[dict[str, Any]]:
        shapes = attention_shapes()
        if profile == "quick":
            small, wide = next(s for s in shapes if s.heads == 16), shapes[0]
            return [
                _params(small, "decode", 1, 512),
                _params(wide, "decode", 1, 512),
                _params(small, "prefill", 256, 256),
            ]
        decode = [_params(s, "decode", 1, kv) for s in shapes for kv in DECODE_KV]
        return decode + [_params(s, "prefill", n, n) for s in shapes for n in PREFILL_LEN]

    def run(self, case: Case, bench: Bench) -> None:
        import torch.nn.functional as F

        sdpa = require_op(F, "scaled_dot_product_attention", "torch.nn.functional.scaled_dot_product_attention")
        dtype = torch_dtype(case.dtype)
        p = case.params
        heads, kv_heads, dim, q_len, kv_len = (int(p[x]) for x in ("heads", "kv_heads", "head_dim", "q_len", "kv_len"))
        gen = generator(case)
        q_cpu = randn((1, heads, q_len, dim), dtype, gen)
        k_cpu, v_cpu = (randn((1, kv_heads, kv_len, dim), dtype, gen) for _ in range(2))
        q, k, v = (t.to(bench.device) for t in (q_cpu, k_cpu, v_cpu))
        causal = bool(p["causal"])
        call = lambda: sdpa(q, k, v, is_causal=causal, enable_gqa=True)  # noqa: E731
        probe_enable_gqa(call)
        nbytes = attention_bytes(heads, kv_heads, dim, q_len, kv_len, q.element_size())
        bench.time_op(call, bytes_per_call=nbytes if p["mode"] == "decode" else None)
        bench.correctness(call(), attention_reference(q_cpu, k_cpu, v_cpu, causal))


def probe_enable_gqa(call) -> None:
    """A torch without the enable_gqa keyword cannot run these cases as specified: unsupported."""
    try:
        call()
    except TypeError as exc:
        if "enable_gqa" in str(exc):
            raise Unsupported(f"scaled_dot_product_attention has no enable_gqa: {exc}") from exc
        raise


def attention_reference(q, k, v, causal: bool):
    """float64 softmax(q k^T / sqrt(d)) v on the CPU, one kv head (and its query group) at a time."""
    import torch

    heads, kv_heads, q_len, dim = q.shape[1], k.shape[1], q.shape[2], q.shape[3]
    group, kv_len = heads // kv_heads, k.shape[2]
    out = torch.empty(q.shape, dtype=torch.float64)
    mask = torch.ones(q_len, kv_len, dtype=torch.bool).tril(kv_len - q_len) if causal else None
    for g in range(kv_heads):
        qg = q[0, g * group : (g + 1) * group].to(torch.float64)
        scores = qg @ k[0, g].to(torch.float64).T / dim**0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        out[0, g * group : (g + 1) * group] = torch.softmax(scores, dim=-1) @ v[0, g].to(torch.float64)
    return out
