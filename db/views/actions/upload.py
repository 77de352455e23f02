"""Uploads: a bundle ingested under the server's one size limit, the summaries brought up to date after it, and a
stored run retracted. The page and the API take a bundle through the same calls."""

from __future__ import annotations

import math

from sqlalchemy import Engine

from db.store.writers import retract

RUN_ID_PATTERN = retract.RUN_ID_PATTERN  # a run id, as a retraction's path names it
MAX_REASON = retract.MAX_REASON  # a retraction's reason, in characters


def max_upload_bytes() -> int:
    """The server's one bundle limit in bytes (MPSBENCH_MAX_UPLOAD_MB; a bad value is a ValueError naming it)."""
    from db.ingest.limits import max_upload_bytes as configured

    return configured()


def upload_limit() -> tuple[int, int, str]:
    """The server's one bundle limit (MPSBENCH_MAX_UPLOAD_MB, default 64, in MiB: db.ingest.limits, as the API
    reads it) as (bytes, the file picker's whole MB, the words for it). The picker counts 1 MB as 1,000,000 bytes
    (1,048,576 on Windows) and Streamlit's upload route as 1,048,576: its MB is rounded up, so neither refuses a
    bundle the API takes (a 65,257,167-byte bundle was refused at "64.0MB" and stored by the API); the page
    itself refuses above the exact limit, as the API does. `mpsbench serve` and a bare `streamlit run app.py`
    set server.maxUploadSize from here (app.apply_upload_limit), one source of the default."""
    limit = max_upload_bytes()
    return limit, max(1, math.ceil(limit / 10**6)), f"{limit / 2**20:.4g} MiB ({limit:,} bytes)"


def ingest(engine: Engine, raw: bytes, who: str):
    """Validate and store one bundle for `who` (db.ingest.core: idempotent; a refusal is a StoreError naming its
    problems). Returns the outcome: run_id, created, n_results."""
    from db.ingest.core import ingest_bundle  # its pydantic models load on the first upload, not at start

    return ingest_bundle(engine, raw, who)


def summarise_soon(engine: Engine) -> None:
    """Bring the new runs' summaries up to date, in the background (db.store.writers.upkeep; never raises): Compare is
    right without them, only slower."""
    from db.store.writers.upkeep import catch_up_soon

    catch_up_soon(engine)


def retract_run(engine: Engine, run_id: str, reason: object, by: str, admin: bool) -> dict:
    """Retract `run_id` for `by` (an admin may retract any run; an uploader only their own): what was recorded."""
    return retract.retract_run(engine, run_id, reason, by, admin)
