"""Issue 46 item 6: no test and no benchmark waits for an idle machine. Every collector run they start (`run`,
`sweep`, `confirm`, `bisect`, in this process or another) passes an explicit `--idle-wait` (0 unless the wait is
what is tested): the collector's default waits up to 30 s a case while other processes hold the cores, and a suite
beside other jobs took 84 minutes. A static scan of tests/*.py and benchmarks/*.py finds each command line and
names any without one.

A command line: a list or tuple written out, or a plain function call's arguments, in which "run", "sweep",
"confirm" or "bisect" comes first (after non-text arguments such as `capsys` or `sys.executable`) or right after
"collector" / "mpsbench" (`python -m collector run`). It passes when "--idle-wait" is among its words, also through
`*NAME` where NAME is a list written out in the module or the function; when its words come from a helper's own
parameters (`*args`), each call of that helper carries it instead. A line that starts nothing that waits says so:
`# idle-wait: <why>` (a refusal, a resume that takes the journal's wait). And a `Plan(...)` in a module that runs
sessions names `idle_wait_s`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = frozenset("run sweep confirm bisect".split())
ENTRIES = frozenset(("collector", "mpsbench"))
FLAG = "--idle-wait"
MARK = "# idle-wait:"
RUNNERS = ("collector.run.session", "collector.cli.commands", "collector.sweep")  # modules whose Plan can start a run


def _files() -> list[Path]:
    return sorted([*(ROOT / "tests").glob("*.py"), *(ROOT / "benchmarks").glob("*.py")])


def _text(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


@dataclass
class Finding:
    path: Path
    line: int
    why: str

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.why}"


class Scan:
    """One module's command lines, judged."""

    def __init__(self, path: Path, source: str | None = None):
        self.path = path
        self.source = source if source is not None else path.read_text()
        self.lines = self.source.splitlines()
        self.tree = ast.parse(self.source)
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.findings: list[Finding] = []
        self.lists: dict[str, set[str]] = {}
        self.lists = self._assigned(self.tree.body, {})  # module-level NAME = [...] (functions' own are local)

    def _marked(self, node: ast.AST) -> bool:
        """A `# idle-wait: why` comment on one of the node's lines or the line above it, or on the first line (or
        the one above) of what holds it up to its statement (a loop over refused command lines, a parametrize)."""
        spans = [(node.lineno - 1, getattr(node, "end_lineno", node.lineno))]
        up = node
        while up in self.parents and not isinstance(up, ast.stmt):
            up = self.parents[up]
            if hasattr(up, "lineno"):
                spans.append((up.lineno - 1, up.lineno))
        return any(
            line.partition(MARK)[2].strip() for first, last in spans for line in self.lines[max(0, first - 1) : last]
        )

    def _sure(self, value: ast.AST, local: dict[str, set[str]], depth: int = 0) -> set[str]:
        """The words a list expression holds whichever way it goes: a list written out (its words, `*NAME` in it
        resolved), both branches of `a if c else b` (what both hold), `a + b` (what either holds)."""
        if depth > 5:
            return set()
        if isinstance(value, ast.List | ast.Tuple):
            return self._words(list(value.elts), local, depth + 1)[0]
        if isinstance(value, ast.IfExp):
            return self._sure(value.body, local, depth + 1) & self._sure(value.orelse, local, depth + 1)
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            return self._sure(value.left, local, depth + 1) | self._sure(value.right, local, depth + 1)
        if isinstance(value, ast.Name):
            return local.get(value.id, self.lists.get(value.id, set()))
        return set()

    def _assigned(self, body: list[ast.stmt], outer: dict[str, set[str]]) -> dict[str, set[str]]:
        """NAME → the words it surely holds after these statements: what every `NAME = …` gives (any may be the
        last), with what each `NAME += …` adds."""
        assigned: dict[str, list[set[str]]] = {}
        added: dict[str, set[str]] = {}
        for stmt in body:
            if not outer and isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue  # the module's own names: a function's are its own
            for node in ast.walk(stmt):
                if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        if isinstance(t, ast.Name):
                            assigned.setdefault(t.id, []).append(self._sure(node.value, outer))
                elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                    added.setdefault(node.target.id, set()).update(self._sure(node.value, outer))
        names = set(assigned) | set(added)
        return {n: set.intersection(*assigned.get(n, [set()])) | added.get(n, set()) for n in names}

    def _function(self, node: ast.AST) -> ast.FunctionDef | None:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                return node
        return None

    def _words(self, items: list[ast.AST], local: dict[str, set[str]], depth: int = 0) -> tuple[set[str], list[str]]:
        """The words `items` surely hold (text constants, `*NAME` and `*[...]` resolved); and the `*NAME`s that
        name nothing written out here (a helper's parameters)."""
        words, open_names = set(), []
        for item in items:
            if (word := _text(item)) is not None:
                words.add(word)
            elif isinstance(item, ast.Starred):
                if isinstance(item.value, ast.Name) and item.value.id not in local and item.value.id not in self.lists:
                    open_names.append(item.value.id)
                else:
                    words |= self._sure(item.value, local, depth + 1)
        return words, open_names

    def _local(self, where: ast.AST) -> dict[str, set[str]]:
        function = self._function(where)
        return self._assigned(function.body, self.lists) if function else {}

    def _command(self, items: list[ast.AST]) -> bool:
        for i, item in enumerate(items):
            word = _text(item)
            if word is None:
                if isinstance(item, ast.Name | ast.Attribute):
                    continue  # capsys, sys.executable, str(python) come before the command word
                if isinstance(item, ast.Call) and i == 0:
                    continue
                return False
            if word in COMMANDS and all(_text(x) is None for x in items[:i]):
                return True
            if word == "-m":
                continue
            return word in ENTRIES and i + 1 < len(items) and _text(items[i + 1]) in COMMANDS
        return False

    def _forwarded(self, function: ast.FunctionDef, name: str) -> bool:
        """`name` is `function`'s own parameter: each call of the function by name must carry the flag."""
        params = [a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)]
        if function.args.vararg:
            params.append(function.args.vararg.arg)
        if name not in params:
            return False
        calls = [
            n
            for n in ast.walk(self.tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == function.name
        ]
        for call in calls:
            words, _ = self._words([*call.args, *(k.value for k in call.keywords)], self._local(call))
            if FLAG not in words and not self._marked(call):
                self.findings.append(
                    Finding(self.path, call.lineno, f"{function.name}(…) starts a collector run without {FLAG}")
                )
        return True

    def _judge(self, node: ast.AST, items: list[ast.AST]) -> None:
        if not self._command(items) or self._marked(node):
            return
        words, open_names = self._words(items, self._local(node))
        if FLAG in words:
            return
        function = self._function(node)
        if function and open_names and all(self._forwarded(function, n) for n in open_names):
            return
        self.findings.append(Finding(self.path, node.lineno, f"a collector command line without {FLAG}"))

    def run(self) -> list[Finding]:
        runs_sessions = any(r in self.source for r in RUNNERS)
        for node in ast.walk(self.tree):
            parent = self.parents.get(node)
            if isinstance(node, ast.List | ast.Tuple) and not isinstance(parent, ast.Compare):
                self._judge(node, list(node.elts))  # an expected value compared against is no command line
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id == "Plan" and runs_sessions:
                    if not any(k.arg == "idle_wait_s" for k in node.keywords) and not self._marked(node):
                        self.findings.append(Finding(self.path, node.lineno, "a Plan(...) without idle_wait_s"))
                else:
                    self._judge(node, list(node.args))
        return self.findings


def test_every_collector_run_a_test_or_a_benchmark_starts_passes_an_idle_wait():
    findings = [str(f) for path in _files() for f in Scan(path).run()]
    assert not findings, "collector runs that would wait for an idle machine:\n" + "\n".join(findings)


SAMPLES = {  # (source, the lines the scan must name)
    'main(capsys, "run", "--out", str(tmp))': [1],
    'main(capsys, "run", "--out", str(tmp), "--idle-wait", "0")': [],
    '[sys.executable, "-m", "collector", "sweep", "--out", out]': [1],
    '[sys.executable, "-m", "mpsbench", "bisect", *ARGS]\nARGS = ["--idle-wait", "0"]': [],
    'PLAN = ["--workload", "x"]\nsubprocess.run([p, "-m", "collector", "run", *PLAN])': [2],
    'def f(capsys, *args):\n    return cli(["sweep", *args])\nf(capsys, "--rounds", "1")\nf(capsys, "--idle-wait", "0")': [
        3
    ],
    'subprocess.run([sys.executable, "-m", "collector", "run", "--resume"])  # idle-wait: the journal\'s own': [],
    'assert order == ["sweep", "push"]': [],
    'for args in (  # idle-wait: refused before a run starts\n    ["run", "--workload", "nope"],\n):\n    main(*args)': [],
    '@parametrize(\n    "args",  # idle-wait: parsed, never run\n    [["sweep", "--rounds", "x"]],\n)\ndef f(): pass': [],
    'step.get("run", "")': [],
    'import collector.run.session\nPlan(workloads=("a",))\nPlan(idle_wait_s=0.0)': [2],
    '["mpsbench", "run", "--profile", "quick"]': [1],
    'wait = 0\n[sys.executable, "-m", "collector", "run", "--idle-wait", str(wait)]': [],
    'def g(w):\n    wait = ["--idle-wait", "0"] if w is not None else []\n    return [x, "-m", "collector", "run", *wait]': [
        3
    ],
    'def g(w):\n    args = ["--out", "o"]\n    args += ["--idle-wait", str(w)]\n    return [x, "-m", "collector", "run", *args]': [],
}


@pytest.mark.parametrize("source", SAMPLES)
def test_the_scan_names_exactly_the_command_lines_without_a_wait(tmp_path, source):
    path = tmp_path / "sample.py"
    path.write_text(source)
    assert sorted(f.line for f in Scan(path, source).run()) == SAMPLES[source]
