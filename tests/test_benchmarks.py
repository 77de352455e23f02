"""Each benchmark runs at a tiny size (seconds) and prints its figures as JSON, so the scripts cannot rot.
The figures' values at this size mean nothing; what is checked is that each is there, with a sane value."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")


def _module(name: str, *args: str, limit_s: float = 600) -> subprocess.CompletedProcess:
    """`python -m benchmarks.<name> ARGS` from the repository root (a module: it imports its parts)."""
    return subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", *args], cwd=ROOT, capture_output=True, text=True, timeout=limit_s
    )


def _run(script: str, *args: str, limit_s: float = 240) -> dict:
    done = subprocess.run(
        [sys.executable, f"benchmarks/{script}", *args, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=limit_s,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_dashboard_scaling_tiny():
    out = _run("dashboard.py", "--scaling", "--tiny", "--no-browser")
    sizes = out["sizes"]
    assert [p["rows"] for p in sizes] == [8_000, 16_000, 32_000]
    assert all(p["compare_cold_ms"] > 0 and p["bare_ms"] > 0 and p["ingest_one_run_ms"] > 0 for p in sizes)
    assert all(p["page_chart_s"] is None for p in sizes)  # --no-browser: no figure, never a 0
    fits = out["growth_exponent"]
    assert isinstance(fits["compare_cold_ms"], float) and fits["page_chart_s"] is None


def test_growth_exponent_is_the_log_log_slope():
    import importlib.util

    spec = importlib.util.spec_from_file_location("scaling", ROOT / "benchmarks" / "scaling.py")
    scaling = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scaling)
    assert scaling.exponent([1e6, 3e6, 1e7], [0.1, 0.3, 1.0]) == pytest.approx(1.0)  # linear
    assert scaling.exponent([1e6, 1e7], [2.0, 2.0]) == pytest.approx(0.0)  # flat
    assert scaling.exponent([1e6, 1e7], [1.0, 100.0]) == pytest.approx(2.0)  # quadratic
    assert scaling.exponent([1e6], [1.0]) is None


def test_dashboard_benchmark_tiny():
    args = ("--tiny",) if CHROMIUM.exists() else ("--tiny", "--no-browser")
    out = _run("dashboard.py", *args)
    assert out["store"]["rows"] == 8_000 and out["store"]["machines"] == 2 and out["store"]["builds"] == 2
    for name in ("compare_all", "compare_filtered", "compare_chip"):
        figures = out[name]
        assert figures["cold"]["median_ms"] > 0 and figures["warm"]["median_ms"] > 0 and figures["cold"]["repeats"] == 1
    # the metric mix: 2 machines × 100 cases × 10 metrics; unavailable on both sides, so unmatched: every 100th
    # record (10 first calls a run) and the memory_outside_allocator of the 6 fp16 shape-0 cases
    assert out["store"]["metric_mix"] is True
    assert (out["compare_all"]["cases"], out["compare_all"]["unmatched"]) == (1968, 32)
    # chip scope (the pivot's path): the 2 machines have 2 chips, so it finds the same cases
    assert (out["compare_chip"]["cases"], out["compare_chip"]["unmatched"]) == (1968, 32)
    # the bare DuckDB floor reads the same cases (one row per case and side) and its ratio is the medians'
    bare = out["compare_all"]["bare_duckdb"]
    assert bare["cases"] == 1968 and bare["median_ms"] > 0
    assert out["compare_all"]["cold_vs_bare_ratio"] == pytest.approx(
        out["compare_all"]["cold"]["median_ms"] / bare["median_ms"], rel=0.02
    )
    # where the cold time went, step by step: every step of the path was seen, none took longer than the whole
    profile = out["compare_all"]["cold_profile_ms"]
    assert all(ms is not None and 0 < ms <= profile["total"] for ms in profile.values()), profile
    # softmax × float16: 6 shapes × 10 metrics per machine; unmatched: shape 0's memory_outside_allocator and
    # one first call (j % 100 = 42) each
    assert (out["compare_filtered"]["cases"], out["compare_filtered"]["unmatched"]) == (2 * 58, 2 * 2)
    # every (machine, build) ran twice: 2 machines × 2 builds × 790 ok ratio-metric records (8 of a case's 10:
    # not the PSNR or memory_outside_allocator differences; 10 first calls unavailable) are A/A pairs; groups
    # per chip (2 chips): 6 workloads × 3 dtypes × 7 of those metrics (the bandwidth or tokens/s derived from a
    # timing is its timing's group read another way: counted under it, not as a group of its own)
    assert (out["noise_view"]["aa_pairs"], out["noise_view"]["groups"]) == (2 * 2 * 790, 2 * 6 * 3 * 7)
    if CHROMIUM.exists():
        browser = out["browser"]
        assert 0 < browser["first_load"]["chart_s"] <= browser["first_load"]["whole_page_s"]
        assert len(browser["reload"]["chart_s_all"]) == 1 and browser["reload_all_cases_table"]["whole_page_s"] > 0
        small = out["browser_100_cases"]
        assert out["chart_vs_100_cases_ratio"]["first_load"] == pytest.approx(
            browser["first_load"]["chart_s"] / small["first_load"]["chart_s"], abs=0.02
        )


def test_aa_pairs_benchmark_tiny():
    out = _run("aa_pairs.py", "--tiny")
    # 12 runs of 20 cases, each paired with its 10 most recent predecessors: 20 × (0 + 1 + … + 10 + 10) pairs
    assert (out["runs"], out["cases"], out["partners"]) == (12, 20, 10)
    assert out["aa_pairs"] == out["aa_pairs_bound"] == 20 * (55 + 10) and out["aa_pairs_if_every_pair"] == 20 * 66
    assert set(out["per_run_ms"]) == {"3", "6", "12"}
    assert all(v["ingest"] >= v["pairs_step"] > 0 for v in out["per_run_ms"].values())
    last = out["last_run_pairs_step"]
    assert last["all_earlier_over_bounded"] == pytest.approx(
        last["median_ms"]["all_earlier"] / last["median_ms"]["bounded"], rel=0.05
    )
    assert 0 < out["peak_rss_mib"]["after_bounded_ingests"] <= out["peak_rss_mib"]["after_all_pairs_step"]


def test_aa_ingest_benchmark_tiny():
    out = _run("aa_ingest.py", "--tiny")
    figures = out["repeat_run_ingest"]
    assert figures["median_ms"]["with_pairs"] > 0 and figures["median_ms"]["without_pairs"] > 0
    # the store's 3,960 pairs, then the timed repeat of mac-0's 2.10.0 pairs with its 2 runs on 990 ok cases
    # (the run timed without the pairs step adds none)
    assert figures["aa_pairs_after"] == 3960 + 2 * 990


def test_timing_benchmark_tiny():
    out = _run("collecting/timing.py", "--tiny")
    assert out["rounds"] == 1 and len(out["rows"]) == 3
    for row in out["rows"]:
        for harness in ("mpsbench", "torch_benchmark", "torch_timer_at_mpsbench_k"):
            assert row[harness]["median_us"] > 0 and row[harness]["wall_s"] > 0
        assert row["ratio_mpsbench_over_torch"] == pytest.approx(
            row["mpsbench"]["median_us"] / row["torch_benchmark"]["median_us"]
        )


def test_ingest_benchmark_tiny():
    out = _run("ingest.py", "--rows", "2000", "--upload-rows", "40", "--repeats", "1")
    assert out["rows"] == 2000 and out["repeats"] == 1 and out["upload_rows"] == 40
    assert out["project_s"] > 0 and out["raw_duckdb_s"] > 0 and out["upload_s"] > 0
    assert out["ratio_project_over_raw"] == pytest.approx(
        out["project_s"] / out["raw_duckdb_s"], rel=0.05
    )  # both rounded to ms


def test_oss_ingest_benchmark_tiny():
    done = _module("oss_ingest", "--tiny", "--format", "rows", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["format"] == "rows" and out["records"] > 0 and f"new, {out['records']} results" in out["said"]
    assert out["peak_rss_mb"] > 0 and out["peak_over_file"] == pytest.approx(
        out["peak_rss_mb"] / out["file_mb"], rel=0.05
    )


def test_case_isolation_benchmark_tiny():
    out = _run("collecting/case_isolation.py", "--tiny")
    assert (out["cases_per_block"], out["rounds"], out["n_cases_each"], out["worker_starts"]) == (5, 1, 5, 1)
    assert out["in_process_case_ms"] > 0 and out["isolated_case_ms"] > 0 and out["worker_start_s"] > 0
    assert out["overhead_per_case_ms"] == pytest.approx(out["isolated_case_ms"] - out["in_process_case_ms"])
    assert out["worker_start_s_all"] == [out["worker_start_s"]] and out["cpus"] >= 1


def test_false_alarms_benchmark_tiny():
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.false_alarms", "--tiny", "--disturb", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )  # a module: it imports its parts
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    [plan] = out["plans"]
    # 2 plain runs: 1 A/A review; 1 planted 2× run: 2 reviews of 3 softmax cases each
    assert out["runs"] == 2 and out["cases"] == 3 and plan["processes"] == 2
    assert plan["aa_reviews"] == 1 and plan["aa_reviews_with_regression"] in (0, 1)
    planted = plan["planted"]["2x"]
    assert planted["reviews"] == 2 and planted["slowed_cases"] == 6 and 0 <= planted["found"] <= 6
    assert plan["review_collection_seconds"] == pytest.approx(2 * out["run_seconds"]["median"])
    # --disturb: 1 disturbed plain run (reviewed against each plain run), 1 disturbed planted run
    assert out["disturbed_runs"] == 1 and plan["aa_disturbed"]["reviews"] == 2
    busy = plan["planted_disturbed"]["2x"]
    assert busy["reviews"] == 2 and busy["slowed_cases"] == 6
    assert busy["found"] + busy["contended"] + busy["doubtful"] + busy["missed"] == 6


def test_lake_benchmark_tiny():
    from benchmarks.stores.pg_lake import why_not

    if why_not():
        pytest.skip(why_not())
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.lake", "--tiny", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )  # a module: it uses the tests' Postgres
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["ingest"]["rows"] == 400 and out["ingest"]["lake_s"] > 0 and out["ingest"]["file_s"] > 0
    assert out["compare"]["lake_over_file"] == pytest.approx(out["compare"]["lake_s"] / out["compare"]["file_s"])
    replicas = out["replicas"]
    assert replicas["lake_runs"] == replicas["file_runs"] == replicas["uploads"] == 4  # every upload stored once
    load = out["load"]  # 2 real `mpsbench serve` replicas over HTTP: 2 uploaders × 2 bundles each, 1 reader
    assert load["uploads"] == load["acknowledged"] == load["created_201"] == 8
    assert load["upload_errors"] == {} and load["read_errors"] == {} and load["reads"] >= 1
    assert load["upload_latency"]["p50_ms"] > 0 and load["read_latency"]["p95_ms"] > 0
    stored = load["store"]
    assert stored["acknowledged_stored_once"] == 8 and stored["raced_stored_once"] == 2
    assert stored["duplicated"] == stored["missing"] == stored["unacknowledged_stored"] == []
    assert load["race"]["same_bundle"] == [[200, 201]] and load["race"]["other_content"] == [[201, 409]]
    big = out["compare_big"]
    assert big["rows"] == big["migrated_results"] == 8_000 and big["cases"] > 0 and big["lake_s"] > 0


def test_read_memory_benchmark_tiny():
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.read_memory", "--tiny", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )  # real `mpsbench serve` processes, pages in headless Chromium
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["rows"] == 20_000 and out["errors_500"] == [] and out["store"]["metric_mix"] is True
    # every GET route of the API (each module's ROUTES), on a fresh server and on the long-running one
    from api import health, openapi, query, sweeps

    routes = {r.path for m in (health, openapi, query, sweeps) for r in m.ROUTES if "GET" in r.methods}
    from benchmarks.read_memory import TINY_PAGES, reads

    asked = [r for r in reads(0, 2) if r.label in out["fresh"]]
    assert {r.path.replace("0123456789abcdef", "{sweep}") for r in asked if r.kind == "api"} == routes
    pages = {label for label in out["fresh"] if label.startswith("page_")}
    assert pages == (set(TINY_PAGES) if CHROMIUM.exists() else set())
    assert set(out["long"]["reads"]) == {r.label for r in asked if r.kind == "api"}
    for label, got in {**out["fresh"], **out["long"]["reads"]}.items():
        assert got["status"] == (404 if label == "sweep" else 200), (label, got)
        assert got["peak_mb"] >= got["start_mb"] > 0 and got["after_mb"] > 0
    assert out["worst_peak_mb"] == max(g["peak_mb"] for g in [*out["fresh"].values(), *out["long"]["reads"].values()])
    assert out["long"]["rounds"] == 1 and out["idle_ratio"] == round(out["idle_end_mb"] / out["fresh_idle_mb"], 2)


def test_upload_history_benchmark_tiny():
    done = _module("upload_history", "--tiny", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert (out["cases"], out["uploads"]) == (2_000, 8) and len(out["per_upload"]) == 8
    assert out["windows"] == {"first": [1, 2], "settled": [4, 5], "last": [7, 8]}
    # 8 uploads of one build and machine: upload k pairs with its k - 1 predecessors (fewer than PARTNERS)
    assert out["aa_pairs_after"] == sum(range(8)) * 2_000
    for name in ("upload_ms", "upload_cpu_ms", "upkeep_ms"):
        assert out[name]["first"] > 0 and out[name]["last_over_settled"] > 0


def test_headline_reads_the_readme_table_and_names_every_figure_it_quotes():
    from benchmarks.headline import HEADLINES, LOSS, compare, readme_figures

    quoted = readme_figures((ROOT / "README.md").read_text(encoding="utf-8"))
    assert set(quoted) == {h.name for h in HEADLINES}  # the README quotes exactly the figures the command prints
    rows = {
        r["name"]: r
        for r in compare(
            {"ingest_wall": quoted["ingest_wall"] * (LOSS + 0.01), "ingest_cpu": quoted["ingest_cpu"] * LOSS},
            quoted,
            tiny=False,
        )
    }
    assert rows["ingest_wall"]["verdict"] == "LOSS" and rows["ingest_cpu"]["verdict"] == "ok"  # > 25 % only
    assert rows["compare_chip"]["verdict"] == "unavailable" and rows["compare_chip"]["now"] is None


def test_headline_tiny_runs_every_benchmark_and_compares_nothing():
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.headline", "--tiny", "--no-browser", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["errors"] == {} and out["tiny"] is True
    got = {r["name"]: r for r in out["figures"]}
    assert got["page_chart"]["verdict"] == "unavailable"  # --no-browser: no figure, never a 0
    for name in ("ingest_wall", "ingest_cpu", "compare_machine", "compare_chip", "read_memory_worst_mb", "upload_flat"):
        assert got[name]["now"] > 0 and got[name]["verdict"] == "not compared (tiny size)", got[name]


@pytest.mark.skipif(sys.platform != "linux", reason="the planted builds are POSIX shell wrappers")
def test_bisect_benchmark_tiny():
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bisect_builds", "--tiny", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )  # a module: it imports its parts
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    [one] = out["bisects"]
    assert (out["builds"], one["first_bad"], one["factor"]) == (3, 1, 2.0)  # builds 2 and 3 of 3 slowed
    f = out["factors"]["2x"]
    assert f["bisects"] == 1 and f["wrong"] == 0 and f["right"] + f["unclear"] == 1  # never a wrong build
    assert f["right_rate"] == f["right"] and f["step_bound"] == 4
    assert one["steps"] == 1 and f["seconds"]["median"] == one["seconds"] > 0


def test_no_benchmark_script_shadows_a_standard_module():
    # `python benchmarks/x.py` puts benchmarks/ first on sys.path: a benchmarks/bisect.py once broke `random`'s
    # import in every other script there
    names = {p.stem for p in (ROOT / "benchmarks").rglob("*.py") if not p.stem.startswith("__")}
    assert not names & sys.stdlib_module_names, names & sys.stdlib_module_names


def test_before_after_benchmark_tiny_against_this_tree_itself():
    done = _module("before_after", "--before", str(ROOT), "--tiny", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert (out["rows"], out["repeats"]) == (2000, 2)
    assert set(out["figures"]) == {"ingest", "compare_machine", "compare_chip"}
    for f in out["figures"].values():
        assert all(f[side][unit] > 0 for side in ("before", "after") for unit in ("wall_s", "cpu_s"))
        ratio = f["after"]["cpu_s"] / f["before"]["cpu_s"]
        assert f["cpu_ratio_after_over_before"] == round(ratio, 3) and 0.2 < ratio < 5  # the same code both ways


def test_before_after_refuses_a_folder_that_is_not_a_checkout(tmp_path):
    done = _module("before_after", "--before", str(tmp_path), "--tiny", limit_s=60)
    assert done.returncode == 1 and done.stderr.startswith("ERROR: --before") and "not a checkout" in done.stderr
