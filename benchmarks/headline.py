"""Every headline ratio of the tool's own benchmarks in one command, beside the figure the README quotes, with a
flag where one lost more than 25 % (LOSS): run it before each stop and quote it. A benchmark, not a timed test:
its figures are of this machine as it is (a shared box moves them ±15 %), so nothing here fails a build.

The README's table under "Headline figures" is the one record of the quoted figures (this command reads it, the
tests check both name the same figures). Each figure is a same-run ratio or a peak, from the benchmark's own JSON:

  ingest_wall, ingest_cpu     benchmarks/ingest.py: a million-result ingest over a raw DuckDB insert
  compare_machine, compare_chip   benchmarks/dashboard.py: a cold Compare over the bare read of its rows (10 M store)
  page_chart                  benchmarks/dashboard.py: the Compare chart's first load over the same on 100 cases
  read_memory_worst_mb        benchmarks/read_memory.py: the server's largest peak RSS over one GET or page (10 M
                              store with the metric mix; fresh servers and one round on one server)
  upload_flat                 benchmarks/upload_history.py: the last 5 of 50 uploads' CPU over uploads 12–16

Usage: python -m benchmarks.headline [--db 10M-STORE] [--only NAME,…] [--no-browser] [--tiny] [--json]
(--db: a benchmarks/dashboard.py store, reused; generated in a temporary folder when absent, ~2 min. Full sizes
take ~15 min here. --tiny: every benchmark at its test size, nothing compared with the README: what the tests run.)
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOSS = 1.25  # a figure this much worse than the README's is flagged
TABLE_START = "<!-- headline figures: benchmarks/headline.py reads this table -->"


@dataclass(frozen=True)
class Headline:
    name: str
    source: str  # the benchmark it comes from (a key of SOURCES)
    path: tuple[str, ...]  # where it sits in that benchmark's JSON
    unit: str


HEADLINES = (
    Headline("ingest_wall", "ingest", ("ratio_project_over_raw",), "× a raw DuckDB insert (wall)"),
    Headline("ingest_cpu", "ingest", ("cpu_ratio_project_over_raw",), "× a raw DuckDB insert (CPU)"),
    Headline("compare_machine", "dashboard", ("compare_all", "cold_vs_bare_ratio"), "× the bare read (machine scope)"),
    Headline("compare_chip", "dashboard", ("compare_chip", "cold_vs_bare_ratio"), "× the bare read (chip scope)"),
    Headline("page_chart", "dashboard", ("chart_vs_100_cases_ratio", "first_load"), "× the page on 100 cases"),
    Headline("read_memory_worst_mb", "read_memory", ("worst_peak_mb",), "MB peak RSS, worst GET"),
    Headline("upload_flat", "upload_history", ("upload_cpu_ms", "last_over_settled"), "× uploads 12–16 (CPU)"),
)


def sources(db: Path | None, tiny: bool, browser: bool) -> dict[str, list[str]]:
    """Each benchmark's command line (module form, --json), at full or tiny size."""
    store = ["--db", str(db)] if db and not tiny else []
    return {
        "ingest": ["benchmarks.ingest"]
        + (["--rows", "2000", "--upload-rows", "500", "--repeats", "1"] if tiny else []),
        "dashboard": ["benchmarks.dashboard"] + (["--tiny"] if tiny else store) + ([] if browser else ["--no-browser"]),
        # every GET and page on fresh servers, then one round of them on one server (its own run: --minutes 60)
        "read_memory": ["benchmarks.read_memory"] + (["--tiny"] if tiny else [*store, "--rounds", "1"]),
        "upload_history": ["benchmarks.upload_history"] + (["--tiny"] if tiny else []),
    }


def readme_figures(text: str) -> dict[str, float]:
    """The README's quoted figures: the table after TABLE_START, its rows `| name | figure | unit |`."""
    if TABLE_START not in text:
        raise SystemExit(f"ERROR: README.md has no headline table (the line {TABLE_START!r})")
    figures = {}
    for line in text.split(TABLE_START, 1)[1].lstrip().splitlines():
        if not line.startswith("|"):
            break
        cells = [c.strip().strip("`") for c in line.strip("|").split("|")]
        if len(cells) >= 2 and re.fullmatch(r"[0-9.]+", cells[1]):
            figures[cells[0]] = float(cells[1])
    return figures


def _dig(doc: dict, path: tuple[str, ...]):
    for key in path:
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc if isinstance(doc, (int, float)) else None


def run_source(command: list[str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", *command, "--json"], cwd=ROOT, capture_output=True, text=True, timeout=3600
    )
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    return json.loads(done.stdout)


def compare(now: dict[str, float | None], quoted: dict[str, float], tiny: bool) -> list[dict]:
    rows = []
    for h in HEADLINES:
        value, was = now.get(h.name), quoted.get(h.name)
        if value is None:
            verdict = "unavailable"
        elif tiny or was is None:
            verdict = "not compared" + (" (tiny size)" if tiny else " (no README figure)")
        else:  # every headline is lower-is-better: a ratio to a floor, a peak
            verdict = "LOSS" if value > was * LOSS else "ok"
        rows.append(
            {
                "name": h.name,
                "now": value,
                "readme": was,
                "unit": h.unit,
                "now_over_readme": round(value / was, 2) if value is not None and was else None,
                "verdict": verdict,
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, help="a 10 M-row benchmarks/dashboard.py store to reuse")
    ap.add_argument("--only", default="", help="comma-separated figure names (default: all)")
    ap.add_argument("--no-browser", action="store_true", help="skip the page figure (no Chromium)")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    wanted = [h for h in HEADLINES if not args.only or h.name in args.only.split(",")]
    unknown = set(filter(None, args.only.split(","))) - {h.name for h in HEADLINES}
    if unknown:
        raise SystemExit(f"ERROR: --only: unknown figure(s) {sorted(unknown)}; known: {[h.name for h in HEADLINES]}")
    quoted = readme_figures((ROOT / "README.md").read_text(encoding="utf-8"))
    db = args.db
    if db is None and not args.tiny and any(h.source in ("dashboard", "read_memory") for h in wanted):
        db = Path(tempfile.mkdtemp(prefix="mpsbench-headline-")) / "store-10m.duckdb"  # made by the first user
    commands = sources(db, args.tiny, browser=not args.no_browser)
    results: dict[str, dict] = {}
    for source in dict.fromkeys(h.source for h in wanted):
        if not args.json:
            print(f"running {' '.join(commands[source])} …", file=sys.stderr, flush=True)
        results[source] = run_source(commands[source])
    now = {h.name: _dig(results[h.source], h.path) for h in wanted}
    rows = [r for r in compare(now, quoted, args.tiny) if r["name"] in now]
    errors = {s: r["error"] for s, r in results.items() if "error" in r}
    if args.json:
        print(json.dumps({"figures": rows, "errors": errors, "tiny": args.tiny}, indent=2))
        return
    for r in rows:
        shown = "—" if r["now"] is None else f"{r['now']:g}"
        was = "—" if r["readme"] is None else f"{r['readme']:g}"
        ratio = "" if r["now_over_readme"] is None else f"  ({r['now_over_readme']:.2f}× the README's)"
        print(f"{r['name']:22s} {shown:>8s}  README {was:>8s}  {r['unit']}{ratio}  {r['verdict']}")
    for source, why in errors.items():
        print(f"{source}: ERROR: {why}")


if __name__ == "__main__":
    main()
