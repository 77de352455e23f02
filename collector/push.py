"""Deliver bundles to the server: POST <URL>/api/v1/runs with a bearer token, retry, outbox, rejected/.

URL is the dashboard's base URL (http://host:8501, or behind a proxy http://host/mpsbench) or the endpoint
itself (…/api/v1/runs); both reach the same endpoint. The token is MPSBENCH_TOKEN; without it no
Authorization header is sent (a server with no upload tokens accepts that from its own machine).
Connection errors, 5xx, 408 and 429 are retried with exponential backoff; what still fails waits in the outbox
(MPSBENCH_OUTBOX, default ~/.mpsbench/outbox) for the next push, and so does a bundle refused for its token
(401/403: the bundle is fine, the credentials are not). Any other 4xx is a refusal of the bundle: not retried,
the server's error (field/rule) is reported and the bundle is kept in outbox/rejected/.
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

from collector.errors import CollectorError

RETRYABLE = {408, 429}
CREDENTIALS = {401, 403}
ENDPOINT = "/api/v1/runs"


@dataclass
class Outcome:
    path: Path
    state: str  # "sent" | "queued" | "rejected"
    detail: str


def outbox_dir() -> Path:
    return Path(os.environ.get("MPSBENCH_OUTBOX") or Path.home() / ".mpsbench" / "outbox")


def token() -> str | None:
    return os.environ.get("MPSBENCH_TOKEN", "").strip() or None


def endpoint(url: str) -> str:
    """The upload endpoint for a base URL or the endpoint itself; anything but http(s)://host… is refused."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CollectorError(f"push URL must be http(s)://HOST[:PORT][/PREFIX] of the dashboard, e.g. "
                             f"http://127.0.0.1:8501 (got {url!r})")
    path = parts.path.rstrip("/")
    if not path.endswith(ENDPOINT):
        path = path.removesuffix("/api/v1") + ENDPOINT
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def server_error(response: httpx.Response) -> str:
    """The server's message and its field/rule problems, whatever JSON shape it used."""
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}: {response.text[:500]}"
    if not isinstance(body, dict):
        return f"HTTP {response.status_code}: {body}"
    err = body.get("error", body)
    message = err.get("message") or err.get("detail") or str(err) if isinstance(err, dict) else str(err)
    problems = (err.get("problems") if isinstance(err, dict) else None) or body.get("problems") or []
    details = "; ".join(f"{p.get('field')}: {p.get('rule')}" for p in problems if isinstance(p, dict))
    return f"HTTP {response.status_code}: {message}" + (f" ({details})" if details else "")


@dataclass
class Pusher:
    url: str
    attempts: int = 4
    backoff_s: float = 0.5
    timeout_s: float = 30.0

    def __post_init__(self) -> None:
        self.endpoint = endpoint(self.url)  # a bad URL is refused before anything is sent

    def _post(self, body: bytes) -> httpx.Response | str:
        """The server's answer, or the connection error text after every retry failed."""
        secret = token()
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {secret}"} if secret else {})}
        last = ""
        for attempt in range(self.attempts):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                response = httpx.post(self.endpoint, content=body, headers=headers, timeout=self.timeout_s)
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if response.status_code < 500 and response.status_code not in RETRYABLE:
                return response
            last = server_error(response)
        return last

    def send(self, path: Path) -> Outcome:
        body = path.read_bytes()
        answer = self._post(body)
        if isinstance(answer, str):
            return Outcome(_move(path, outbox_dir()), "queued", f"not delivered ({answer}); kept in the outbox")
        if answer.status_code < 300:
            (outbox_dir() / path.name).unlink(missing_ok=True)  # a copy queued by an earlier push is done too
            return Outcome(path, "sent", f"HTTP {answer.status_code} from {self.endpoint}")
        if answer.status_code in CREDENTIALS:
            hint = "" if token() else "; MPSBENCH_TOKEN is not set"
            return Outcome(_move(path, outbox_dir()), "queued",
                           f"{server_error(answer)}{hint}; kept in the outbox for the next push")
        return Outcome(_move(path, outbox_dir() / "rejected"), "rejected", server_error(answer))

    def push(self, paths: list[Path], include_outbox: bool = True) -> list[Outcome]:
        queued = sorted(outbox_dir().glob("*.json")) if include_outbox and outbox_dir().exists() else []
        names = {p.name for p in paths}
        todo = list(dict.fromkeys(paths)) + [q for q in queued if q.name not in names]
        return [self.send(p) for p in todo]


def _move(path: Path, folder: Path) -> Path:
    """Copy into folder (the original bundle in runs/ stays); from the outbox itself, move."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / path.name
    if path.resolve() == target.resolve():
        return target
    if path.parent.resolve() == outbox_dir().resolve():
        shutil.move(path, target)
    else:
        shutil.copy2(path, target)
    return target
