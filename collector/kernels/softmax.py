"""Last-dim softmax over vocab-sized rows: the sampling path of LLM decode (PR #196071's shapes).

Rows {1, 4, 8} x vocab of Llama-3 / DeepSeek-V3 / Qwen / GLM / gpt-oss tokenizers, plus Whisper's 5 x 51866.
Bytes per call = the input read once + the output written once (what a fused kernel must move).
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
from collector.workload import Bench, Case

VOCABS = (128256, 129280, 151936, 154880, 201088)
ROWS = (1, 4, 8)
WHISPER_SHAPE = (5, 51866)  # the extra shape benchmarked in the PR
LOGIT_SCALE = 4.0  # logits spread like a real model's, so the max-subtraction matters


def softmax_bytes(rows: int, vocab: int, itemsize: int) -> int:
    return 2 * rows * vocab * itemsize


class Softmax(KernelFamily):
    name = "softmax"
    description = "F.softmax(logits, dim=-1) over vocab-sized rows (LLM sampling path)"
    metrics = TIMING_METRICS + BANDWIDTH_METRICS + CORRECTNESS_METRICS
    default_dtypes = ("float32", "bfloat16", "float16")
    quick_dtypes = ("float32", "bfloat16")

    def specs(self, profile: str) -> list[dict[str, Any]]:
        if profile == "quick":
            shapes = [(1, 128256), (8, 151936), WHISPER_SHAPE]
        else:
            shapes = [(r, v) for r in ROWS for v in VOCABS] + [WHISPER_SHAPE]
        return [{"rows": r, "vocab": v} for r, v in shapes]

    def run(self, case: Case, bench: Bench) -> None:
        import torch.nn.functional as F

        softmax = require_op(F, "softmax", "torch.nn.functional.softmax")
        dtype = torch_dtype(case.dtype)
        rows, vocab = int(case.params["rows"]), int(case.params["vocab"])
        logits_cpu = randn((rows, vocab), dtype, generator(case), LOGIT_SCALE)
        logits = logits_cpu.to(bench.device)
        call = lambda: softmax(logits, dim=-1)  # noqa: E731
        bench.time_op(call, bytes_per_call=softmax_bytes(rows, vocab, logits.element_size()))
        bench.correctness(call(), softmax_reference(logits_cpu))


def softmax_reference(logits):
    """exp(x - max) / sum in float64 on the CPU, written out so it shares no kernel with the op measured."""
    import torch

    x = logits.to(torch.float64)
    e = (x - x.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)
