"""push: bearer token, retry with backoff on 5xx/429/connection errors, outbox, rejected/ on a 4xx refusal."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from collector.errors import CollectorError
from collector.push.pusher import Pusher, endpoint


class Server:
    """A tiny upload endpoint on 127.0.0.1 answering from a script of (status, body) replies."""

    def __init__(self, replies: list[tuple[int, dict]]):
        self.replies, self.requests = list(replies), []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # http.server's API
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.requests.append((self.path, self.headers.get("Authorization"), body))
                status, reply = outer.replies.pop(0) if outer.replies else (201, {"run_id": "x"})
                data = json.dumps(reply).encode()
                self.send_response(status)
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
    monkeypatch.setenv("MPSBENCH_OUTBOX", str(box))
    monkeypatch.setenv("MPSBENCH_TOKEN", "s3cret")
    return box


def bundle_file(tmp_path: Path, name: str = "a" * 32) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"run_id": name}))
    return path


def free_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"  # closed again: connections are refused


def test_retries_5xx_and_429_then_delivers_with_the_token(tmp_path, outbox):
    server = Server([(503, {}), (429, {}), (201, {"run_id": "a"})])
    try:
        [o] = Pusher(server.url, backoff_s=0.01).push([bundle_file(tmp_path)])
    finally:
        server.close()
    assert o.state == "sent" and len(server.requests) == 3
    path, auth, body = server.requests[-1]
    assert path == "/api/v1/runs" and auth == "Bearer s3cret" and json.loads(body)["run_id"] == "a" * 32


def test_unreachable_server_queues_in_outbox_and_next_push_sends_it(tmp_path, outbox):
    f = bundle_file(tmp_path)
    [o] = Pusher(free_port_url(), attempts=2, backoff_s=0.01).push([f])
    assert o.state == "queued" and (outbox / f.name).exists() and f.exists()
    server = Server([])
    try:
        outcomes = Pusher(server.url, backoff_s=0.01).push([])  # `push --outbox`
    finally:
        server.close()
    assert [x.state for x in outcomes] == ["sent"] and not (outbox / f.name).exists()
    assert len(server.requests) == 1


def test_refusal_is_not_retried_and_kept_in_rejected_with_the_servers_rule(tmp_path, outbox):
    error = {
        "error": {
            "message": "bundle refused",
            "problems": [{"field": "results[0].unit", "rule": "unit must be a time unit"}],
        }
    }
    server = Server([(422, error)])
    try:
        [o] = Pusher(server.url, backoff_s=0.01).push([bundle_file(tmp_path)])
    finally:
        server.close()
    assert o.state == "rejected" and len(server.requests) == 1
    assert "results[0].unit: unit must be a time unit" in o.detail and "422" in o.detail
    rejected = outbox / "rejected" / f"{'a' * 32}.json"
    note = rejected.with_suffix(".error.txt")
    assert rejected.exists() and "results[0].unit: unit must be a time unit" in note.read_text()


def test_a_500_is_retried_keeps_the_bundle_in_the_outbox_and_it_is_delivered_when_the_server_recovers(tmp_path, outbox):
    failing = {
        "ok": False,
        "status": 500,
        "error": "internal error (logged on the server)",
        "errors": [{"field": "server", "rule": "an unexpected error; nothing was stored"}],
    }
    server = Server([(500, failing)] * 5)
    f = bundle_file(tmp_path)
    try:
        [o] = Pusher(server.url, backoff_s=0.01).push([f])  # 5 attempts by default, all answered 500
        assert len(server.requests) == 5 and o.state == "queued" and o.path == outbox / f.name
        assert "HTTP 500: internal error" in o.detail and "after 5 attempts" in o.detail
        assert (outbox / f.name).read_bytes() == f.read_bytes() and not (outbox / "failed").exists()
        [again] = Pusher(server.url, backoff_s=0.01).push([])  # the server recovered: `push --outbox` delivers it
    finally:
        server.close()
    assert again.state == "sent" and len(server.requests) == 6 and server.requests[-1][2] == f.read_bytes()
    assert not list(outbox.glob("*.json"))


def test_a_bundle_an_older_version_set_aside_in_failed_is_sent_by_the_next_push(tmp_path, outbox):
    (outbox / "failed").mkdir(parents=True)
    shelved = bundle_file(outbox / "failed")
    shelved.with_suffix(".error.txt").write_text("HTTP 500: boom\n")
    server = Server([])
    try:
        [o] = Pusher(server.url, backoff_s=0.01).push([])
    finally:
        server.close()
    assert o.state == "sent" and not shelved.exists() and not shelved.with_suffix(".error.txt").exists()


def test_a_4xx_that_does_not_refuse_the_bundle_keeps_it_in_the_outbox(tmp_path, outbox):
    server = Server([(404, {"ok": False, "status": 404, "error": "no such API route"})])
    try:
        [o] = Pusher(server.url, backoff_s=0.01).push([bundle_file(tmp_path)])
    finally:
        server.close()
    assert o.state == "queued" and "HTTP 404: no such API route" in o.detail and len(server.requests) == 1
    assert (outbox / f"{'a' * 32}.json").exists() and not (outbox / "rejected").exists()


def test_the_apis_error_shape_is_reported_with_its_field_and_rule(tmp_path, outbox):
    refusal = {
        "ok": False,
        "status": 422,
        "error": "invalid bundle",
        "errors": [{"field": "results[1]", "rule": "results[1] repeats the case of results[0]"}],
    }
    server = Server([(422, refusal)])
    try:
        [o] = Pusher(server.url, backoff_s=0.01).push([bundle_file(tmp_path)])
    finally:
        server.close()
    assert o.state == "rejected" and "results[1]: results[1] repeats the case of results[0]" in o.detail


def test_exhausted_retries_on_a_503_queue_the_bundle_for_the_next_push(tmp_path, outbox):
    server = Server([(503, {"error": {"message": "store unavailable"}})] * 3)
    try:
        [o] = Pusher(server.url, attempts=3, backoff_s=0.01).push([bundle_file(tmp_path)])
        [again] = Pusher(server.url, backoff_s=0.01).push([])
    finally:
        server.close()
    assert o.state == "queued" and "HTTP 503" in o.detail and "after 3 attempts" in o.detail
    assert again.state == "sent" and len(server.requests) == 4 and not list(outbox.glob("*.json"))


def test_without_a_token_no_header_is_sent_and_a_401_waits_in_the_outbox(tmp_path, outbox, monkeypatch):
    monkeypatch.delenv("MPSBENCH_TOKEN")
    server = Server([(401, {"error": {"message": "missing or wrong upload token"}})])
    try:
        [o] = Pusher(server.url, backoff_s=0.01).push([bundle_file(tmp_path)])
    finally:
        server.close()
    assert server.requests[0][1] is None and len(server.requests) == 1  # no Authorization, not retried
    assert o.state == "queued" and "HTTP 401" in o.detail and "MPSBENCH_TOKEN is not set" in o.detail
    assert (outbox / f"{'a' * 32}.json").exists() and not (outbox / "rejected").exists()


@pytest.mark.parametrize("url", ["{base}", "{base}/", "{base}/api/v1/runs", "{base}/api/v1/runs/", "{base}/api/v1"])
def test_base_url_and_full_endpoint_reach_the_same_endpoint(tmp_path, outbox, url):
    server = Server([])
    try:
        [o] = Pusher(url.format(base=server.url), backoff_s=0.01).push([bundle_file(tmp_path)])
    finally:
        server.close()
    assert o.state == "sent" and [r[0] for r in server.requests] == ["/api/v1/runs"]


def test_a_prefix_behind_a_proxy_is_kept():
    assert endpoint("https://lab.example/mpsbench/") == "https://lab.example/mpsbench/api/v1/runs"
    assert endpoint("http://h:8501/mpsbench/api/v1/runs") == "http://h:8501/mpsbench/api/v1/runs"


@pytest.mark.parametrize("url", ["127.0.0.1:8501", "ftp://h/x", "http://", ""])
def test_a_bad_url_is_refused_naming_the_rule(url):
    with pytest.raises(CollectorError, match=r"push URL must be http\(s\)://HOST"):
        Pusher(url)


def test_push_command_prints_the_servers_rule_and_exits_1(tmp_path, outbox, capsys, monkeypatch):
    from collector.cli.main import main

    monkeypatch.setenv("COLUMNS", "200")
    error = {"error": {"message": "refused", "problems": [{"field": "run_id", "rule": "must be 32 hex digits"}]}}
    server = Server([(400, error)])
    try:
        code = main(["push", str(bundle_file(tmp_path)), "--url", server.url])
    finally:
        server.close()
    out = capsys.readouterr().out
    assert code == 1 and "rejected" in out and "run_id: must be 32 hex digits" in out


def test_push_command_without_files_or_outbox_is_an_error(capsys):
    from collector.cli.main import main

    assert main(["push", "--url", "http://127.0.0.1:9"]) == 1
    assert capsys.readouterr().out.startswith("ERROR: push:")
