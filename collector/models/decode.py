"""decode: a causal LM's prefill and greedy decode, eager and torch.compile (the published MoE result was
38.7 → 51.7 tokens/s at context 512 on an M3 Ultra with torch.compile).

Per case, each in its own record: first_call_time (s, the first prefill after loading: lazy init),
time_to_first_token (ms) and prefill_throughput (prompt tokens/s) from the same prefill samples,
compile_time (s, inductor cases: the first decode, compile included), decode_time (s per N new tokens)
and decode_throughput (N / decode_time, tokens/s), and the three memory peaks over one decode.
Prompts are seeded random token ids. MPSBENCH_DECODE_MODEL (comma list of local directories or cached hub
ids) replaces the random-weight models with the user's own.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping

from collector.kernels.family import generator, torch_dtype
from collector.models import causal_lm
from collector.models.decode_loop import DecodeLoop, compiled_step
from collector.models.locate import LocalModel, local_models, require_named
from collector.models.model_workload import MEMORY_METRICS, ModelWorkload
from collector.workload import Bench, Case

MODEL_VARIABLE = "MPSBENCH_DECODE_MODEL"
PROFILE_MODELS = {"quick": ("qwen3-moe-tiny", "llama-tiny"), "full": ("qwen3-moe-1.3b", "llama-1b")}
CONTEXTS = {"quick": (32,), "full": (512, 2048)}
NEW_TOKENS = {"quick": 8, "full": 128}
QUICK_COMPILED = ("qwen3-moe-tiny",)  # inductor takes ~30 s per model on a 2-core CPU: one model in quick


def _local_identity(model: LocalModel) -> dict[str, Any]:
    base: dict[str, Any] = {"model": model.name, "source": "local"}
    if model.path is None:  # listed anyway: run() turns it into an error record naming what was looked for
        return base
    return base | causal_lm.identity(causal_lm.local_config(model.path))


class Decode(ModelWorkload):
    name = "decode"
    description = "causal-LM prefill + greedy decode (static cache), eager vs torch.compile: tokens/s, TTFT"
    metrics = (
        "first_call_time",
        "time_to_first_token",
        "prefill_throughput",
        "compile_time",
        "decode_time",
        "decode_throughput",
        *MEMORY_METRICS,
    )
    default_dtypes = ("bfloat16",)

    def models(self, profile: str) -> list[dict[str, Any]]:
        local = local_models(MODEL_VARIABLE)
        if local:
            return [_local_identity(m) for m in local]
        return [{"model": n, "source": "random"} | causal_lm.random_identity(n) for n in PROFILE_MODELS[profile]]

    def specs(self, profile: str) -> list[dict[str, Any]]:
        return [
            m | {"context": c, "new_tokens": NEW_TOKENS[profile]}
            for m in self.models(profile)
            for c in CONTEXTS[profile]
        ]

    def compile_modes_for(self, params: Mapping[str, Any], profile: str) -> tuple[str, ...]:
        if profile == "quick" and params["source"] == "random" and params["model"] not in QUICK_COMPILED:
            return ("eager",)
        return ("eager", "inductor")

    def run(self, case: Case, bench: Bench) -> None:
        import torch

        local = case.params["source"] == "local"
        path = require_named(str(case.params["model"]), MODEL_VARIABLE) if local else None
        model = causal_lm.build(case, torch_dtype(case.dtype), bench.device, path)
        warning = causal_lm.experts_warning(case)
        if warning:
            bench.warn(warning)
        context, new_tokens = int(case.params["context"]), int(case.params["new_tokens"])
        step = compiled_step(model, case.compile) if case.compile != "eager" else None
        loop = DecodeLoop(model, seeded_prompt(case, model, context, bench.device), new_tokens, step)
        with torch.inference_mode(), warnings.catch_warnings():
            # transformers' MoE dispatch calls an lru_cache'd version check that dynamo traces through; the
            # warning is about transformers' code, not about this case's figures
            warnings.filterwarnings("ignore", message=r"Dynamo detected a call to a `functools\.lru_cache`")
            measure(bench, loop, context, new_tokens, step is not None)


def seeded_prompt(case: Case, model: Any, context: int, device: Any) -> Any:
    """Random token ids from the case's seed: the same prompt on every device, dtype and compile mode."""
    import torch

    vocab = model.config.get_text_config(decoder=True).vocab_size
    return torch.randint(0, vocab, (1, context), generator=generator(case)).to(device)


def measure(bench: Bench, loop: DecodeLoop, context: int, new_tokens: int, compiled: bool) -> None:
    """The passes, in order: warm-up apart, prefill timing, decode timing, then memory on its own."""
    bench.time_once(
        loop.prefill_and_rewind,
        metric="first_call_time",
        note=f"first prefill of {context} tokens after loading the model",
    )
    prefill_s = bench.time_region(loop.prefill_and_rewind, metric="time_to_first_token")
    bench.record("prefill_throughput", [context / s for s in prefill_s])
    loop.prefill()
    if compiled:
        bench.time_once(
            loop.decode,
            metric="compile_time",
            note=f"first decode of {new_tokens} tokens: torch.compile of the decode step plus the "
            "steps themselves (inductor's on-disk cache can shorten a repeat run)",
        )
    decode_s = bench.time_region(loop.decode, metric="decode_time")
    bench.record("decode_throughput", [new_tokens / s for s in decode_s])
    bench.memory(loop.decode)
