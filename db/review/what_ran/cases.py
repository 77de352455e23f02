"""What changed in what ran (db.review.what_ran.kernels) for a review's listed cases — its regressions, Compare's shown
rows — read in one SQL read for all of them (db.query.what_ran.cases_breakdowns), never one per row."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
from sqlalchemy import Engine

from db.query.what_ran import CaseKey, cases_breakdowns
from db.review.what_ran.kernels import WhatRan, what_ran

if TYPE_CHECKING:
    from db.review.comparison import CompareQuery

KEY = ["scope", "device", "workload", "case_key", "dtype", "compile"]  # a row's case, as CaseKey orders it


def case_key(row) -> CaseKey:
    return tuple(str(row[k]) for k in KEY)  # type: ignore[return-value]


def rows_what_ran(engine: Engine, query: CompareQuery, rows: pd.DataFrame) -> list[WhatRan]:
    """Per row of `rows` (a review's case rows: KEY columns), in order, its sides' breakdowns compared."""
    if rows.empty:
        return []
    keys = [case_key(r) for r in rows[KEY].to_dict("records")]
    baseline, candidate = query.selectors()
    found = cases_breakdowns(engine, baseline, candidate, keys, query.scope)
    return [what_ran(*found.get(key, ([], [])), subject=key[2]) for key in keys]
