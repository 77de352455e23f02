"""Causal LMs for the decode workload: random-weight configs by default, or the user's own local model.

Random configs are built with `from_config` under a per-case seed: a Qwen3-MoE (the published MoE decode
result was a Qwen3-MoE-class model) and a dense Llama. The full-profile sizes follow real models' shapes
(Llama-3.2-1B; a Qwen3-MoE cut to ~1.3 B parameters so a 16 GB Mac can hold it in bfloat16) — a local model
(MPSBENCH_DECODE_MODEL) replaces them for the real thing. Identity (architecture, parameter count, layers,
hidden, experts, top-k) comes from the config, the count from a meta-device build (no memory, no weights).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from collector.workload import Case

_TINY = dict(
    vocab_size=1024,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    max_position_embeddings=4096,
)
RANDOM: dict[str, tuple[str, dict[str, Any]]] = {
    "qwen3-moe-tiny": ("qwen3_moe", dict(_TINY, moe_intermediate_size=32, num_experts=8, num_experts_per_tok=2)),
    "llama-tiny": ("llama", dict(_TINY)),
    "qwen3-moe-1.3b": (
        "qwen3_moe",
        dict(
            vocab_size=151936,
            hidden_size=1024,
            intermediate_size=3072,
            moe_intermediate_size=384,
            num_hidden_layers=12,
            num_attention_heads=16,
            num_key_value_heads=4,
            head_dim=64,
            num_experts=64,
            num_experts_per_tok=8,
            max_position_embeddings=4096,
        ),
    ),
    "llama-1b": (
        "llama",
        dict(
            vocab_size=128256,
            hidden_size=2048,
            intermediate_size=8192,
            num_hidden_layers=16,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=64,
            tie_word_embeddings=True,
            max_position_embeddings=4096,
        ),
    ),
}
EXPERT_COUNT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")
TOP_K_KEYS = ("num_experts_per_tok", "moe_topk")


def random_config(name: str):
    from transformers import AutoConfig

    model_type, kwargs = RANDOM[name]
    return AutoConfig.for_model(model_type, **kwargs)


def local_config(path: Path):
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(str(path), local_files_only=True)


def _first(config: Any, keys: tuple[str, ...]) -> int | None:
    for key in keys:
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def identity(config) -> dict[str, Any]:
    """Case params naming the model; experts/top_k are None for a dense model (not applicable, not zero)."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    text = config.get_text_config(decoder=True)
    experts = _first(text, EXPERT_COUNT_KEYS)
    return {
        "architecture": type(model).__name__,
        "parameters": sum(p.numel() for p in model.parameters()),
        "layers": int(text.num_hidden_layers),
        "hidden": int(text.hidden_size),
        "experts": experts,
        "top_k": _first(text, TOP_K_KEYS) if experts else None,
        "vocab": int(text.vocab_size),
        "experts_impl": "grouped_mm" if experts else None,
    }


@lru_cache(maxsize=None)
def random_identity(name: str) -> dict[str, Any]:
    return identity(random_config(name))


def _load_kwargs(case: Case, dtype) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"dtype": dtype, "attn_implementation": "sdpa"}
    if case.params.get("experts_impl"):
        kwargs["experts_implementation"] = case.params["experts_impl"]
    return kwargs


def build(case: Case, dtype, device, path: Path | None = None):
    """The case's model on `device` in eval mode: from_config with seeded random weights, or from_pretrained
    from a local directory (local_files_only: never a download)."""
    from transformers import AutoModelForCausalLM

    from collector.models.model_workload import seeded_weights

    if path is not None:
        model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, **_load_kwargs(case, dtype))
    else:
        with seeded_weights(case):
            model = AutoModelForCausalLM.from_config(
                random_config(str(case.params["model"])), **_load_kwargs(case, dtype)
            )
    return model.to(device).eval()


def experts_warning(case: Case) -> str | None:
    """Where transformers 5.2x quietly swaps grouped_mm for its per-expert fallback loop (integrations/moe.py),
    the figures are not grouped_mm's: say so on the case."""
    import torch

    if not case.params.get("experts_impl"):
        return None
    if not (hasattr(torch.nn.functional, "grouped_mm") or hasattr(torch, "_grouped_mm")):
        return (
            f"torch {torch.__version__} has neither F.grouped_mm nor torch._grouped_mm: experts ran through "
            "transformers' per-expert fallback loop"
        )
    if case.compile != "eager" and case.dtype != "bfloat16":
        return (
            f"under torch.compile transformers uses grouped_mm for bfloat16 weights only: this {case.dtype} "
            "case ran its experts through the per-expert fallback loop"
        )
    return None
