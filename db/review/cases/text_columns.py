"""The case table's text columns, built in Arrow and handed to pandas without a copy: the change in words
(one metric's words at a time, db.review.cases.wording) and the caveats (what was pooled or left out)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from bundle.contention import share_range
from db.query.compare.pivot import SIDES as _SIDES
from db.query.key_codes import combine, groups
from db.review.cases.wording import difference_words, ratio_words, str_column


def change_words(
    metrics: tuple[np.ndarray, pd.Index], oriented: np.ndarray, diff: np.ndarray, use_ratio: np.ndarray
) -> pd.api.extensions.ExtensionArray:
    """The change in words per case; `metrics` is the metric column factorized (codes, names)."""
    codes, names = metrics
    rows, words = [], []
    for code, name in enumerate(names):
        found = np.flatnonzero(codes == code)
        if not len(found):
            continue
        rows.append(found)
        if use_ratio[found[0]]:  # the comparison is the metric's: one kind per metric
            words.append(ratio_words(name, oriented[found]))
        else:
            words.append(pa.array([difference_words(name, d) for d in diff[found].tolist()], pa.string()))
    where = np.empty(len(codes), dtype=np.int64)
    where[np.concatenate(rows)] = np.arange(len(codes))  # each case's place among the metrics' words
    return str_column(pa.concat_arrays(words).take(pa.array(where)))


def caveats(frame: pd.DataFrame, chip_scope: bool) -> pd.api.extensions.ExtensionArray:
    """Per case, what was pooled or left out, e.g. "baseline: 2 results pooled; candidate: error results excluded".
    Cases share few distinct (pooled, machines, other) combinations: each is worded once, with Arrow's
    vectorised string kernels, and spread to its cases."""
    if frame.empty:
        return str_column(pa.array([], pa.string()))
    counts = [p + "pooled" for _, p in _SIDES] + ([p + "machines" for _, p in _SIDES] if chip_scope else [])
    coded = [(v, int(v.max()) + 1) for v in (frame[name].to_numpy(dtype=np.int64) for name in counts)]
    coded += [(v, len(u) + 1) for v, u in (pd.factorize(frame[p + "other"], use_na_sentinel=False) for _, p in _SIDES)]
    first, inverse = groups(combine(coded, len(frame)), math.prod(span for _, span in coded))
    return str_column(_caveat_words(frame.iloc[first], chip_scope).take(pa.array(inverse)))


def with_warnings(said: pd.api.extensions.ExtensionArray, frame: pd.DataFrame) -> pd.api.extensions.ExtensionArray:
    """The caveats with each side's result warnings appended ("candidate warned: CPU contention; noisy op_time"),
    so noisy samples and contention reach every row, card and export that shows a case's caveats. Only the rows
    with a warning are worded (usually few; none at all costs nothing)."""
    if frame.empty or "b_warnings" not in frame:
        return said
    warned = np.flatnonzero((frame.b_warnings.notna() | frame.c_warnings.notna()).to_numpy(dtype=bool))
    if not len(warned):
        return said
    some = frame.iloc[warned]
    parts = [pa.array(said, pa.string()).take(pa.array(warned))]
    parts += [_part(some[p + "warnings"], some[p + "warnings"].notna(), f"{side} warned: ", "") for side, p in _SIDES]
    worded = pc.replace_substring_regex(pc.binary_join_element_wise(*parts, ""), "^; ", "")
    where = np.arange(len(frame))  # each row's place in said, or in worded after it
    where[warned] = len(frame) + np.arange(len(warned))
    return str_column(pa.concat_arrays([pa.array(said, pa.string()), worded]).take(pa.array(where)))


def contention_words(frame: pd.DataFrame) -> pd.api.extensions.ExtensionArray:
    """Per case, the contention its sides met (db.stats.contention), e.g. "candidate: 8 of 10 worker processes
    contended (70–84 % of the cores): too few clean, not tested"; "" where none was. Few cases have any: only
    those are worded."""
    hot = (
        [frame[p + "contended_processes"].to_numpy(dtype=float, na_value=0) for _, p in _SIDES]
        if "b_contended_processes" in frame
        else [np.zeros(len(frame))] * 2
    )
    said = np.flatnonzero((hot[0] > 0) | (hot[1] > 0))
    if not len(said):  # the usual review: one empty text for every case, without a Python string per case
        return str_column(pa.array([""], pa.string()).take(pa.array(np.zeros(len(frame), dtype=np.int64))))
    words = np.full(len(frame), "", dtype=object)
    for i in said:
        parts = []
        for (side, p), n in zip(_SIDES, hot):
            if n[i] > 0:
                row = frame.iloc[i]
                shares = [float(row[p + "contention_low"]), float(row[p + "contention_high"])]
                timed = int(row[p + "timed_processes"])
                fate = "too few clean: not tested" if bool(row[p + "contended"]) else "left out"
                parts.append(
                    f"{side}: {int(n[i])} of {timed} worker process{'es' * (timed != 1)} contended "
                    f"({share_range(shares)} of the cores), {fate}"
                )
        words[i] = "; ".join(parts)
    return str_column(pa.array(words, pa.string()))


def with_contention(
    said: pd.api.extensions.ExtensionArray, words: pd.api.extensions.ExtensionArray
) -> pd.api.extensions.ExtensionArray:
    """The caveats with the contention words appended, so they reach every view that shows a case's caveats."""
    said, words = pa.array(said, pa.string()), pa.array(words, pa.string())
    if not pc.any(pc.not_equal(words, "")).as_py():
        return str_column(said)
    joined = pc.binary_join_element_wise(said, words, "; ")
    both = pc.and_(pc.not_equal(said, ""), pc.not_equal(words, ""))
    return str_column(pc.if_else(both, joined, pc.if_else(pc.equal(words, ""), said, words)))


def _caveat_words(frame: pd.DataFrame, chip_scope: bool) -> pa.Array:
    parts = [_part(frame[p + "pooled"], frame[p + "pooled"] > 1, f"{side}: ", " results pooled") for side, p in _SIDES]
    if chip_scope:
        parts += [
            _part(frame[p + "machines"], frame[p + "machines"] > 1, f"{side}: ", " machines pooled")
            for side, p in _SIDES
        ]
    parts += [
        _part(frame[p + "other"], frame[p + "other"].notna(), f"{side}: ", " results excluded") for side, p in _SIDES
    ]
    # each part is "; "-prefixed or "", joined with no separator, then the first "; " cut (pyarrow 26's
    # null_handling="skip" drops rows whose inputs are all null, so nulls are not used)
    return pc.replace_substring_regex(pc.binary_join_element_wise(*parts, ""), "^; ", "")


def _part(values: pd.Series, shown: pd.Series, before: str, after: str) -> pa.Array:
    """ "; " + before + value + after where `shown`, else ""."""
    text = pc.cast(pa.array(values.to_numpy(), from_pandas=True), pa.string())
    made = pc.binary_join_element_wise("; " + before, pc.fill_null(text, ""), after, "")
    return pc.if_else(pa.array(shown.to_numpy(dtype=bool)), made, "")
