"""The layers of the README's layout, as import-linter contracts (pyproject.toml [tool.importlinter])."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_each_layer_imports_only_the_ones_below_it():
    lint = shutil.which("lint-imports")
    assert lint, "import-linter is a dev requirement (requirements-dev.txt)"
    done = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "Contracts: 3 kept, 0 broken." in done.stdout
