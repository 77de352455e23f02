"""Retract a run: it leaves every comparison but stays listed with who retracted it, when and why.

Its results move, in one transaction, from `results` to `retracted_results` (same columns), so every query over
results (compare, trends, matrix, memory, correctness, claims) leaves them out without a filter of its own;
the selectors also skip retracted runs (db.query.selectors), and its A/A pairs leave the noise model. Allowed to the token that uploaded the run or to
an admin (db.store.writers.tokens); a run stored without an uploader (CLI ingest, before store v4) needs an admin.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from sqlalchemy import Engine, text

from db.errors import Problem, StoreError
from db.store.derived.aa_pairs import forget_run
from db.store.derived.side_cases import mark_runs
from db.store.engine import WRITE_LOCK, bump_data_version

RUN_ID_PATTERN = r"^[0-9a-f]{32}$"  # also the OpenAPI document's (api/openapi.py)
_RUN_ID = re.compile(RUN_ID_PATTERN)
MAX_REASON = 2000
_ASIDE = "CREATE TABLE IF NOT EXISTS retracted_results AS SELECT * FROM results LIMIT 0"


def check_request(run_id: str, reason: object) -> str:
    """The reason, stripped; StoreError naming the field otherwise."""
    problems = []
    if not _RUN_ID.fullmatch(run_id or ""):  # not match: "$" passes a trailing newline
        problems.append(Problem("run_id", "must be 32 lower-case hex digits"))
    if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_REASON:
        problems.append(Problem("reason", f"must be a non-empty string of at most {MAX_REASON} characters"))
    if problems:
        raise StoreError(422, "the retraction is not valid", problems)
    return reason.strip()


def retract_run(engine: Engine, run_id: str, reason: object, by: str, admin: bool) -> dict:
    """Retract run_id on behalf of `by` (an admin may retract any run). Returns what was recorded."""
    reason = check_request(run_id, reason)
    with WRITE_LOCK, engine.begin() as conn:
        row = conn.execute(
            text("SELECT uploaded_by, retracted_at, retracted_by FROM runs WHERE run_id = :r"), {"r": run_id}
        ).first()
        if row is None:
            raise StoreError(404, f"no run {run_id} is stored", [Problem("run_id", "must name a stored run")])
        if not admin and (row.uploaded_by is None or row.uploaded_by != by):
            raise StoreError(
                403,
                f"{by} may not retract run {run_id}: only its uploader "
                f"({row.uploaded_by or 'unknown'}) or an admin may",
                [Problem("run_id", "retract only runs your token uploaded, or use an admin token")],
            )
        if row.retracted_at is not None:
            raise StoreError(
                409,
                f"run {run_id} was already retracted by {row.retracted_by} at {row.retracted_at}",
                [Problem("run_id", "a run is retracted once")],
            )
        forget_run(conn, run_id)  # its A/A pairs leave the noise model too
        conn.execute(text(_ASIDE))
        moved = conn.execute(
            text("INSERT INTO retracted_results SELECT * FROM results WHERE run_id = :r"), {"r": run_id}
        ).rowcount
        conn.execute(text("DELETE FROM results WHERE run_id = :r"), {"r": run_id})
        when = datetime.now(timezone.utc).replace(tzinfo=None)
        conn.execute(
            text("UPDATE runs SET retracted_at = :t, retracted_by = :b, retraction_reason = :w WHERE run_id = :r"),
            {"t": when, "b": by, "w": reason, "r": run_id},
        )
        mark_runs(conn, [run_id])  # its group's side summaries lag (read from the pivot) until the upkeep
        bump_data_version(conn)  # cached comparisons are keyed on it: they drop the run at once
    return {
        "run_id": run_id,
        "retracted_at": when.isoformat() + "Z",
        "retracted_by": by,
        "reason": reason,
        "results_moved": int(moved) if moved is not None and moved >= 0 else None,
    }
