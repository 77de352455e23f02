"""Change points in a series of per-build medians: asv-style L1 Potts model, solved exactly by dynamic programming.

Minimise  sum over segments of sum |log y_i - median(segment)|  +  gamma × (number of segments),
gamma = 4 · ln(n) · sigma, sigma a robust noise estimate (MAD of first differences / √2, at least 0.1 % in
log space); segments have at least MIN_SIZE points (2, as asv), so one outlier build is not a step.
A reported step must also change the level by at least MIN_CHANGE (5 %). O(n³) is fine for the ≤ few hundred
builds a trend has.
"""

from __future__ import annotations

import math

import numpy as np

MIN_SIZE = 2
MIN_CHANGE = 0.05


def _penalty(logs: np.ndarray) -> float:
    diffs = np.abs(np.diff(logs))
    sigma = max(1.4826 * float(np.median(diffs)) / math.sqrt(2) if len(diffs) else 0.0, 1e-3)
    return 4.0 * math.log(max(len(logs), 2)) * sigma


def _cost(logs: np.ndarray, i: int, j: int) -> float:
    seg = logs[i:j]
    return float(np.abs(seg - np.median(seg)).sum())


def change_points(values: list[float]) -> list[int]:
    """Indices where a new level starts (0-based), for a series of positive values in order."""
    logs = np.log(np.asarray(values, dtype=float))
    n, gamma = len(logs), _penalty(logs)
    if n < 2 * MIN_SIZE:
        return []
    best, start = [0.0] + [math.inf] * n, [0] * (n + 1)
    for j in range(MIN_SIZE, n + 1):
        for i in range(0, j - MIN_SIZE + 1):
            if i != 0 and i < MIN_SIZE:
                continue
            total = best[i] + _cost(logs, i, j) + gamma
            if total < best[j] - 1e-12:
                best[j], start[j] = total, i
    cuts, j = [], n
    while j > 0:
        cuts.append(start[j])
        j = start[j]
    cuts = sorted(c for c in cuts if c > 0)
    return [c for c in cuts if _level_change(logs, cuts, c) >= MIN_CHANGE]


def _level_change(logs: np.ndarray, cuts: list[int], cut: int) -> float:
    edges = [0] + cuts + [len(logs)]
    k = edges.index(cut)
    before, after = np.median(logs[edges[k - 1] : cut]), np.median(logs[cut : edges[k + 1]])
    return abs(math.exp(after - before) - 1.0)
