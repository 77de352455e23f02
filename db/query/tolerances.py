"""A case's stored tolerance for its accuracy figures (PSNR dB), read for the few regressed cases a review lists,
so it can rank a drop that leaves the case far above its tolerance below one that brings it near."""
from __future__ import annotations

import pandas as pd
from sqlalchemy import Engine

from db.store.read import read_frame

KEY = ["workload", "case_key", "dtype", "compile", "metric"]


def tolerances(engine: Engine, cases: pd.DataFrame) -> pd.DataFrame:
    """KEY + tolerance (the largest stored for it) for the rows of `cases` (KEY columns) that have one."""
    if cases.empty:
        return pd.DataFrame(columns=KEY + ["tolerance"])
    wanted = cases[KEY].drop_duplicates()
    values = ", ".join(["(?, ?, ?, ?, ?)"] * len(wanted))
    params = [str(v) for row in wanted.itertuples(index=False) for v in row]
    return read_frame(engine, f"""
        WITH wanted(workload, case_key, dtype, compile, metric) AS (VALUES {values})
        SELECT w.workload, w.case_key, w.dtype, w.compile, w.metric, max(r.tolerance) AS tolerance
        FROM wanted w JOIN results r USING (workload, case_key, dtype, compile, metric)
        WHERE r.tolerance IS NOT NULL GROUP BY ALL""", params)
