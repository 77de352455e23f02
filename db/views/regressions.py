"""Regressions of a baseline → candidate review: every significant change for the worse beyond a threshold,
worst first, across machines (or chips), dtypes and workloads, joined with its latest triage note.

A ratio metric regresses when the oriented ratio is significant and below 1 / (1 + threshold); a correctness
record also regresses when it passed on the baseline and fails on the candidate (no statistics needed).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from db.views.compare import CompareQuery, compare
from db.stats.significance import SIGNIFICANT
from db.store.triage import NOTE_KEY, latest_notes

DEFAULT_THRESHOLD = 0.05
COLUMNS = ["scope", "device", "workload", "case_key", "dtype", "compile", "metric", "unit", "baseline_median",
           "candidate_median", "change", "oriented_ratio", "difference", "ci_low", "ci_high", "p_value",
           "significance", "why", "worse_by", "baseline", "candidate", "state", "comment", "author", "link"]


def regressions(engine: Engine, query: CompareQuery, threshold: float = DEFAULT_THRESHOLD) -> pd.DataFrame:
    cases = compare(engine, query).cases
    if cases.empty:
        return pd.DataFrame(columns=COLUMNS)
    oriented = cases.oriented_ratio.astype(float)
    slower = (cases.significance == SIGNIFICANT) & (oriented < 1.0 / (1.0 + threshold))
    broke = (cases.baseline_passed == True) & (cases.candidate_passed == False)  # noqa: E712 - nullable booleans
    found = cases[slower | broke].copy()
    found["why"] = np.where(broke[found.index], "correctness: passed → failed", "significant slowdown")
    found["worse_by"] = np.where(np.isfinite(1.0 / oriented[found.index]), 1.0 / oriented[found.index] - 1.0, np.inf)
    found["baseline"], found["candidate"] = query.baseline, query.candidate
    notes = latest_notes(engine, query.baseline, query.candidate)
    merged = found.merge(notes, how="left", on=NOTE_KEY)
    merged["state"] = merged["state"].fillna("new")
    for col in ("comment", "author", "link"):
        merged[col] = merged[col].fillna("")
    return merged.sort_values("worse_by", ascending=False)[COLUMNS].reset_index(drop=True)


def review_notes(engine: Engine, query: CompareQuery) -> list[str]:
    """The comparison's notes (baseline named, pooling, differing library versions) that go with its review."""
    return list(compare(engine, query).notes)
