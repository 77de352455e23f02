"""Each compared case's A/A figures: the store's pairs of two runs of one build on one machine, which make the
run-to-run part of its test's variance (db.stats.replicates). The case's own pairs where it has enough, else its
workload group's on that chip, else none; `noise` says which."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from bundle.metrics import RATIO_METRICS
from db.query.key_codes import combine, groups
from db.query.noise import AAModel, case_lookup
from db.review.cases.wording import pick
from db.stats import noise as model

NO_DATA = "no A/A data"


def case_noise(tables: AAModel, keys: pa.Table) -> pd.DataFrame:
    """Per compared case (a row of `keys`: scope, device, workload, case_key, dtype, compile, metric; the frame
    returned is indexed 0, 1, … like them) the A/A figures its run-to-run variance rests on
    (db.stats.replicates): the case's own pairs where it has at least MIN_CASE_PAIRS, else its group's (chip,
    device, workload, metric, dtype, compile), else none — `pairs`, `sum_sq` (Σ log ratio²; from a group,
    2·pairs·sigma²) and `noise`, which says which. The figures are looked up in the A/A tables (db.query.noise)."""
    found = case_lookup(tables, keys)
    g, c = found.group, found.case  # -1 takes the appended "none" entry
    group_pairs = np.append(_floats(found.groups["pairs"]), 0.0)[g]  # no group: no pairs
    sigma = np.append(_floats(found.groups["sigma_log"]), np.nan)[g]
    case_pairs = np.append(_floats(found.cases["pairs"]), 0.0)[c]
    case_sum_sq = np.append(_floats(found.cases["sum_sq"]), 0.0)[c]
    ratio = pc.is_in(keys["metric"], pa.array(RATIO_METRICS)).to_numpy(zero_copy_only=False)
    own = ratio & (case_pairs >= model.MIN_CASE_PAIRS)
    in_group = ratio & ~own & (group_pairs >= model.MIN_PAIRS) & np.isfinite(sigma)
    pairs = np.where(own, case_pairs, np.where(in_group, group_pairs, 0.0))
    sum_sq = np.where(own, case_sum_sq, np.where(in_group, model.pairs_sum_sq(np.nan_to_num(sigma), group_pairs), 0.0))
    spread = model.bound_percent(model.run_sigma(sum_sq, np.maximum(pairs, 1)))
    # what is worded is a function of the case's A/A source (its own figures, which belong to one group, or else
    # its group) and whether its metric is a ratio: worded once per distinct pair and spread to its cases
    source = np.where(c >= 0, c, found.cases.num_rows + 1 + g)
    span = found.cases.num_rows + found.groups.num_rows + 1
    first, codes = groups(combine([(source, span), (ratio.astype(np.int64), 2)], len(g)), 2 * span)
    workload = np.append(np.asarray(found.groups["workload"].to_pylist(), dtype=object), "")[g[first]]
    words = _noise_words(
        own[first], in_group[first], ratio[first], pairs[first], spread[first], case_pairs[first], workload
    )
    return pd.DataFrame({"pairs": pairs, "sum_sq": sum_sq, "noise": pick(words, codes)})


def _floats(column: pa.ChunkedArray) -> np.ndarray:
    return column.to_numpy(zero_copy_only=False).astype(float)


def _noise_words(own, group, ratio, pairs, spread, case_pairs, workload) -> list[str]:
    """The noise source of each (distinct) figure set in words; figure sets reading alike worded once."""
    kind = np.where(own, 0, np.where(group, 1, np.where(ratio, 2, 3)))
    said = list(
        zip(
            kind.tolist(),
            pairs.tolist(),
            np.round(spread, 1).tolist(),
            np.where(own, 0.0, case_pairs).tolist(),
            workload.tolist(),
        )
    )
    words = {figures: _words(*figures) for figures in set(said)}
    return [words[figures] for figures in said]


def _words(kind: int, pairs: float, spread: float, case_pairs: float, workload: str) -> str:
    if kind == 0:
        return f"A/A: this case, {pairs:.0f} pairs (run spread ±{spread:.1f} %)"
    if kind == 1:
        return (
            f"A/A: its {workload} group on this chip, {pairs:.0f} pairs (run spread ±{spread:.1f} %; the case "
            f"has {case_pairs:.0f})"
        )
    return NO_DATA if kind == 2 else ""
