"""The README's layout section names files that exist: its route of one sample is what a newcomer opens."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _layout() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text[text.index("## Layout") :].split("\n## ", 1)[0]


def test_every_file_the_layout_names_exists():
    named = re.findall(r"`((?:[\w.-]+/)+[\w.-]+\.(?:py|json))`", _layout())
    assert len(named) >= 12
    assert [p for p in named if not (ROOT / p).exists()] == []


def test_the_route_of_one_sample_is_the_numbered_files_it_counts():
    route = re.findall(r"^\d+\. `([\w/.]+\.py)`", _layout(), flags=re.M)
    stated = re.search(r"passes through these (\d+) files", _layout())
    assert stated and len(route) == int(stated.group(1)) and len(set(route)) == len(route)
    assert route[0] == "collector/timing/loop.py" and route[-1] == "pages/parts/charts.py"
    assert all((ROOT / p).is_file() for p in route)
