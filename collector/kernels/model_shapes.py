"""Projection and attention shapes of real decoder models, derived from their config numbers.

Only the config facts are written down (hidden, intermediate, heads, kv heads, head_dim, vocab, from each
model's config.json); every (K, N) is computed here, so a typo cannot hide in a hand-copied shape list.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelConfig:
    name: str
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int


MODELS: tuple[ModelConfig, ...] = (
    ModelConfig("Llama-3.2-1B", 2048, 8192, 32, 8, 64, 128256),
    ModelConfig("Llama-3.2-3B", 3072, 8192, 24, 8, 128, 128256),
    ModelConfig("Llama-3.1-8B", 4096, 14336, 32, 8, 128, 128256),
    ModelConfig("Qwen3-0.6B", 1024, 3072, 16, 8, 128, 151936),
    ModelConfig("Qwen3-1.7B", 2048, 6144, 16, 8, 128, 151936),
    ModelConfig("Qwen3-4B", 2560, 9728, 32, 8, 128, 151936),
    ModelConfig("Qwen3-8B", 4096, 12288, 32, 8, 128, 151936),
    ModelConfig("Mistral-7B", 4096, 14336, 32, 8, 128, 32768),
    ModelConfig("gpt-oss-20b", 2880, 2880, 64, 8, 64, 201088),
)
PROJECTIONS = ("q", "k_v", "o", "gate_up", "down", "lm_head")


def projection_shapes(cfg: ModelConfig) -> dict[str, tuple[int, int]]:
    """(K = in_features, N = out_features) of each linear layer of one decoder layer, plus the lm_head."""
    q_width, kv_width = cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    return {
        "q": (cfg.hidden, q_width),
        "k_v": (cfg.hidden, kv_width),
        "o": (q_width, cfg.hidden),
        "gate_up": (cfg.hidden, cfg.intermediate),
        "down": (cfg.intermediate, cfg.hidden),
        "lm_head": (cfg.hidden, cfg.vocab),
    }


@dataclass(frozen=True)
class LinearShape:
    K: int
    N: int
    users: tuple[tuple[str, str], ...]  # (model, projection), in table order; the first names the case

    @property
    def used_by(self) -> str:
        return " ".join(f"{m}:{p}" for m, p in self.users)


def linear_shapes(models: tuple[ModelConfig, ...] = MODELS) -> list[LinearShape]:
    """Unique (K, N) over all models' projections, keeping every model/projection that uses each."""
    users: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for cfg in models:
        for proj, kn in projection_shapes(cfg).items():
            users.setdefault(kn, []).append((cfg.name, proj))
    return [LinearShape(k, n, tuple(u)) for (k, n), u in users.items()]


@dataclass(frozen=True)
class AttentionShape:
    heads: int
    kv_heads: int
    head_dim: int
    users: tuple[str, ...]


def attention_shapes(models: tuple[ModelConfig, ...] = MODELS) -> list[AttentionShape]:
    """Unique (heads, kv_heads, head_dim) over the models, with the models that use each."""
    users: dict[tuple[int, int, int], list[str]] = {}
    for cfg in models:
        users.setdefault((cfg.heads, cfg.kv_heads, cfg.head_dim), []).append(cfg.name)
    return [AttentionShape(h, kv, d, tuple(u)) for (h, kv, d), u in users.items()]


def model(name: str) -> ModelConfig:
    for cfg in MODELS:
        if cfg.name == name:
            return cfg
    raise KeyError(f"unknown model {name!r}; known: {', '.join(m.name for m in MODELS)}")
