"""How a change is said: "1.23× faster", "1.10× less memory", "+19.89 dB". The metric decides the words."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from bundle.metrics import Better, metric
from bundle.units import binary_bytes
from db.query.key_codes import groups
from db.stats.ratios import factor

_WORDS = {  # quantity -> (better, worse)
    "latency": ("faster", "slower"),
    "throughput": ("faster", "slower"),
    "memory": ("less memory", "more memory"),
    "bandwidth": ("more bandwidth", "less bandwidth"),
    "correctness": ("smaller error", "larger error"),
}


def format_value(value: float | None, unit: str) -> str:
    """A value with its unit; bytes in binary units so 8.108 GiB reads as such."""
    if value is None or not math.isfinite(value):
        return "—"
    if unit == "B":
        scaled, name = binary_bytes(value)
        return f"{scaled:,.0f} B" if name == "B" else f"{scaled:,.3f} {name}"
    if unit == "calls":
        return f"{value:,.0f} calls"
    if unit == "1":  # dimensionless (an error ratio): no unit to print after it
        return f"{value:,.4g}"
    return f"{value:,.4g} {unit}"


def with_side_values(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` (case rows with baseline_median, candidate_median, unit) with each side's median as words in its unit:
    `baseline_value`, `candidate_value` (format_value), as Compare and Regressions show them."""
    for side in ("baseline", "candidate"):
        frame[f"{side}_value"] = [format_value(v, u) for v, u in zip(frame[f"{side}_median"], frame["unit"])]
    return frame


def ci_words(low: float, high: float, centre: float) -> str:
    """A 95 % CI of an oriented ratio in the headline's direction: "1.05–1.31×" beside "1.20× faster",
    "1.02–1.44×" beside "1.10× slower" (a CI below 1 is said as its reciprocal, as the headline is)."""
    if centre >= 1 or not (low > 0 and high > 0):
        return f"{low:.2f}–{high:.2f}×"
    return f"{1 / high:.2f}–{1 / low:.2f}×"


def difference_words(metric_name: str, diff: float) -> str:
    m = metric(metric_name)
    text = format_value(diff, m.unit)
    text = text if text.startswith("-") or text == "—" else "+" + text
    if m.better is Better.neutral or diff == 0:
        return text
    good = diff > 0 if m.better is Better.higher else diff < 0
    return f"{text} ({'better' if good else 'worse'})"


def ratio_words(metric_name: str, oriented: Sequence[float] | np.ndarray) -> pa.Array:
    """Oriented ratios (> 1 = candidate better) of one metric in words ("1.23× faster"), the metric looked up
    once: whole-array work for the Compare table's 10⁴–10⁵ rows that stays in Arrow (a pandas str column wraps
    it without a copy; `.to_pylist()` gives Python strings).

    "No change" is said exactly when the factor shown would read 1.00×, so the words never say "1.00× slower"."""
    m, oriented = metric(metric_name), np.asarray(oriented, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        shown = oriented if m.better is Better.neutral else factor(oriented)
        scaled = shown * 100.0
        plain = _plain(scaled)
    if plain.sum() < 64:
        return _ratio_words(m, oriented)
    # rows that read alike (the same two decimals, the same side of 1, a defined ratio) are worded once: a review's
    # 10⁴–10⁵ ratios show a few hundred distinct texts
    rows, odd = np.flatnonzero(plain), np.flatnonzero(~plain)
    cents = np.floor(scaled[rows] + 0.5).astype(np.int64)
    low = int(cents.min())
    with np.errstate(invalid="ignore"):
        flags = (oriented[rows] > 1).astype(np.int64) * 2 + ((oriented[rows] > 0) & (oriented[rows] < math.inf))
    member, inverse = groups((cents - low) * 4 + flags, (int(cents.max()) - low + 1) * 4)
    worded = _ratio_words(m, oriented[rows[member]]).take(pa.array(inverse))
    if not len(odd):
        return worded
    where = np.empty(len(oriented), dtype=np.int64)
    where[rows], where[odd] = np.arange(len(rows)), len(rows) + np.arange(len(odd))
    return pa.concat_arrays([worded, _ratio_words(m, oriented[odd])]).take(pa.array(where))


def _ratio_words(m, oriented: np.ndarray) -> pa.Array:
    """ratio_words for every row, each worded."""
    with np.errstate(divide="ignore", invalid="ignore"):
        fine = (oriented > 0) & (oriented < math.inf)  # NaN fails every comparison
        shown = _two_decimals(oriented if m.better is Better.neutral else factor(oriented))
    if m.better is Better.neutral:
        words = pc.binary_join_element_wise(shown, "× the baseline", "")
    else:
        better, worse = _WORDS.get(m.quantity, ("better", "worse"))
        said = pc.binary_join_element_wise(shown, pc.if_else(pa.array(oriented > 1), f"× {better}", f"× {worse}"), "")
        words = pc.if_else(pc.equal(shown, "1.00"), "1.00× (no change)", said)
    return pc.if_else(pa.array(fine), words, "ratio undefined")


def _two_decimals(values: np.ndarray) -> pa.Array:
    """f"{v:.2f}" of each value, vectorised: the value × 100 rounded to an integer, then the decimal point put in.
    Where v × 100 lies within 1e-6 of a half (the float product could round the other way than the exact
    decimal value does), or is huge or not finite, Python's own formatting is used, so the text is always
    exactly f"{v:.2f}"."""
    scaled = values * 100.0
    plain = _plain(scaled)
    cents = np.where(plain, np.floor(np.where(plain, scaled, 0.0) + 0.5), 0).astype(np.int64)
    units = pc.cast(pa.array(cents // 100), pa.string())  # values here are > 0 where words are used
    hundredths = pc.utf8_lpad(pc.cast(pa.array(cents % 100), pa.string()), 2, "0")
    text = pc.binary_join_element_wise(units, hundredths, ".")
    odd = np.flatnonzero(~plain)
    if not len(odd):
        return text
    rare = values[odd]
    said = np.where(np.isnan(rare), "nan", np.where(rare > 0, "inf", "-inf")).astype(object)  # as f"{v:.2f}"
    finite = np.flatnonzero(np.isfinite(rare))
    said[finite] = [f"{v:.2f}" for v in rare[finite].tolist()]
    where = np.arange(len(values))
    where[odd] = len(values) + np.arange(len(odd))  # the rare texts appended and taken in place
    return pa.concat_arrays([text, pa.array(said, pa.string())]).take(pa.array(where))


def _plain(scaled: np.ndarray) -> np.ndarray:
    """Where a value × 100 rounds to its two decimals as integer arithmetic says (not within 1e-6 of a half, not
    huge, finite): there, the text is its rounded cents."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(scaled) & (np.abs(scaled) < 1e15) & (np.abs(scaled - np.floor(scaled) - 0.5) > 1e-6)


def str_column(values: pa.Array) -> pd.api.extensions.ExtensionArray:
    """Arrow strings as a pandas str column, without a copy (from an object array: ~5 ms per 50k rows)."""
    return pd.array(values, dtype="str")


def pick(choices: list[str], index: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """choices[index[i]] for each i, as a str column."""
    return str_column(pa.array(choices, pa.string()).take(pa.array(index)))
