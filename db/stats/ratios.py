"""A case's change as a ratio, and the threshold's units: each conversion written once, so the Compare table,
the CIs, the rules, the words and the views read the same floats.

A ratio is candidate / baseline of the medians; oriented, > 1 is better (a lower-is-better metric's ratio is
inverted). Thresholds and bounds are fractions inside (0.05); percent is what a person types and reads."""

from __future__ import annotations

import numpy as np


def orient(ratio, lower):
    """The ratio oriented so that > 1 is the candidate better (inverted where lower is better)."""
    return np.where(lower, 1.0 / ratio, ratio)


def oriented_interval(low, high, lower) -> tuple[np.ndarray, np.ndarray]:
    """A ratio's interval oriented like the ratio: inverting swaps its ends."""
    return orient(np.where(lower, high, low), lower), orient(np.where(lower, low, high), lower)


def factor(oriented):
    """The factor a person reads (≥ 1 either way: 0.5 reads 2× worse)."""
    return np.where(oriented >= 1, oriented, 1.0 / oriented)


def worse_fraction(oriented):
    """How much worse the candidate is, as a fraction (0.25: 25 % slower); < 0 where it is better."""
    return 1.0 / oriented - 1.0


def as_fraction(percent):
    return percent / 100.0


def as_percent(fraction):
    return 100.0 * fraction
