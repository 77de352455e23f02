"""Summary statistics derived from raw samples (the samples are what is kept; this is recomputable)."""
from __future__ import annotations

import math
import statistics

from pydantic import BaseModel, ConfigDict


class Summary(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    n: int
    median: float
    mean: float
    min: float
    max: float
    p25: float
    p75: float
    stdev: float | None  # None for n == 1: one sample has no spread

    @property
    def iqr(self) -> float:
        return self.p75 - self.p25

    def agrees(self, other: "Summary", rel: float = 1e-6) -> bool:
        mine, theirs = self.model_dump(), other.model_dump()
        return all(_close(mine[k], theirs[k], rel) for k in mine)


def _close(a: float | None, b: float | None, rel: float) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


def _quantile(ordered: list[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default method)."""
    pos = (len(ordered) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summarize(samples: list[float]) -> Summary:
    if not samples:
        raise ValueError("cannot summarize zero samples")
    ordered = sorted(samples)
    return Summary(
        n=len(ordered),
        median=_quantile(ordered, 0.5),
        mean=statistics.fmean(ordered),
        min=ordered[0],
        max=ordered[-1],
        p25=_quantile(ordered, 0.25),
        p75=_quantile(ordered, 0.75),
        stdev=statistics.stdev(ordered) if len(ordered) > 1 else None,
    )
