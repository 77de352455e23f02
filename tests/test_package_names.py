"""The repo's top-level packages must not shadow an installed distribution.

The repo root is on sys.path first (pytest, `python -m collector`, `streamlit run app.py`), so a top-level
folder named like an installed package replaces it for every importer. transformers 5.25 requires Hugging Face's
`kernels` package and imports it; the op families used to live in a top-level `kernels/`, which broke every
model workload.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def top_level_modules(root: Path) -> set[str]:
    packages = {p.parent.name for p in root.glob("*/__init__.py")}
    modules = {p.stem for p in root.glob("*.py")}
    return packages | modules


def test_no_top_level_package_shadows_an_installed_distribution():
    installed = importlib.metadata.packages_distributions()
    # the project itself is installed (pip install -e .): its own packages map to "mpsbench"
    clashes = {
        name: installed[name]
        for name in top_level_modules(ROOT)
        if set(installed.get(name, ["mpsbench"])) != {"mpsbench"}
    }
    assert clashes == {}, f"repo folders shadow installed distributions (rename them): {clashes}"


def test_the_check_sees_a_clash(tmp_path):
    (tmp_path / "numpy").mkdir()
    (tmp_path / "numpy" / "__init__.py").write_text("")
    (tmp_path / "app.py").write_text("")
    assert top_level_modules(tmp_path) == {"numpy", "app"}
    assert "numpy" in importlib.metadata.packages_distributions()


def test_op_families_import_from_the_collector_package():
    import collector.kernels
    from collector.catalog import DEFAULT_SOURCES

    assert Path(collector.kernels.__file__).parent == ROOT / "collector" / "kernels"
    assert "collector.kernels:WORKLOADS" in DEFAULT_SOURCES
