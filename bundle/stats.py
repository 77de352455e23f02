"""Summary statistics derived from raw samples (the samples are what is kept; this is recomputable)."""

from __future__ import annotations

import math
import statistics
from typing import Annotated, Mapping

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
REL_TOL, ABS_TOL = 1e-6, 1e-12  # how closely a stated summary must match the derived one
# a summary's quartiles, by name: the one definition every engine reads (here in Python for the collector's own
# tables and stopping rule; numpy in db.stats.lists for a side's pooled samples; SQL generated from it at ingest)
QUARTILES = {"median": 0.5, "p25": 0.25, "p75": 0.75}


class Summary(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    n: int
    median: FiniteFloat
    mean: FiniteFloat
    min: FiniteFloat
    max: FiniteFloat
    p25: FiniteFloat
    p75: FiniteFloat
    stdev: FiniteFloat | None  # None for n == 1: one sample has no spread

    @property
    def iqr(self) -> float:
        return self.p75 - self.p25

    def agrees(self, other: "Summary") -> bool:
        mine, theirs = self.model_dump(), other.model_dump()
        col = lambda d: {k: np.array([np.nan if d[k] is None else d[k]], dtype=float) for k in d}  # noqa: E731
        return bool(agree(col(mine), col(theirs))[0])


def agree(stated: Mapping[str, np.ndarray], derived: Mapping[str, np.ndarray]) -> np.ndarray:
    """Per row: does the stated summary match the derived one? Columns by Summary field, NaN for None; the
    ingest calls this on whole columns. math.isclose's test: |a - b| <= max(rel * max(|a|, |b|), abs)."""
    ok = np.asarray(stated["n"]) == np.asarray(derived["n"])
    for k in Summary.model_fields:
        if k == "n":
            continue
        a, b = np.asarray(stated[k], dtype=float), np.asarray(derived[k], dtype=float)
        with np.errstate(invalid="ignore"):
            close = np.abs(a - b) <= np.maximum(REL_TOL * np.maximum(np.abs(a), np.abs(b)), ABS_TOL)
        ok &= close | (np.isnan(a) & np.isnan(b))
    return ok


def _quantile(ordered: list[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default method)."""
    pos = (len(ordered) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summarize(samples: list[float]) -> Summary:
    """Raises ValueError where a figure is not a finite double (the sum or spread of huge samples overflows)."""
    if not samples:
        raise ValueError("cannot summarize zero samples")
    ordered = sorted(samples)
    try:
        return Summary(
            n=len(ordered),
            **{name: _quantile(ordered, q) for name, q in QUARTILES.items()},
            mean=statistics.fmean(ordered),
            min=ordered[0],
            max=ordered[-1],
            stdev=statistics.stdev(ordered) if len(ordered) > 1 else None,
        )
    except (OverflowError, ValueError):
        raise ValueError("the samples' mean or spread is not a finite number (they overflow a double)") from None
