"""`mpsbench retract --url`: the same retraction on a team server, DELETE <URL>/api/v1/runs/<id> with the token in
MPSBENCH_TOKEN; the server's JSON error comes back as a StoreError (the CLI prints it as "ERROR: …")."""
from __future__ import annotations

import os

import httpx

from db.errors import Problem, StoreError


def retract_remote(url: str, run_id: str, reason: str) -> dict:
    token = os.environ.get("MPSBENCH_TOKEN", "").strip()
    if not token:
        raise StoreError(401, "MPSBENCH_TOKEN is not set: a retraction needs the uploader's or an admin token",
                         [Problem("MPSBENCH_TOKEN", "must hold a token the server knows")])
    target = url.rstrip("/") + "/api/v1/runs/" + run_id
    try:
        response = httpx.request("DELETE", target, json={"reason": reason}, timeout=30,
                                 headers={"authorization": f"Bearer {token}"})
    except httpx.HTTPError as err:
        raise StoreError(503, f"cannot reach {url}: {err}") from None
    try:
        body = response.json()
    except ValueError:
        body = {}
    if response.status_code != 200 or not body.get("ok"):
        problems = [Problem(e.get("field", ""), e.get("rule", "")) for e in body.get("errors", [])
                    if isinstance(e, dict)]
        raise StoreError(response.status_code, f"the server answered {response.status_code}: "
                                               f"{body.get('error') or response.text[:200]}", problems)
    return body
