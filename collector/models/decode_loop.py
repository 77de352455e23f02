"""Greedy decoding with a static KV cache, split so prefill and decode can be timed apart and repeated.

A manual loop rather than `generate()`: the bench times whole calls, so the first token (prefill) and the
N following tokens must be separate calls; and without EOS handling every decode yields exactly N tokens
(what `min_new_tokens = max_new_tokens` asks of generate). The cache is a `StaticCache` of prompt + N
slots in eager and compiled cases alike, so compile is the only difference between the two. Repeating a
pass is exact: `crop` moves the cache's write position back (static layers keep their tensors), so every
prefill starts from an empty cache and every decode from the same prefilled one.
transformers 5.4-5.23 name the cache argument `past_key_values` and their static layers have no `crop` (their
write position is `cumulative_length`); 5.24 renamed it `cache` and added `crop`. Both are handled here: a cache
passed under a name the model does not take would be swallowed by **kwargs and the model would decode without
its history, silently timing something else.
With torch.compile, only the one-token decode step is compiled, as transformers' generate does; the
prefill runs eagerly in both modes.
"""

from __future__ import annotations

from typing import Any, Callable


def cache_argument(model: Any) -> str:
    """The name this transformers version gives the cache argument of a model's forward."""
    import inspect

    params = inspect.signature(model.forward).parameters
    for name in ("cache", "past_key_values"):
        if name in params:
            return name
    raise RuntimeError(
        f"{type(model).__name__}.forward takes neither `cache` nor `past_key_values`: "
        "this transformers version is not supported (needs >= 5.4)"
    )


def rewind(cache: Any, tokens: int) -> None:
    """Move a static cache's write position back by `tokens`, keeping its tensors (static addresses)."""
    layers = cache.layers
    if all(hasattr(layer, "crop") for layer in layers):
        cache.crop(-tokens)
    elif all(hasattr(layer, "cumulative_length") for layer in layers):
        for layer in layers:
            layer.cumulative_length.sub_(tokens)  # in place, as transformers' own crop does
    else:
        raise RuntimeError("this transformers version's static cache can be neither cropped nor rewound (needs >= 5.4)")


class DecodeLoop:
    def __init__(self, model: Any, prompt: Any, new_tokens: int, step: Callable[..., Any] | None = None) -> None:
        from transformers import StaticCache

        self.model, self.prompt, self.new_tokens = model, prompt, new_tokens
        self.step = step or model
        self.cache = StaticCache(config=model.config, max_cache_len=prompt.shape[1] + new_tokens)
        self.first: Any = None
        self._cache_kw = cache_argument(model)

    def _next_token(self, forward: Callable[..., Any], ids: Any) -> Any:
        # logits_to_keep=1: only the last position's logits, as generate computes them
        logits = forward(input_ids=ids, use_cache=True, logits_to_keep=1, **{self._cache_kw: self.cache}).logits
        return logits[:, -1].argmax(-1, keepdim=True)

    def prefill(self) -> Any:
        """The prompt through the model into the cache, up to the first new token (kept for decode)."""
        self.first = self._next_token(self.model, self.prompt)
        return self.first

    def prefill_and_rewind(self) -> Any:
        token = self.prefill()
        rewind(self.cache, self.prompt.shape[1])
        return token

    def decode(self) -> Any:
        """N greedy tokens after the first, each fed back; the cache is rewound to the prompt afterwards."""
        import torch

        if self.first is None:
            raise RuntimeError("decode() needs prefill() first")
        token, tokens = self.first, []
        for _ in range(self.new_tokens):
            token = self._next_token(self.step, token)
            tokens.append(token)
        rewind(self.cache, self.new_tokens)
        return torch.cat(tokens, dim=1)


def compiled_step(model: Any, backend: str) -> Callable[..., Any]:
    """model.forward under torch.compile. Dynamo is reset first so each case's compile_time is a real
    compile, not a hit on graphs an earlier case of this process left behind."""
    import torch

    torch._dynamo.reset()
    return torch.compile(model.forward, backend=backend, dynamic=False)
