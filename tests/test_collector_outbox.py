"""The outbox is locked while pushed: two concurrent `push --outbox` send each bundle exactly once; a push that
cannot get the lock says so and sends nothing; a bundle that vanished meanwhile is skipped, not a crash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from collector.push.pusher import MAX_RETRY_AFTER_S, Pusher, _retry_after_s, outbox_lock

ROOT = Path(__file__).resolve().parents[1]


class CountingServer:
    """Answers 201 to every upload after `delay_s`, counting uploads per run_id; `on_request` runs first."""

    def __init__(self, delay_s: float = 0.0, on_request=None, first: tuple[int, dict] | None = None):
        self.counts: Counter[str] = Counter()
        self.first = first  # (status, headers) of the first answer; 201 after it
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # http.server's API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if on_request:
                    on_request(body)
                time.sleep(delay_s)  # long enough for the two pushes to overlap
                outer.counts[body["run_id"]] += 1
                status, headers = outer.first or (201, {})
                outer.first = None
                data = b'{"run_id": "x"}'
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def outbox(tmp_path, monkeypatch):
    box = tmp_path / "outbox"
    box.mkdir()
    monkeypatch.setenv("MPSBENCH_OUTBOX", str(box))
    monkeypatch.delenv("MPSBENCH_TOKEN", raising=False)
    return box


def queue(box: Path, n: int) -> list[str]:
    names = [f"{i:032x}" for i in range(n)]
    for name in names:
        (box / f"{name}.json").write_text(json.dumps({"run_id": name}))
    return names


def test_two_concurrent_outbox_pushes_send_each_bundle_exactly_once(outbox):
    names = queue(outbox, 4)
    server = CountingServer(delay_s=0.5)  # 4 bundles: the first push holds the lock >= 2 s
    env = {**os.environ, "MPSBENCH_OUTBOX": str(outbox), "COLUMNS": "200"}
    cmd = [sys.executable, "-m", "collector", "push", "--outbox", "--url", server.url]
    try:
        pushes = [
            subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for _ in range(2)
        ]
        outs = [p.communicate(timeout=120)[0] for p in pushes]
    finally:
        server.close()
    assert [p.returncode for p in pushes] == [0, 0], outs
    assert server.counts == Counter({name: 1 for name in names})  # each exactly once, none twice
    assert sum(o.count("sent") for o in outs) == 4 and any("outbox is empty" in o for o in outs)
    assert not list(outbox.glob("*.json"))


def test_a_push_that_cannot_get_the_lock_sends_nothing_and_says_who_holds_it(outbox, tmp_path):
    queue(outbox, 2)
    named = tmp_path / f"{'b' * 32}.json"
    named.write_text(json.dumps({"run_id": "b" * 32}))
    server = CountingServer()
    try:
        with outbox_lock(outbox, wait_s=0) as holder:
            assert holder is None
            outcomes = Pusher(server.url, lock_wait_s=0.2).push([named])
    finally:
        server.close()
    assert not server.counts
    assert [o.state for o in outcomes] == ["queued", "busy"]
    assert f"pid {os.getpid()}" in outcomes[1].detail and "nothing sent" in outcomes[1].detail
    assert (outbox / named.name).exists() and named.exists()  # kept for the next push


def test_a_bundle_that_vanished_meanwhile_is_skipped(outbox):
    first, second = queue(outbox, 2)

    def someone_else_takes_the_second(body: dict) -> None:
        (outbox / f"{second}.json").unlink(missing_ok=True)

    server = CountingServer(on_request=someone_else_takes_the_second)
    try:
        outcomes = Pusher(server.url).push([])
    finally:
        server.close()
    assert [(o.path.name, o.state) for o in outcomes] == [(f"{first}.json", "sent"), (f"{second}.json", "skipped")]
    assert "vanished" in outcomes[1].detail and server.counts == Counter({first: 1})


def test_a_503_with_retry_after_is_retried_after_that_long_and_capped():
    assert _retry_after_s(httpx.Response(503, headers={"Retry-After": "5"})) == 5.0
    assert _retry_after_s(httpx.Response(503, headers={"Retry-After": "86400"})) == MAX_RETRY_AFTER_S == 30.0
    assert _retry_after_s(httpx.Response(503, headers={"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"})) == 0.0
    assert _retry_after_s(httpx.Response(503)) == 0.0 and _retry_after_s("ConnectError: refused") == 0.0


def test_the_server_s_retry_after_is_waited_before_the_next_attempt(outbox):
    [name] = queue(outbox, 1)
    server = CountingServer(first=(503, {"Retry-After": "1"}))
    try:
        start = time.perf_counter()
        [o] = Pusher(server.url, backoff_s=0.01).push([])
        waited = time.perf_counter() - start
    finally:
        server.close()
    assert o.state == "sent" and server.counts == Counter({name: 2}) and waited >= 1.0
