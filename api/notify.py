"""Upload notifications: a Slack-compatible JSON post ({"text": "…"}) when an upload adds a new regression to the
release review.

Configured by the server's environment: MPSBENCH_NOTIFY_URL (the webhook; unset: no notifications),
MPSBENCH_NOTIFY_REVIEW (which review, as URL parameters `baseline=…&candidate=…[&scope=…&threshold=…]`, scope
chip unless given; unset: the default release comparison — the latest stable build against the newest rc or nightly
after it, db.views.defaults.default_sides — on chip scope, re-resolved at each upload) and MPSBENCH_PUBLIC_URL
(the dashboard's address, for the post's link to the review's Regressions page).

"New" = a regression key (db.store.writers.triage.NOTE_KEY: case, dtype, compile, metric, scope) in the review after the
upload that was not in it before. "Before" is the set last notified for that review, kept in memory and in
mpsbench-notified.json beside the store: no review is judged before an ingest, so an upload never waits for one.
A post the receiver never took leaves its regressions out of that set: they are new again at the next upload.
The server's start (`prime()`, before it takes any upload) records the review's set there and then, so an upload
that comes a moment after the start is judged against the review as it was before it (when the priming was a queued
item, uploads within SETTLE_S of the start were judged with it and recorded as already seen: 0 posts). Where
no start primed it (a check with no state yet), the first check only records its set and posts nothing.
An upload answers first: the hook only queues it (microseconds); one background thread judges the review once the
uploads pause (SETTLE_S; once per data version, shared with the pages) and posts, retried with back-off (TRIES
tries). Each try has one deadline, POST_DEADLINE_S, for the whole post, connect to last byte (httpx's own timeout,
set to the same number, is per read: a receiver trickling a byte every few seconds held the one thread for ever; the
README quotes this number, tests/test_notify.py keeps them equal), so the uploads queued meanwhile are judged
and posted next, at most TRIES deadlines plus the back-off later. Each failed try is one log line (what failed, never
the webhook's URL, which holds its secret); a receiver that fails or is down is never seen by an upload. A burst of
uploads is judged once and reported in one post. Which review, and its regressions in words: api/notify_review.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import sys
import threading
import time
from pathlib import Path

import httpx

from api.notify_review import URL_VAR, Settings, regression_lines, release_review, review_link
from db.views.actions.access import beside_store
from db.views.release.review import Review
from db.views.serving import shared_engine, store_path

STATE_FILE = "mpsbench-notified.json"
TRIES = 3
BACKOFF_S = (2.0, 8.0)  # the waits after the first and second failed tries
POST_DEADLINE_S = 15.0  # one try, whole: connect, send, and the answer to its last byte (httpx's per-phase too)
SETTLE_S = 1.0  # the review is judged once no upload has come for this long…
BURST_S = 30.0  # …or this long after the first upload waiting
LISTED = 10  # regressions written out in one post; the rest are counted


_said: set[str] = set()


def _log(text: str, once: bool = False) -> None:
    if once and text in _said:
        return  # a misconfiguration is said once, not at every upload
    _said.add(text)
    print(f"mpsbench notify: {text}", file=sys.stderr, flush=True)


class PostFailed(Exception):
    """A try that did not deliver: what went wrong, in words that do not name the webhook's URL."""


async def _post(url: str, doc: dict, timeout_s: float) -> int:
    async with httpx.AsyncClient(timeout=timeout_s) as client:
        return (await client.post(url, json=doc)).status_code


def post_json(url: str, doc: dict, deadline_s: float | None = None) -> None:
    """One POST, whole within `deadline_s` (POST_DEADLINE_S): cancelled there, its connection closed; anything
    but a 2xx answer raises PostFailed."""
    deadline_s = POST_DEADLINE_S if deadline_s is None else deadline_s
    try:
        status = asyncio.run(asyncio.wait_for(_post(url, doc, deadline_s), deadline_s))
    except (asyncio.TimeoutError, TimeoutError):
        raise PostFailed(f"no complete answer within {deadline_s:g} s") from None
    except httpx.TimeoutException as exc:
        raise PostFailed(f"no complete answer within {deadline_s:g} s ({type(exc).__name__})") from None
    except httpx.HTTPError as exc:  # refused, reset, unreachable: its text, without the URL httpx may add
        raise PostFailed(f"{type(exc).__name__}: {str(exc).replace(url, '<url>')[:200]}") from None
    if not 200 <= status < 300:
        raise PostFailed(f"answered HTTP {status}")


class Notifier:
    """One review's notifications for one store: a queue of uploads, one worker thread, the last seen sets."""

    def __init__(self, settings: Settings, state: Path | None):
        self.settings, self.state_path = settings, state
        self.seen: dict[str, dict] = self._read_state()
        self.sent: list[dict] = []  # what was delivered (for the log and tests)
        self.judged_s = 0.0  # how long the last check took to judge the review
        self.tries = 0  # posts tried, delivered or not
        self._queue: queue.Queue = queue.Queue()
        self._judging = threading.Lock()  # prime (the start's thread) and the worker's checks take turns
        threading.Thread(target=self._work, name="mpsbench-notify", daemon=True).start()

    @property
    def spec(self) -> str:
        return self.settings.review or "default"

    def uploaded(self, run_id: str, who: str) -> None:
        self._queue.put((run_id, who))

    def prime(self) -> None:
        """Record the review's regressions now, before the server takes an upload (called from its start): an
        upload a moment later is judged against this set. A review that cannot be judged now is logged; the
        first check then records its set instead."""
        with self._judging:
            try:
                engine = shared_engine()
                review = release_review(engine, self.settings)
                self._remember(review, regression_lines(engine, review))
            except Exception as exc:  # noqa: BLE001 - a notification never stops a server from starting
                _log(f"the release review could not be recorded at start: {exc}")

    def wait_idle(self, timeout_s: float) -> bool:
        """True once every queued upload has been judged and posted (or given up): for tests."""
        end = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks and time.monotonic() < end:
            time.sleep(0.02)
        return not self._queue.unfinished_tasks

    def _work(self) -> None:
        while True:
            batch = self._burst()
            try:
                with self._judging:
                    self._check(batch)
            except Exception as exc:  # noqa: BLE001 - a notification never takes the server down
                _log(f"the release review could not be checked: {exc}")
            finally:
                for _ in batch:
                    self._queue.task_done()

    def _burst(self) -> list:
        """The next upload and those that follow it within SETTLE_S of each other (for at most BURST_S): the
        review is judged once the uploads pause, so its ~0.5 s of CPU does not slow their answers, and a burst
        (a sweep pushing its runs) is one post."""
        batch = [self._queue.get()]
        end = time.monotonic() + BURST_S
        while time.monotonic() < end:
            try:
                batch.append(self._queue.get(timeout=SETTLE_S))
            except queue.Empty:
                break
        return batch

    def _check(self, uploads: list[tuple[str, str]]) -> None:
        engine = shared_engine()
        start = time.perf_counter()
        review = release_review(engine, self.settings)
        after = regression_lines(engine, review)
        self.judged_s = time.perf_counter() - start
        before = self.seen.get(self.spec)
        if before is None or review is None or not uploads:
            self._remember(review, after)  # first sight of this review: its regressions are the starting point
            return
        told = set(before["keys"])
        new = {key: line for key, line in after.items() if key not in told}
        if new and not self._deliver({"text": self._text(review, list(new.values()), uploads)}):
            after = {k: v for k, v in after.items() if k not in new}  # not told: new again at the next upload
        self._remember(review, after)

    def _text(self, review: Review, new: list[str], uploads: list[tuple[str, str]]) -> str:
        q = review.compare
        runs = ", ".join(f"run {run_id} by {who}" for run_id, who in uploads)
        lines = [f"• {line}" for line in new[:LISTED]]
        if len(new) > LISTED:
            lines.append(f"… and {len(new) - LISTED} more")
        return "\n".join(
            [
                f"mpsbench: {len(new)} new regression(s) in the release review {q.baseline} → "
                f"{q.candidate} ({q.scope} scope, threshold {review.threshold:g} %) after {runs}:",
                *lines,
                review_link(self.settings, review),
            ]
        )

    def _deliver(self, doc: dict) -> bool:
        """True once the receiver took the post; False after TRIES failures, each one logged."""
        for attempt in range(TRIES):
            try:
                self.tries += 1
                post_json(self.settings.url, doc)
                self.sent.append(doc)
                return True
            except Exception as exc:  # noqa: BLE001 - refused, timed out, a 5xx: try again, then give up
                why = str(exc) if isinstance(exc, PostFailed) else f"{type(exc).__name__}: {exc}"
                if attempt + 1 == TRIES:
                    _log(
                        f"post to {URL_VAR} failed (try {TRIES} of {TRIES}): {why}; its regressions are kept for "
                        f"the next upload: {doc['text'][:200]}"
                    )
                    return False
                wait = BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)]
                _log(f"post to {URL_VAR} failed (try {attempt + 1} of {TRIES}): {why}; again in {wait:g} s")
                time.sleep(wait)
        return False

    def _read_state(self) -> dict:
        try:
            return json.loads(self.state_path.read_text(encoding="utf-8")) if self.state_path else {}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            _log(f"{self.state_path} is unreadable ({exc}): the next check starts afresh")
            return {}

    def _remember(self, review: Review | None, after: dict[str, str]) -> None:
        q = review.compare if review else None
        self.seen[self.spec] = {
            "baseline": q.baseline if q else "",
            "candidate": q.candidate if q else "",
            "keys": sorted(after),
        }
        if self.state_path is None:
            return
        try:
            partial = self.state_path.with_suffix(".tmp")
            partial.write_text(json.dumps(self.seen, indent=1), encoding="utf-8")
            os.replace(partial, self.state_path)  # whole or not at all
        except OSError as exc:
            _log(f"{self.state_path} could not be written ({exc}): kept in memory only")


_notifiers: dict[tuple, Notifier] = {}
_lock = threading.Lock()


def notifier() -> Notifier | None:
    """This store's notifier for the configured review (None: notifications are off or misconfigured, logged)."""
    try:
        settings = Settings.from_env()
    except ValueError as exc:
        _log(f"notifications are off: {exc}", once=True)
        return None
    if settings is None:
        return None
    target = store_path()
    key = (target, settings)
    with _lock:
        if key not in _notifiers:
            state = beside_store(STATE_FILE)  # beside the store file, or a lake's shared data folder
            _notifiers[key] = Notifier(settings, state)
        return _notifiers[key]


def prime() -> None:
    """Record the configured review's regressions now (at server start), so the first upload is compared with them."""
    found = notifier()
    if found is not None:
        found.prime()


def notify_upload(outcome, who: str) -> None:
    """api/upload.py's hook after a successful ingest: queue a stored new run (never raises, never waits)."""
    try:
        if outcome.created:
            found = notifier()
            if found is not None:
                found.uploaded(outcome.run_id, who)
    except Exception as exc:  # noqa: BLE001 - an upload is never failed by its notification
        _log(f"the upload of {outcome.run_id} was not queued for notification: {exc}")
