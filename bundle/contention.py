"""CPU contention as a bundle records it, and when a case's timings are evidence: one rule for every layer.

The collector records, per worker process of each result, the share of the machine's cores that OTHER processes
took while that process ran the case (`Result.contention`, 0–1; null where the interval was too short to say).
A process above THRESHOLD ran contended: on a 2-core box one busy-loop process is 0.5, and torch's worker
threads then wait whole scheduler slices, so a µs-scale op reads 5–300× slower (docs/regressions.md). Its
timing is kept (raw samples are the fact) but is not evidence: a review tests a case on its clean processes
while at least MIN_CLEAN_PROCESSES remain (all of them, for a case timed in fewer), and calls it *unconfirmed
(contended)* otherwise.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field

THRESHOLD = 0.25  # other processes' share of all cores above which a process's timings are not evidence
MIN_CLEAN_PROCESSES = 3  # clean processes a case needs on a side to be tested (or all, when timed in fewer)

Share = Annotated[float, Field(ge=0.0, le=1.0)]

# what collectors before bundle schema 3 wrote on a contended record (one share for the whole case: every
# process of such a record counts as contended with it); its first group is the percentage. db.store.derived.contention
# reads it where such records are stored
OLD_WARNING = r"CPU contention: other processes used (\d+(?:\.\d+)?) %"


def contended(share: float | None) -> bool:
    """Whether a process ran contended (an unmeasured share is not evidence of contention)."""
    return share is not None and share > THRESHOLD


def enough_clean(clean, total):
    """Whether `clean` of a side's `total` processes are enough to test a case on: the one rule, for a count
    (the collector), an array of counts (db.stats.contention) or SQL expressions (db.store.derived.contention:
    enough_clean_sql)."""
    return clean >= np.minimum(MIN_CLEAN_PROCESSES, total)


def enough_clean_sql(clean: str, total: str) -> str:
    """enough_clean in SQL, over two SQL expressions."""
    return f"(({clean}) >= least({MIN_CLEAN_PROCESSES}, {total}))"


def share_range(shares: list[float]) -> str:
    """ "70–84 %" (or "84 %"): how the views and the collector word the shares of contended processes."""
    low, high = round(min(shares) * 100), round(max(shares) * 100)
    return f"{low} %" if low == high else f"{low}–{high} %"
