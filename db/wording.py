"""How a change is said: "1.23× faster", "1.10× less memory", "+19.89 dB". The metric decides the words."""
from __future__ import annotations

import math

from bundle.metrics import Better, metric

_WORDS = {  # quantity -> (better, worse)
    "latency": ("faster", "slower"),
    "throughput": ("faster", "slower"),
    "memory": ("less memory", "more memory"),
    "bandwidth": ("more bandwidth", "less bandwidth"),
    "correctness": ("smaller error", "larger error"),
}
_BINARY = [("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)]


def ratio_words(metric_name: str, oriented: float) -> str:
    """An oriented ratio (> 1 = candidate better) in words for the metric."""
    if not math.isfinite(oriented) or oriented <= 0:
        return "ratio undefined"
    m = metric(metric_name)
    if m.better is Better.neutral:
        return f"{oriented:.2f}× the baseline"
    better, worse = _WORDS.get(m.quantity, ("better", "worse"))
    if round(oriented, 2) == 1.0:
        return f"1.00× (no change in {m.unit})"
    return f"{oriented:.2f}× {better}" if oriented > 1 else f"{1 / oriented:.2f}× {worse}"


def format_value(value: float | None, unit: str) -> str:
    """A value with its unit; bytes in binary units so 8.108 GiB reads as such."""
    if value is None or not math.isfinite(value):
        return "—"
    if unit == "B":
        for name, scale in _BINARY:
            if abs(value) >= scale:
                return f"{value / scale:,.3f} {name}"
        return f"{value:,.0f} B"
    if unit == "calls":
        return f"{value:,.0f} calls"
    return f"{value:,.4g} {unit}"


def difference_words(metric_name: str, diff: float) -> str:
    m = metric(metric_name)
    text = format_value(diff, m.unit)
    text = text if text.startswith("-") or text == "—" else "+" + text
    if m.better is Better.neutral or diff == 0:
        return text
    good = diff > 0 if m.better is Better.higher else diff < 0
    return f"{text} ({'better' if good else 'worse'})"
