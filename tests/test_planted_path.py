"""A planted change of path, named: two `python=` builds over this torch (benchmarks/what_ran.py, made as
benchmarks/bisect_builds.py makes its planted nightlies), the second computing softmax as exp(log_softmax(x)); each
runs one softmax case with --kernels (real workers, torch.profiler on the CPU), both are stored, and the review's
what-ran diff must say the path changed, naming the aten ops each build ran; Compare's case detail and the
review's lists say it too."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_softmax_rerouted_through_log_softmax_is_named_a_path_change():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.what_ran", "--tiny", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)["planted"]
    w = found["what_ran"]
    assert w["compared"] and w["path_changed"]
    # exp(log_softmax(x)) calls aten::log_softmax → aten::_log_softmax, then aten::exp; softmax calls
    # aten::softmax → aten::_softmax: what each build ran, whatever their times
    [change] = w["changes"]
    ran, _, instead = change.removeprefix("softmax ran ").partition(" instead of ")
    assert set(ran.split(", ")) == {"aten::exp", "aten::_log_softmax", "aten::log_softmax"}
    assert set(instead.split(", ")) == {"aten::_softmax", "aten::softmax"}
    assert w["line"] == f"path changed: {change}"
    assert {m["name"] for m in w["moved"]} >= {"aten::_softmax", "aten::exp", "aten::_log_softmax"}
    assert found["builds"] == ["2.16.0.dev20260901", "2.16.0.dev20260902"]
    # the review shows it: Compare's case detail (its panel, marked CPU) and, wherever the case is listed, its
    # reason and what_ran
    page = found["page"]
    assert page["words"].startswith(w["line"]) and page["axis"] == "CPU time per op call (µs)"
    assert {b["name"] for b in page["bars"]} >= {"aten::_softmax", "aten::exp", "aten::_log_softmax"}
    assert all(r["why"].startswith(w["line"]) and r["what_ran"] == page["words"] for r in found["listed"])
