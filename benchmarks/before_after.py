"""Is a change slower? Same-run ratios of this tree's ingest and Compare over another checkout's (the code before
the change), on this machine, on the same inputs.

    git worktree add /tmp/before <commit>       # or any clone at the commit before the change
    python -m benchmarks.before_after --before /tmp/before [--db 10M-STORE] [--rows 200000] [--repeats 5] [--json]

Each measurement is a fresh Python process running one tree's code (PYTHONPATH and cwd the tree; this venv's
packages), the two trees alternating in ABBA order K times so a drift in the machine's load sides with neither:
  ingest   db.ingest.core.ingest_bundle of one schema-4 bundle of --rows results (benchmarks.ingest's builder,
           built once here: both trees ingest the same bytes) into a fresh store, after one untimed ingest of
           the same bytes (imports and first-call costs out): wall and CPU seconds.
  compare  the judged review the Compare page and /api/v1/compare read (db.review.review.cached_review: the
           comparison, its tests and rules, and each case's direction), caches cleared, after one untimed call,
           for torch=2.10.0 → torch=2.11.0 on machine and chip scope, on --db (benchmarks/dashboard.py's store,
           copied once per tree so neither tree's code writes the other's file; generated at 1 M rows in a
           temporary folder when absent): wall and CPU seconds.
Prints each figure's medians and the after / before ratio (< 1: this tree is faster). CPU time counts every
thread of the process, so on a shared box the CPU ratio is the steadier one. --tiny: 2,000 rows, a 20,000-row
store, 2 repeats (what the tests run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIDES = {"baseline": "torch=2.10.0", "candidate": "torch=2.11.0"}

# run inside each tree's own code; prints one JSON object of {figure: [wall s, CPU s]}
_CHILD = r"""
import json, resource, sys, tempfile, time
from pathlib import Path

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def timed(fn):
    fn()  # untimed: imports, first-call costs, DuckDB's caches
    wall, used = time.perf_counter(), cpu()
    fn()
    return [time.perf_counter() - wall, cpu() - used]

from db.store.engine import open_store
what, arg = sys.argv[1], sys.argv[2]
if what == "ingest":
    from db.ingest.core import ingest_bundle
    data = Path(arg).read_bytes()
    def once():
        with tempfile.TemporaryDirectory() as tmp:
            engine = open_store(str(Path(tmp) / "s.duckdb"))
            ingest_bundle(engine, data)
            engine.dispose()
    print(json.dumps({"ingest": timed(once)}))
else:
    from db.review.comparison import CompareQuery, clear_cache
    try:
        from db.review.review import cached_review
    except ImportError:  # a tree from before #45 named it judge_review
        from db.review.review import judge_review as cached_review
    engine = open_store(arg)
    out = {}
    for scope in ("machine", "chip"):
        query = CompareQuery.from_params({**json.loads(sys.argv[3]), "scope": scope})
        def once():
            clear_cache()
            cached_review(engine, query).directions
        out[f"compare_{scope}"] = timed(once)
    engine.dispose()
    print(json.dumps(out))
"""


def _child(tree: Path, what: str, arg: str) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    got = subprocess.run(
        [sys.executable, "-c", _CHILD, what, arg, json.dumps(SIDES)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if got.returncode != 0:
        sys.exit(f"ERROR: {what} in {tree} failed:\n{got.stderr[-3000:]}")
    return json.loads(got.stdout.strip().splitlines()[-1])


def measure(before: Path, rows: int, db: Path | None, repeats: int, tmp: Path) -> dict:
    from benchmarks.dashboard import generate
    from benchmarks.ingest import build_bundle_bytes

    bundle = tmp / "bundle.json"
    bundle.write_bytes(build_bundle_bytes(rows, schema=4))
    if db is None:
        db = tmp / "store.duckdb"
        generate(db, 20_000 if rows <= 2_000 else 1_000_000, machines=2 if rows <= 2_000 else 50)
    stores = {}
    for name in ("before", "after"):
        stores[name] = tmp / f"{name}.duckdb"
        shutil.copyfile(db, stores[name])
    trees = {"before": before.resolve(), "after": ROOT}
    figures: dict[str, dict[str, list[list[float]]]] = {"before": {}, "after": {}}
    for k in range(repeats):
        for name in ("before", "after") if k % 2 == 0 else ("after", "before"):
            for what, arg in (("ingest", str(bundle)), ("compare", str(stores[name]))):
                for figure, pair in _child(trees[name], what, arg).items():
                    figures[name].setdefault(figure, []).append(pair)
        print(f"  round {k + 1} of {repeats} done", file=sys.stderr, flush=True)
    out = {"rows": rows, "repeats": repeats, "before": str(trees["before"]), "figures": {}}
    for figure in figures["after"]:
        medians = {
            name: {
                unit: statistics.median(p[i] for p in figures[name][figure])
                for i, unit in enumerate(("wall_s", "cpu_s"))
            }
            for name in ("before", "after")
        }
        out["figures"][figure] = {
            **medians,
            "wall_ratio_after_over_before": round(medians["after"]["wall_s"] / medians["before"]["wall_s"], 3),
            "cpu_ratio_after_over_before": round(medians["after"]["cpu_s"] / medians["before"]["cpu_s"], 3),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="a checkout of the code before the change")
    ap.add_argument("--db", type=Path, help="a benchmarks/dashboard.py store (default: 1 M rows, generated)")
    ap.add_argument("--rows", type=int, default=200_000, help="results in the ingested bundle")
    ap.add_argument("--repeats", type=int, default=5, help="rounds of before and after (ABBA order)")
    ap.add_argument("--tiny", action="store_true", help="2,000 rows, a 20,000-row store, 2 repeats")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not (args.before / "db" / "ingest" / "core.py").is_file():
        sys.exit(f"ERROR: --before {args.before}: not a checkout of this project (no db/ingest/core.py)")
    if args.db is not None and not args.db.is_file():
        sys.exit(f"ERROR: --db {args.db}: no such store file")
    rows, repeats = (2_000, 2) if args.tiny else (args.rows, args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        out = measure(args.before, rows, None if args.tiny else args.db, repeats, Path(tmp))
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(f"after (this tree) over before ({out['before']}), medians of {repeats} alternating rounds:")
    for figure, f in out["figures"].items():
        b, a = f["before"], f["after"]
        print(
            f"  {figure:16s} wall {b['wall_s']:.3f} s → {a['wall_s']:.3f} s ({f['wall_ratio_after_over_before']}×)"
            f"   CPU {b['cpu_s']:.3f} s → {a['cpu_s']:.3f} s ({f['cpu_ratio_after_over_before']}×)"
        )


if __name__ == "__main__":
    main()
