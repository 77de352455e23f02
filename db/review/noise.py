"""Each compared case's A/A figures: the store's pairs of two runs of one build on one machine, which make the
run-to-run part of its test's variance (db.stats.replicates). The case's own pairs where it has enough, else its
workload group's on that chip, else none; `noise` says which."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from db.review.wording import pick
from db.query.noise import KEY, case_figures, machine_chips, noise_groups
from db.stats import noise as model
from db.stats.codes import combine
from db.store.aa_pairs import RATIO_METRICS

NO_DATA = "no A/A data"


class NoiseModel(NamedTuple):
    """What the lookup reads before it sees the cases: the model's groups and each machine's chip label."""
    groups: pd.DataFrame
    chip_of: dict[str, str]


def noise_model(engine: Engine) -> NoiseModel:
    """Read beside Compare's pivot (db.review.comparison), not after it."""
    found = machine_chips(engine).drop_duplicates("scope")
    return NoiseModel(noise_groups(engine), dict(zip(found.scope, found.chip)))


def case_noise(engine: Engine, cases: pd.DataFrame, scope: str, read: NoiseModel | None = None) -> pd.DataFrame:
    """Per compared case (same index as `cases`: scope, device, workload, case_key, metric, dtype, compile) the A/A
    figures its run-to-run variance rests on (db.stats.replicates): the case's own pairs where it has at least
    MIN_CASE_PAIRS, else its group's (chip, device, workload, metric, dtype, compile), else none — `pairs`,
    `sum_sq` (Σ log ratio²; from a group, 2·pairs·sigma²) and `noise`, which says which. scope "machine": a case's
    machine is looked up by its chip label (the model is kept per chip). Each lookup is made once per distinct
    key among the cases (a few hundred groups, a few thousand (group, case) pairs), not by merges of 50k rows.
    `read`: noise_model(engine), when the caller read it already."""
    groups, chip_of = read or noise_model(engine)
    coded = {name: pd.factorize(cases[name], use_na_sentinel=False) for name in ("scope", *KEY[1:], "case_key")}
    chip_codes, chips = coded["scope"]
    if scope == "machine":  # the chip label depends on the machine alone (its chip, GPU cores or name)
        chip_codes, chips = pd.factorize(np.array([chip_of.get(s) for s in chips], dtype=object)[chip_codes],
                                         use_na_sentinel=False)
    columns = [(chip_codes, chips)] + [coded[name] for name in KEY[1:]]
    row_of = {key: i for i, key in enumerate(groups[KEY].itertuples(index=False, name=None))}
    group = _lookup(columns, lambda key: row_of.get(key, -1), len(cases))  # each case's row in `groups`, or -1
    has = group >= 0  # a -1 takes the value appended after the groups' own
    group_pairs = np.append(groups.pairs.to_numpy(dtype=float, na_value=0.0), 0.0)[group]
    sigma = np.append(groups.sigma_log.to_numpy(dtype=float, na_value=np.nan), np.nan)[group]
    group_ids = np.append(groups.group_id.to_numpy(dtype=np.int64), -1)[group]
    per_case = case_figures(engine, np.unique(group_ids[has]))
    figures = {(g, c): (n, ss) for g, c, n, ss in zip(per_case.group_id.tolist(), per_case.case_key.tolist(),
                                                      per_case.pairs.tolist(), per_case.sum_sq.tolist())}
    ids, id_codes = np.unique(group_ids, return_inverse=True)
    own_figures = _lookup([(id_codes.ravel(), ids), coded["case_key"]],
                          lambda key: figures.get(key, (0.0, 0.0)), len(cases), width=2)
    case_pairs, case_sum_sq = own_figures[:, 0], own_figures[:, 1]
    ratio = cases.metric.isin(RATIO_METRICS).to_numpy(dtype=bool)
    own = ratio & (case_pairs >= model.MIN_CASE_PAIRS)
    in_group = ratio & ~own & (group_pairs >= model.MIN_PAIRS) & np.isfinite(sigma)
    pairs = np.where(own, case_pairs, np.where(in_group, group_pairs, 0.0))
    sum_sq = np.where(own, case_sum_sq, np.where(in_group, 2.0 * group_pairs * np.nan_to_num(sigma) ** 2, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = 100.0 * np.expm1(np.sqrt(sum_sq / np.maximum(pairs, 1) / 2.0))
    words = _noise_words(own, in_group, ratio, pairs, spread, case_pairs, coded["workload"])
    return pd.DataFrame({"pairs": pairs, "sum_sq": sum_sq, "noise": words}, index=cases.index)


def _lookup(columns: list, find, rows: int, width: int | None = None) -> np.ndarray:
    """find(key tuple) once per distinct combination of the factorized `columns` ((codes, uniques) each), spread
    to every row: a 1-D array, or (rows, width) where find returns `width` figures."""
    combined = combine([(c, len(u)) for c, u in columns], rows)
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    keys = zip(*(np.asarray(u, dtype=object)[c[first]].tolist() for c, u in columns))
    found = np.array([find(key) for key in keys], dtype=float if width else np.int64)
    return found[inverse.ravel()] if len(found) else np.zeros((rows, width) if width else rows, dtype=found.dtype)


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
