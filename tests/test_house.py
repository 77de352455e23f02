"""The house's size rules (issue 45), kept: no folder of the product, its benchmarks or its scripts holds more than
15 modules directly (every .py counted, __init__ and __main__ included), and no function is longer than 60 lines.
tests/ is left out: pytest finds its modules by name in one folder."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("mpsbench", "api", "pages", "db", "collector", "bundle", "benchmarks", "scripts")
MAX_MODULES = 15
MAX_LINES = 60


def _modules() -> list[Path]:
    return [p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py")] + [ROOT / "app.py"]


def test_no_folder_holds_more_than_15_modules():
    per_folder = Counter(p.parent.relative_to(ROOT).as_posix() for p in _modules())
    assert per_folder["collector/kernels"] > 1  # the walk reaches subfolders
    assert {f: n for f, n in per_folder.items() if n > MAX_MODULES} == {}


def test_no_function_is_longer_than_60_lines():
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []
