"""Reading what went wrong in a case: the MPS CPU-fallback warning and not-implemented / unsupported errors.

The texts are PyTorch's own (see /work/shared/reference/mps-facts.md); matching them is the only way a
collector can tell "this build cannot run it" from "it broke".
"""

from __future__ import annotations

import re
import warnings

from collector.workload import Unsupported

FALLBACK = re.compile(
    r"The operator '([^']+)' is not currently supported on the MPS backend and will fall back "
    r"to run on the CPU"
)
UNSUPPORTED = [
    re.compile(r"does not have support for that dtype"),  # FP8 on MPS before ~2.15
    re.compile(r"not currently implemented for the MPS device"),  # points at issue 141287
    re.compile(r"github\.com/pytorch/pytorch/issues/141287"),
    re.compile(r"not implemented for '[A-Za-z0-9_]+'"),  # "addmm_impl_cpu_" not implemented for 'Half'
    re.compile(r"Could not run '[^']+' with arguments from the '[A-Za-z]+' backend"),
    re.compile(r"is not supported on MPS|not supported on the MPS backend|MPS does not support"),
]


def fallback_ops(caught: list[warnings.WarningMessage]) -> list[str]:
    """Op names of every CPU-fallback warning, in first-seen order."""
    ops: list[str] = []
    for w in caught:
        for op in FALLBACK.findall(str(w.message)):
            if op not in ops:
                ops.append(op)
    return ops


def other_warnings(caught: list[warnings.WarningMessage], limit: int = 5) -> list[str]:
    """User/runtime warnings raised during the case (not the fallback ones), deduplicated, first `limit`."""
    out: list[str] = []
    for w in caught:
        text = str(w.message).strip()
        if FALLBACK.search(text) or not issubclass(w.category, (UserWarning, RuntimeWarning)):
            continue
        line = f"{w.category.__name__} during the case: {text[:500]}"
        if line not in out:
            out.append(line)
    return out[:limit]


def is_unsupported(exc: BaseException) -> bool:
    if isinstance(exc, (Unsupported, NotImplementedError)):
        return True
    text = str(exc)
    return any(p.search(text) for p in UNSUPPORTED)


def describe(exc: BaseException) -> str:
    text = str(exc).strip() or "(no message)"
    return f"{type(exc).__name__}: {text}"[:5000]
