"""The one JSON error shape of the whole API: {"ok": false, "status", "error", "errors": [{"field", "rule"}]}."""
from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from db.errors import StoreError


def error_response(err: StoreError) -> JSONResponse:
    body = {"ok": False, "status": err.status, "error": err.message,
            "errors": [{"field": p.field, "rule": p.rule} for p in err.problems]}
    return JSONResponse(body, status_code=err.status)


def json_ok(payload: dict[str, Any], status: int = 200) -> JSONResponse:
    return JSONResponse({"ok": True} | payload, status_code=status)
