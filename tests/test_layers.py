"""The layers of the README's layout, as import-linter contracts (pyproject.toml [tool.importlinter]), and no import
cycle anywhere: between the modules of every package and through app.py, imports inside functions counted."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("mpsbench", "api", "pages", "db", "collector", "bundle", "benchmarks", "scripts")


def _lint_imports(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    lint = shutil.which("lint-imports")
    assert lint, "import-linter is a dev requirement (requirements-dev.txt)"
    return subprocess.run([lint, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


def test_each_layer_imports_only_the_ones_below_it():
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "Contracts: 11 kept, 0 broken." in done.stdout


def _imports_of_module_file(path: Path, graph: grimp.ImportGraph) -> set[str]:
    """The project modules a lone module file (app.py) imports, anywhere in it: grimp takes packages only as roots,
    so it sees app.py only from outside."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        found |= {n for n in names if n in graph.modules and not graph.is_module_squashed(n)}
    return found


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """One shortest cycle through each import that has a way back to its importer, as a chain of module names."""
    cycles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                cycles.append([importer, *back])
    return cycles


def _graph(*packages: str, module_files: tuple[Path, ...] = ()) -> grimp.ImportGraph:
    graph = grimp.build_graph(*packages, include_external_packages=True, cache_dir=None)
    for path in module_files:
        for imported in _imports_of_module_file(path, graph):
            graph.add_import(importer=path.stem, imported=imported)
    return graph


def test_no_module_imports_one_that_imports_it_back():
    cycles = _cycles(_graph(*PACKAGES, module_files=(ROOT / "app.py",)))
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path, monkeypatch):
    """A planted cycle (one of its imports inside a function) breaks both checks above: the acyclic_siblings
    contract and the module graph's cycle search. Without it the same package passes both."""
    package = tmp_path / "plant"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "a.py").write_text("from plant.sub import b\n")
    (package / "sub" / "b.py").write_text("X = 1\n")
    (package / "sub" / "c.py").write_text("X = 2\n")
    (tmp_path / "top.py").write_text("def serve():\n    from plant.sub import c\n")
    (tmp_path / ".importlinter").write_text(
        "[importlinter]\nroot_packages =\n    plant\ninclude_external_packages = True\n\n"
        "[importlinter:contract:1]\nname = no cycles\ntype = acyclic_siblings\nancestors =\n    plant\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def lint_passes() -> bool:
        done = _lint_imports(tmp_path, "--no-cache", env=env)
        assert "Contracts:" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
        return done.returncode == 0

    assert lint_passes()
    assert _cycles(_graph("plant", module_files=(tmp_path / "top.py",))) == []

    (package / "sub" / "b.py").write_text("X = 1\n\n\ndef later():\n    from plant.sub import a\n")
    assert not lint_passes()
    assert _cycles(_graph("plant")) == [
        ["plant.sub.a", "plant.sub.b", "plant.sub.a"],
        ["plant.sub.b", "plant.sub.a", "plant.sub.b"],
    ]

    (package / "sub" / "b.py").write_text("X = 1\n")  # a cycle through the lone module file: c imports top back
    (package / "sub" / "c.py").write_text("def f():\n    import top\n")
    assert _cycles(_graph("plant", module_files=(tmp_path / "top.py",))) == [
        ["plant.sub.c", "top", "plant.sub.c"],
        ["top", "plant.sub.c", "top"],
    ]
