"""The server's one bundle size limit, read by the API (api/upload.py) and the Upload page alike."""

from __future__ import annotations

import os

from db.errors import Problem, StoreError


def max_upload_bytes() -> int:
    """env MPSBENCH_MAX_UPLOAD_MB (default 64), in bytes."""
    raw = os.environ.get("MPSBENCH_MAX_UPLOAD_MB", "64")
    try:
        mb = float(raw)
    except ValueError:
        mb = -1.0
    if not 0 < mb < 2**20:
        raise StoreError(
            500,
            f"MPSBENCH_MAX_UPLOAD_MB={raw!r} is not a size in MB",
            [Problem("MPSBENCH_MAX_UPLOAD_MB", "must be a number of MB above 0")],
        )
    return int(mb * 1024 * 1024)


# JSON nested deeper than this is refused: the depth pydantic-core's parser (the bundle reader, db.ingest.core)
# refuses past, so a PyTorch OSS record file (db.ingest.records) is held to the bundle's own bound. Python's own
# parser recurses: 100,000 levels were a RecursionError traceback.
MAX_NESTING = 200
