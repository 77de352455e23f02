"""Each compared case's A/A figures: the store's pairs of two runs of one build on one machine, which make the
run-to-run part of its test's variance (db.stats.replicates). The case's own pairs where it has enough, else its
workload group's on that chip, else none; `noise` says which."""
from __future__ import annotations

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from db.query.noise import KEY, case_figures, machine_chips, noise_groups
from db.stats import noise as model
from db.stats.codes import combine
from db.store.aa_pairs import RATIO_METRICS

NO_DATA = "no A/A data"


def case_noise(engine: Engine, cases: pd.DataFrame, scope: str) -> pd.DataFrame:
    """Per compared case (same index as `cases`: scope, device, workload, case_key, metric, dtype, compile) the A/A
    figures its run-to-run variance rests on (db.stats.replicates): the case's own pairs where it has at least
    MIN_CASE_PAIRS, else its group's (chip, device, workload, metric, dtype, compile), else none — `pairs`,
    `sum_sq` (Σ log ratio²; from a group, 2·pairs·sigma²) and `noise`, which says which. scope "machine": a case's
    machine is looked up by its chip label (the model is kept per chip)."""
    groups = noise_groups(engine)
    keys = cases[["scope", "device", "workload", "metric", "dtype", "compile", "case_key"]].rename(
        columns={"scope": "chip"})
    if scope == "machine":  # the chip label depends on the machine alone (its chip, GPU cores or name)
        chips = machine_chips(engine).drop_duplicates("scope")
        keys["chip"] = keys.chip.map(dict(zip(chips.scope, chips.chip)))
    found = keys.merge(groups[[*KEY, "group_id", "pairs", "sigma_log"]], how="left", on=KEY)
    per_case = case_figures(engine, found.group_id.dropna().unique())
    found = found.merge(per_case.rename(columns={"pairs": "case_pairs"}), how="left", on=["group_id", "case_key"])
    ratio = found.metric.isin(RATIO_METRICS).to_numpy()
    case_pairs = found.case_pairs.to_numpy(dtype=float, na_value=0.0)
    group_pairs = found.pairs.to_numpy(dtype=float, na_value=0.0)
    sigma = found.sigma_log.to_numpy(dtype=float, na_value=np.nan)
    own = ratio & (case_pairs >= model.MIN_CASE_PAIRS)
    group = ratio & ~own & (group_pairs >= model.MIN_PAIRS) & np.isfinite(sigma)
    pairs = np.where(own, case_pairs, np.where(group, group_pairs, 0.0))
    sum_sq = np.where(own, found.sum_sq.to_numpy(dtype=float, na_value=0.0),
                      np.where(group, 2.0 * group_pairs * np.nan_to_num(sigma) ** 2, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = 100.0 * np.expm1(np.sqrt(sum_sq / np.maximum(pairs, 1) / 2.0))
    words = _noise_words(own, group, ratio, pairs, spread, case_pairs, found.workload)
    return pd.DataFrame({"pairs": pairs, "sum_sq": sum_sq, "noise": words}, index=cases.index)


def _noise_words(own, group, ratio, pairs, spread, case_pairs, workload) -> np.ndarray:
    """Each case's noise source in words, worded once per distinct (source, pairs, spread, workload) and spread
    to its cases (cases of one group share their figures: a 50k-case review words a few hundred)."""
    kind = np.where(own, 0, np.where(group, 1, np.where(ratio, 2, 3)))
    columns = [kind, pairs, np.round(spread, 1), np.where(own, 0.0, case_pairs), np.asarray(workload, dtype=object)]
    factored = [pd.factorize(c) for c in columns]
    _, first, codes = np.unique(combine([(f, len(u)) for f, u in factored], len(kind)), return_index=True,
                                return_inverse=True)
    said = [f"A/A: this case, {n:.0f} pairs (run spread ±{s:.1f} %)" if k == 0 else
            f"A/A: its {w} group on this chip, {n:.0f} pairs (run spread ±{s:.1f} %; the case has {c:.0f})" if k == 1
            else NO_DATA if k == 2 else "" for k, n, s, c, w in zip(*(c[first] for c in columns))]
    return np.array(said, dtype=object)[codes.ravel()]
