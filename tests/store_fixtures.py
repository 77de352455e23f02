"""Stores and servers the CLI and server tests share (the shared fixtures themselves are in tests/conftest.py)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from db.store.engine import open_store


def cli_store_file(tmp_path: Path, monkeypatch, fill) -> Path:
    """A store file filled by `fill(engine)` that the CLI reads (MPSBENCH_DB), with no token in the environment."""
    path = tmp_path / "cli.duckdb"
    engine = open_store(path)
    fill(engine)
    engine.dispose()
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    for name in ("MPSBENCH_TOKEN", "MPSBENCH_READ_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    return path


# who may do what, and from where: cleared so a server test sees only the variables it sets
SERVER_ENV = (
    "MPSBENCH_UPLOAD_TOKENS",
    "MPSBENCH_UPLOAD_TOKENS_FILE",
    "MPSBENCH_ADMIN_TOKENS",
    "MPSBENCH_READ_TOKENS",
    "MPSBENCH_ALLOWED_HOSTS",
    "MPSBENCH_TRUSTED_PROXIES",
    "MPSBENCH_TOKEN",
)


@contextmanager
def server_store(monkeypatch, path: Path, **env: str) -> Iterator[None]:
    """The server's store at `path` (MPSBENCH_DB) with SERVER_ENV cleared and `env` set; the shared engines
    forgotten before and disposed after."""
    import db.store.engine

    for name in SERVER_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(db.store.engine, "_shared", {})
    try:
        yield
    finally:
        for engine in db.store.engine._shared.values():
            engine.dispose()


@contextmanager
def api_client(monkeypatch, store: Path, tokens: str, **env: str) -> Iterator:
    """The HTTP API (app.api_routes) on a store at `store` (MPSBENCH_DB) with MPSBENCH_UPLOAD_TOKENS `tokens` and
    any other variables in `env`, set before its first request; its engines disposed and faults forgotten after."""
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    import db.store.engine
    from app import api_routes
    from db.store import faults

    monkeypatch.setenv("MPSBENCH_DB", str(store))
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", tokens)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(db.store.engine, "_shared", {})
    faults.write_succeeded()
    try:
        yield TestClient(Starlette(routes=api_routes()), client=("127.0.0.1", 50000), base_url="http://127.0.0.1")
    finally:
        for engine in db.store.engine._shared.values():
            engine.dispose()
        faults.write_succeeded()
