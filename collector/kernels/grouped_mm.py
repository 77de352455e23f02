"""MoE expert projection: routed tokens through grouped_mm with offsets computed on the device (PR #194933).

One call = what transformers' grouped_mm experts path does for one projection: router top-k -> sort by
expert -> histc -> cumsum to int32 offsets (all on the device, no host sync) -> gather rows ->
F.grouped_mm (torch._grouped_mm before it existed) -> rows back to (token, k) order. Variant
"loop_cpu_offsets" is the baseline the PR removed: the offsets are copied to the CPU and the experts are
looped over with one mm each. Weights are stored (experts, N, K) as transformers does and passed transposed.
The "down" projection gathers token rows of width moe_intermediate in place of real activations: same shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from collector.kernels.family import (
    CORRECTNESS_METRICS,
    TIMING_METRICS,
    KernelFamily,
    first_available,
    generator,
    randn,
    torch_dtype,
)
from collector.workload import Bench, Case

TOKENS = (1, 8, 64, 512)
VARIANTS = ("grouped_mm", "loop_cpu_offsets")
QUICK_TOKENS = (1, 64)


@dataclass(frozen=True)
class MoeConfig:
    model: str
    experts: int
    top_k: int
    hidden: int
    moe_intermediate: int

    def projections(self) -> dict[str, tuple[int, int]]:
        """(K, N) per expert: gate and up fused (as transformers stores gate_up_proj), then down."""
        return {"gate_up": (self.hidden, 2 * self.moe_intermediate), "down": (self.moe_intermediate, self.hidden)}


MOE_MODELS = (MoeConfig("Qwen3-30B-A3B", 128, 8, 2048, 768), MoeConfig("Qwen2-MoE", 60, 4, 2048, 1408))
TINY_MOE = MoeConfig("tiny-moe", 8, 2, 64, 32)  # quick: same code path, seconds not minutes on a CPU


def _params(cfg: MoeConfig, projection: str, tokens: int, variant: str) -> dict[str, Any]:
    k, n = cfg.projections()[projection]
    return {
        "model": cfg.model,
        "experts": cfg.experts,
        "top_k": cfg.top_k,
        "projection": projection,
        "K": k,
        "N": n,
        "tokens": tokens,
        "variant": variant,
    }


class GroupedMm(KernelFamily):
    name = "grouped_mm"
    description = "MoE expert projection: device-side routing offsets + grouped_mm vs a CPU-offsets expert loop"
    metrics = TIMING_METRICS + CORRECTNESS_METRICS
    default_dtypes = ("bfloat16",)

    def specs(self, profile: str) -> list[dict[str, Any]]:
        if profile == "quick":
            return [_params(TINY_MOE, "gate_up", t, v) for t in QUICK_TOKENS for v in VARIANTS]
        return [
            _params(cfg, p, t, v) for cfg in MOE_MODELS for p in ("gate_up", "down") for t in TOKENS for v in VARIANTS
        ]

    def run(self, case: Case, bench: Bench) -> None:
        import torch
        import torch.nn.functional as F

        grouped = first_available(
            [(F, "grouped_mm", "torch.nn.functional.grouped_mm"), (torch, "_grouped_mm", "torch._grouped_mm")]
        )
        top_k, experts = int(case.params["top_k"]), int(case.params["experts"])
        x_cpu, logits_cpu, w_cpu = moe_inputs(case)
        x, logits, w = (t.to(bench.device) for t in (x_cpu, logits_cpu, w_cpu))
        route = lambda: routed_rows(x, logits, top_k, experts)  # noqa: E731
        if case.params["variant"] == "grouped_mm":
            call = lambda: experts_grouped(grouped, *route(), w)  # noqa: E731
        else:
            call = lambda: experts_loop_cpu_offsets(*route(), w)  # noqa: E731
        bench.time_op(call)
        bench.correctness(call(), expert_loop_reference(x_cpu, logits_cpu, w_cpu, top_k))


def moe_inputs(case: Case):
    """Seeded CPU tokens (tokens, K), router logits (tokens, experts) and expert weights (experts, N, K); both
    variants of a shape get the same ones."""
    import torch

    dtype = torch_dtype(case.dtype)
    experts, k, n, tokens = (int(case.params[x]) for x in ("experts", "K", "N", "tokens"))
    gen = generator(case, ignore=("variant",))
    x = randn((tokens, k), dtype, gen)
    logits = randn((tokens, experts), torch.float32, gen)  # fp32 router logits: no top-k ties
    return x, logits, randn((experts, n, k), dtype, gen, k**-0.5)


def routed_rows(x, logits, top_k: int, experts: int):
    """Rows sorted by expert, the sort permutation and int32 cumulative offsets, all left on the device."""
    import torch

    expert_ids = torch.topk(logits, top_k, dim=-1).indices.reshape(-1)
    sorted_ids, perm = torch.sort(expert_ids)
    # histc has no integer kernel on CPU/MPS (transformers casts the same way)
    counts_input = sorted_ids.float() if x.device.type in ("cpu", "mps") else sorted_ids.int()
    counts = torch.histc(counts_input, bins=experts, min=0, max=experts - 1)
    offsets = torch.cumsum(counts, dim=0, dtype=torch.int32)
    return x[perm // top_k], perm, offsets


def _unsort(rows_by_expert, perm):
    import torch

    out = torch.empty_like(rows_by_expert)
    out[perm] = rows_by_expert
    return out


def experts_grouped(grouped, rows, perm, offsets, w):
    return _unsort(grouped(rows, w.transpose(-2, -1), offs=offsets), perm)


def experts_loop_cpu_offsets(rows, perm, offsets, w):
    """The pre-PR baseline: offsets copied to the host (a device sync), then one mm per non-empty expert."""
    import torch

    ends = offsets.tolist()
    out = torch.empty(rows.shape[0], w.shape[1], dtype=rows.dtype, device=rows.device)
    start = 0
    for expert, end in enumerate(ends):
        if end > start:
            out[start:end] = rows[start:end] @ w[expert].T
        start = end
    return _unsort(out, perm)


def expert_loop_reference(x, logits, w, top_k: int):
    """CPU float64: each (token, k) pair times its expert's weight, in (token, k) order."""
    import torch

    expert_ids = torch.topk(logits, top_k, dim=-1).indices.reshape(-1)
    rows = x.to(torch.float64).repeat_interleave(top_k, dim=0)
    out = torch.empty(rows.shape[0], w.shape[1], dtype=torch.float64)
    for expert in expert_ids.unique().tolist():
        chosen = expert_ids == expert
        out[chosen] = rows[chosen] @ w[expert].to(torch.float64).T
    return out
