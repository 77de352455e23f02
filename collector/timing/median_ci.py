"""Distribution-free 95 % confidence interval of a median from order statistics.

With the samples sorted, [x_(r), x_(n+1-r)] (1-based ranks) covers the true median with probability
1 - 2·P(B ≤ r-1), B ~ Binomial(n, ½), whatever the distribution. We take the largest r whose coverage is still
≥ 1 - alpha: exact binomial sums for n ≤ 300, the normal approximation above (accurate to about one rank).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959963984540054
EXACT_UP_TO = 300


@dataclass(frozen=True)
class MedianCI:
    low: float
    high: float
    median: float
    rank: int  # r: the 1-based rank of the lower bound

    @property
    def relative_half_width(self) -> float:
        """Half the interval's width as a fraction of the median (inf when the median is 0)."""
        if self.median == 0:
            return math.inf
        return (self.high - self.low) / 2 / abs(self.median)


def lower_rank(n: int, alpha: float = 0.05) -> int | None:
    """Largest 1-based r with 2·P(B ≤ r-1) ≤ alpha; None when even [min, max] covers less than 1-alpha."""
    if n > EXACT_UP_TO:
        return max(1, math.floor(n / 2 - Z95 * math.sqrt(n) / 2))
    total, tail, r = 2**n, 0, 0
    while r < (n + 1) // 2:
        tail += math.comb(n, r)  # 2^n · P(B ≤ r)
        if 2 * tail > alpha * total:
            break
        r += 1
    return r if r >= 1 else None


def median_ci(samples: list[float], alpha: float = 0.05) -> MedianCI | None:
    """The order-statistic CI of the median, or None when n is too small (n ≤ 5 for 95 %)."""
    n = len(samples)
    r = lower_rank(n, alpha) if n else None
    if r is None:
        return None
    ordered = sorted(samples)
    median = (ordered[(n - 1) // 2] + ordered[n // 2]) / 2
    return MedianCI(low=ordered[r - 1], high=ordered[n - r], median=median, rank=r)
