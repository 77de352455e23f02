"""Deliver bundles to the server: POST <URL>/api/v1/runs with a bearer token, retry, outbox, rejected/.

URL is the dashboard's base URL (http://host:8501, or behind a proxy http://host/mpsbench) or the endpoint
itself (…/api/v1/runs); both reach the same endpoint. The token is MPSBENCH_TOKEN; without it no
Authorization header is sent and the server answers 401 (every write needs a token, loopback too: a server
without configured tokens prints the one it generated at start).
Connection errors, 5xx, 408 and 429 are retried (5 attempts in all, backoff 0.5, 1, 2, 4 s, or the server's
Retry-After up to 30 s). A bundle not delivered for any reason but its own content waits in the outbox
(MPSBENCH_OUTBOX, default ~/.mpsbench/outbox) for the next push: no connection, any 5xx (a store fault, a proxy,
a server bug: the server may recover, and a valid bundle must not be shelved), 408, 429, 401/403 (the bundle is
fine, the credentials are not) and any other answer that does not refuse the bundle itself (a 404 from a wrong
URL or prefix). Only the server refusing the bundle (BUNDLE_REFUSALS with its JSON error: not JSON, invalid,
run_id conflict, too large) moves it to outbox/rejected/ with the server's error (field/rule) beside it
(NAME.error.txt): resending it unchanged would be refused again. outbox/failed/ (older versions set 500s aside
there) is sent again by the next push like the outbox.
A push holds an exclusive lock on the outbox (fcntl.flock on outbox/.lock) from listing it to the last answer, so
two concurrent pushes never send a bundle twice: the second waits (up to lock_wait_s) and then finds what is left.
A bundle that vanished meanwhile is skipped.
"""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit

import httpx

from collector.errors import CollectorError

RETRYABLE = {408, 429}
CREDENTIALS = {401, 403}
BUNDLE_REFUSALS = {400, 409, 413, 422}  # the server's answers about the bundle itself (api/upload.py)
MAX_RETRY_AFTER_S = 30.0  # a server's Retry-After is honoured up to this, so one push stays bounded
ENDPOINT = "/api/v1/runs"


@dataclass
class Outcome:
    path: Path
    state: str  # "sent" | "queued" | "rejected" | "skipped" (vanished) | "busy" (locked)
    detail: str


def outbox_dir() -> Path:
    return Path(os.environ.get("MPSBENCH_OUTBOX") or Path.home() / ".mpsbench" / "outbox")


def token() -> str | None:
    return os.environ.get("MPSBENCH_TOKEN", "").strip() or None


def endpoint(url: str) -> str:
    """The upload endpoint for a base URL or the endpoint itself; anything but http(s)://host… is refused."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CollectorError(
            f"push URL must be http(s)://HOST[:PORT][/PREFIX] of the dashboard, e.g. "
            f"http://127.0.0.1:8501 (got {url!r})"
        )
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
    problems = (
        (err.get("problems") if isinstance(err, dict) else None) or body.get("problems") or body.get("errors") or []
    )  # api/errors.py: {"error": "…", "errors": [{"field", "rule"}]}
    details = "; ".join(f"{p.get('field')}: {p.get('rule')}" for p in problems if isinstance(p, dict))
    return f"HTTP {response.status_code}: {message}" + (f" ({details})" if details else "")


@contextmanager
def outbox_lock(box: Path, wait_s: float) -> Iterator[str | None]:
    """Hold the outbox's exclusive lock; yields None when held, else who holds it (after waiting wait_s)."""
    box.mkdir(parents=True, exist_ok=True)
    with open(box / ".lock", "a+", encoding="utf-8") as f:
        end = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= end:
                    f.seek(0)
                    yield f"pid {f.read().strip() or '?'}"
                    return
                time.sleep(0.05)
        try:
            f.seek(0)
            f.truncate()
            f.write(str(os.getpid()))
            f.flush()
            yield None
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@dataclass
class Pusher:
    url: str
    attempts: int = 5
    backoff_s: float = 0.5
    timeout_s: float = 30.0
    lock_wait_s: float = 120.0

    def __post_init__(self) -> None:
        self.endpoint = endpoint(self.url)  # a bad URL is refused before anything is sent

    def _post(self, body: bytes) -> httpx.Response | str:
        """The server's last answer (retries spent on 5xx/408/429), or the connection error text."""
        secret = token()
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {secret}"} if secret else {})}
        last: httpx.Response | str = ""
        for attempt in range(self.attempts):
            if attempt:
                time.sleep(max(self.backoff_s * 2 ** (attempt - 1), _retry_after_s(last)))
            try:
                last = httpx.post(self.endpoint, content=body, headers=headers, timeout=self.timeout_s)
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if last.status_code < 500 and last.status_code not in RETRYABLE:
                break
        return last

    def send(self, path: Path) -> Outcome:
        try:
            body = path.read_bytes()
        except FileNotFoundError:
            return Outcome(path, "skipped", "vanished before it was sent (another push or a person moved it)")
        answer = self._post(body)
        tries = f"after {self.attempts} attempts"
        if isinstance(answer, str):
            return Outcome(
                _keep(path, body, outbox_dir()),
                "queued",
                f"not delivered ({answer}, {tries}); kept in the outbox for the next push",
            )
        status = answer.status_code
        if status < 300:
            _done(path)
            return Outcome(path, "sent", f"HTTP {status} from {self.endpoint}")
        if status in BUNDLE_REFUSALS and _is_json(answer):
            return Outcome(
                _keep(path, body, outbox_dir() / "rejected", server_error(answer)), "rejected", server_error(answer)
            )
        hint = "; MPSBENCH_TOKEN is not set" if status in CREDENTIALS and not token() else ""
        retried = f" ({tries})" if status >= 500 or status in RETRYABLE else ""
        return Outcome(
            _keep(path, body, outbox_dir()),
            "queued",
            f"{server_error(answer)}{retried}{hint}; kept in the outbox for the next push",
        )

    def push(self, paths: list[Path], include_outbox: bool = True) -> list[Outcome]:
        box = outbox_dir()
        with outbox_lock(box, self.lock_wait_s) as holder:
            if holder is not None:
                busy = f"another push ({holder}) held the outbox lock for {self.lock_wait_s:g} s"
                kept = [
                    Outcome(_keep(p, p.read_bytes(), box), "queued", f"{busy}; kept in the outbox for the next push")
                    for p in dict.fromkeys(paths)
                    if p.is_file()
                ]
                return kept + [Outcome(box, "busy", f"{busy}; nothing sent")]
            # Listed under the lock: a bundle another push has sent is gone from the outbox by now.
            queued = sorted([*box.glob("*.json"), *(box / "failed").glob("*.json")]) if include_outbox else []
            todo, names = list(dict.fromkeys(paths)), {p.name for p in paths}
            for q in queued:  # one copy of a name (the outbox's sorts before failed/'s)
                if q.name not in names:
                    todo.append(q)
                    names.add(q.name)
            return [self.send(p) for p in todo]


def _is_json(answer: httpx.Response) -> bool:
    """The server's own JSON error (a proxy's refusal is HTML): what lets a 4xx name the bundle."""
    try:
        return isinstance(answer.json(), dict)
    except ValueError:
        return False


def _retry_after_s(answer: httpx.Response | str) -> float:
    """The server's Retry-After in seconds (a 503 from a store being reopened), capped at MAX_RETRY_AFTER_S."""
    value = answer.headers.get("Retry-After", "") if isinstance(answer, httpx.Response) else ""
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S)
    except ValueError:  # absent, or an HTTP date: the backoff alone
        return 0.0


def _waiting_folders() -> list[Path]:
    box = outbox_dir()
    return [box, box / "failed", box / "rejected"]


def _done(path: Path) -> None:
    """Sent: every waiting copy of it (outbox, failed/, rejected/) goes, with its error note."""
    for folder in _waiting_folders():
        (folder / path.name).unlink(missing_ok=True)
        (folder / path.name).with_suffix(".error.txt").unlink(missing_ok=True)


def _keep(path: Path, body: bytes, folder: Path, error: str | None = None) -> Path:
    """Write body into folder (atomically; the original in runs/ stays); from a waiting folder, move."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / path.name
    if path.resolve() != target.resolve():
        tmp = target.with_suffix(".json.tmp")
        tmp.write_bytes(body)
        os.replace(tmp, target)
        if path.parent.resolve() in {f.resolve() for f in _waiting_folders()}:
            path.unlink(missing_ok=True)
            path.with_suffix(".error.txt").unlink(missing_ok=True)
    if error is not None:
        target.with_suffix(".error.txt").write_text(error + "\n", encoding="utf-8")
    return target
