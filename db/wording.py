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
    return ratio_words_many(metric_name, [float(oriented)])[0]


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


def ratio_words_many(metric_name: str, oriented: list[float]) -> list[str]:
    """ratio_words for many values of one metric (the Compare table's 10⁴–10⁵ rows), the metric looked up once.

    "No change" is said exactly when the factor shown would read 1.00×, so the words never say "1.00× slower"."""
    m = metric(metric_name)
    if m.better is Better.neutral:
        return [f"{o:.2f}× the baseline" if 0 < o < math.inf else "ratio undefined" for o in oriented]
    better, worse = _WORDS.get(m.quantity, ("better", "worse"))
    same = "1.00× (no change)"
    out = []
    for o in oriented:
        if not 0 < o < math.inf:  # NaN fails every comparison
            out.append("ratio undefined")
            continue
        shown = f"{o:.2f}" if o >= 1 else f"{1 / o:.2f}"
        out.append(same if shown == "1.00" else f"{shown}× {better}" if o > 1 else f"{shown}× {worse}")
    return out
