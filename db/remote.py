"""A team server's JSON API from the command line (`mpsbench compare --url`, `mpsbench retract --url`): one
request with the token in MPSBENCH_TOKEN; the server's JSON error comes back as a StoreError (the CLI prints it
as "ERROR: …")."""

from __future__ import annotations

import os
from typing import Any

import httpx

from db.errors import Problem, StoreError


def token() -> str:
    return os.environ.get("MPSBENCH_TOKEN", "").strip()


def call_api(method: str, url: str, path: str, *, timeout: float, **request: Any) -> dict[str, Any]:
    """The answer's JSON object without its "ok" (a non-200 or a body without ok: a StoreError naming it)."""
    headers = {"authorization": f"Bearer {token()}"} if token() else {}
    try:
        response = httpx.request(method, url.rstrip("/") + path, headers=headers, timeout=timeout, **request)
    except httpx.HTTPError as err:
        raise StoreError(503, f"cannot reach {url}: {err}") from None
    try:
        body = response.json()
    except ValueError:
        body = {}
    if response.status_code != 200 or not isinstance(body, dict) or not body.get("ok"):
        errors = body.get("errors", []) if isinstance(body, dict) else []
        problems = [Problem(e.get("field", ""), e.get("rule", "")) for e in errors if isinstance(e, dict)]
        said = body.get("error") if isinstance(body, dict) else None
        raise StoreError(
            response.status_code, f"the server answered {response.status_code}: {said or response.text[:200]}", problems
        )
    body.pop("ok")
    return body


def retract_remote(url: str, run_id: str, reason: str) -> dict:
    if not token():
        raise StoreError(
            401,
            "MPSBENCH_TOKEN is not set: a retraction needs the uploader's or an admin token",
            [Problem("MPSBENCH_TOKEN", "must hold a token the server knows")],
        )
    return {"ok": True, **call_api("DELETE", url, "/api/v1/runs/" + run_id, json={"reason": reason}, timeout=30)}
