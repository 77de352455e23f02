"""The code's habits, kept: `ruff check` (the rules in pyproject.toml's [tool.ruff.lint]) and `ruff format --check`
pass over the whole repository. To fix locally: `ruff format . && ruff check --fix .`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUFF = Path(sys.executable).parent / "ruff"


@pytest.mark.skipif(
    not RUFF.is_file(),
    reason=f"ruff is not installed beside this Python ({RUFF}): `pip install -e .[dev]` or scripts/setup.sh dev",
)
@pytest.mark.parametrize(
    "args", [["check", "--output-format", "concise"], ["format", "--check"]], ids=["check", "format"]
)
def test_ruff(args):
    done = subprocess.run([str(RUFF), *args, "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (
        f"`ruff {' '.join(args)} .` found (fix: `ruff format . && ruff check --fix .`):\n{done.stdout}{done.stderr}"
    )
