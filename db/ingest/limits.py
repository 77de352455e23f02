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
