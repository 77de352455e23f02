"""Count F.pad calls of a region with a TorchFunctionMode (the Wan VAE's causal convs pad before each conv).

The published Wan2.2 decode made 8,764 constant-pad calls over 28 tiles; how many a decode makes is what
multiplies any per-call pad cost or leak. A mode sees every call that reaches torch's function dispatch —
F.pad from Python and torch._C._nn.pad called directly — once each: while the mode handles F.pad, it is
disabled, so the C op F.pad calls inside is not counted a second time. The count runs in its own pass:
the mode's Python hook on every torch call would distort any timing taken under it.
"""

from __future__ import annotations

from typing import Any, Callable


def count_pads(fn: Callable[[], Any]) -> int:
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    pads = (F.pad, torch._C._nn.pad)

    class PadCounter(TorchFunctionMode):
        calls = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):  # torch's protocol
            if func in pads:
                PadCounter.calls += 1
            return func(*args, **(kwargs or {}))

    with PadCounter():
        fn()
    return PadCounter.calls
