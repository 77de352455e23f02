"""Each compared case's A/A figures: the store's pairs of two runs of one build on one machine, which make the
run-to-run part of its test's variance (db.stats.replicates). The case's own pairs where it has enough, else its
workload group's on that chip, else none; `noise` says which."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Engine

from db.review.wording import pick
from db.query.noise import case_lookup
from db.stats import noise as model
from db.stats.codes import combine
from db.store.aa_pairs import RATIO_METRICS

NO_DATA = "no A/A data"


def case_noise(engine: Engine, keys: pa.Table, scope: str) -> pd.DataFrame:
    """Per compared case (a row of `keys`: scope, device, workload, case_key, dtype, compile, metric; the frame
    returned is indexed 0, 1, … like them) the A/A figures its run-to-run variance rests on
    (db.stats.replicates): the case's own pairs where it has at least MIN_CASE_PAIRS, else its group's (chip,
    device, workload, metric, dtype, compile), else none — `pairs`, `sum_sq` (Σ log ratio²; from a group,
    2·pairs·sigma²) and `noise`, which says which. The figures are looked up in one join (db.query.noise)."""
    found = case_lookup(engine, keys, scope)
    group_pairs = found["group_pairs"].to_numpy(zero_copy_only=False).astype(float)
    group_pairs = np.where(np.isnan(group_pairs), 0.0, group_pairs)  # no group: no pairs
    sigma = found["sigma_log"].to_numpy(zero_copy_only=False).astype(float)
    case_pairs = found["case_pairs"].to_numpy(zero_copy_only=False).astype(float)
    case_sum_sq = found["case_sum_sq"].to_numpy(zero_copy_only=False).astype(float)
    ratio = pc.is_in(keys["metric"], pa.array(RATIO_METRICS)).to_numpy(zero_copy_only=False)
    own = ratio & (case_pairs >= model.MIN_CASE_PAIRS)
    in_group = ratio & ~own & (group_pairs >= model.MIN_PAIRS) & np.isfinite(sigma)
    pairs = np.where(own, case_pairs, np.where(in_group, group_pairs, 0.0))
    sum_sq = np.where(own, case_sum_sq, np.where(in_group, 2.0 * group_pairs * np.nan_to_num(sigma) ** 2, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = 100.0 * np.expm1(np.sqrt(sum_sq / np.maximum(pairs, 1) / 2.0))
    workload = pc.dictionary_encode(keys["workload"]).combine_chunks()
    words = _noise_words(own, in_group, ratio, pairs, spread, case_pairs,
                         (workload.indices.to_numpy(), pd.Index(workload.dictionary.to_pylist())))
    return pd.DataFrame({"pairs": pairs, "sum_sq": sum_sq, "noise": words})


def _noise_words(own, group, ratio, pairs, spread, case_pairs, workload: tuple[np.ndarray, pd.Index]):
    """Each case's noise source in words (a str column), worded once per distinct (source, pairs, spread,
    workload) and spread to its cases (cases of one group share their figures: a 50k-case review words a few
    hundred). `workload`: the workload column factorized (codes, names)."""
    kind = np.where(own, 0, np.where(group, 1, np.where(ratio, 2, 3)))
    figures = [kind, pairs, np.round(spread, 1), np.where(own, 0.0, case_pairs)]
    factored = [pd.factorize(c) for c in figures] + [(workload[0], workload[1])]
    _, first, codes = np.unique(combine([(f, len(u)) for f, u in factored], len(kind)), return_index=True,
                                return_inverse=True)
    names = np.asarray(workload[1], dtype=object)[workload[0][first]]
    said = [f"A/A: this case, {n:.0f} pairs (run spread ±{s:.1f} %)" if k == 0 else
            f"A/A: its {w} group on this chip, {n:.0f} pairs (run spread ±{s:.1f} %; the case has {c:.0f})" if k == 1
            else NO_DATA if k == 2 else "" for k, n, s, c, w in zip(*(c[first] for c in figures), names)]
    return pick(said, codes.ravel())
