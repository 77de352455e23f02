"""The installed `mpsbench` command (pip install -e .): one entry point over the collector, the store and the web."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from db.store.tables import STORE_VERSION

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).with_name("mpsbench")


def mpsbench(*args: str, db: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **({"MPSBENCH_DB": str(db)} if db else {})}
    return subprocess.run([str(SCRIPT), *args], cwd="/", env=env, capture_output=True, text=True, timeout=120)


def test_the_console_script_is_installed():
    assert SCRIPT.exists(), "run scripts/test.sh (pip install -e .) first"


def test_help_lists_every_command():
    out = mpsbench("--help")
    assert out.returncode == 0
    assert set(re.findall(r"^  (\w+) ", out.stdout, re.M)) == {
        "run",
        "list",
        "show",
        "sweep",
        "push",
        "ingest",
        "info",
        "compare",
        "retract",
        "backup",
        "restore",
        "serve",
        "confirm",
        "bisect",
        "export",
    }


def test_unknown_command_prints_usage_and_exits_2():
    out = mpsbench("frobnicate")
    assert out.returncode == 2 and out.stdout == "" and out.stderr.startswith("usage: mpsbench COMMAND")


def test_store_commands_run_from_any_directory(tmp_path):
    from db.store.engine import open_store

    open_store(tmp_path / "s.duckdb").dispose()  # info reads a store; it makes none (tests/test_db_cli.py)
    out = mpsbench("info", db=tmp_path / "s.duckdb")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1:3] == [f"store version: {STORE_VERSION}", "runs: 0"]


def test_collector_commands_dispatch(tmp_path):
    out = mpsbench("show", str(tmp_path / "missing.json"))
    assert out.returncode == 1 and "ERROR:" in out.stdout


@pytest.mark.parametrize(
    "folder", ["api", "bundle", "collector", "db", "pages", "mpsbench", "benchmarks", "tests", "scripts"]
)
def test_no_sys_path_edits(folder):
    """The project is a package: nothing inserts the repo root into sys.path."""
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / folder).rglob("*.py")
        if "sys.path.insert" in p.read_text(encoding="utf-8") and p.name != "test_mpsbench_cli.py"
    ]
    assert offenders == []
