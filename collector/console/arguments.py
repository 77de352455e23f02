"""The collector CLI's arguments: the parser (its defaults are the sweep's too: collector.sweep.options) and
the helpers that read its lists. Below the commands and the sweep, so both use them without importing the CLI."""

from __future__ import annotations

import argparse
from pathlib import Path

from bundle.builds import DECLARABLE
from bundle.contention import THRESHOLD
from collector.errors import CollectorError
from collector.run.plan import DEFAULT_IDLE_WAIT_S, DEFAULT_PROCESSES, PROCESSES_VARIABLE
from collector.timing.contention import IdlePolicy


def kv_pairs(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CollectorError(f"--tag must be KEY=VALUE (got {item!r})")
        out[key] = value
    return out


def csv_list(text: str | None) -> tuple[str, ...] | None:
    return tuple(x.strip() for x in text.split(",") if x.strip()) if text else None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m collector", description="mpsbench collector")
    sub = p.add_subparsers(dest="command", required=True)
    _run_options(sub.add_parser("run", help="run workloads and write a bundle"))
    _sweep_options(
        sub.add_parser(
            "sweep",
            help="run the plan under several torch builds, each in its own "
            "environment, interleaved in rounds (one bundle per build and round)",
        )
    )
    sub.add_parser("list", help="workloads, case counts per profile, metrics with units")
    s = sub.add_parser("show", help="a bundle as a table")
    s.add_argument("file", type=Path)
    u = sub.add_parser(
        "push", help="POST bundles to the dashboard (base URL or its /api/v1/runs); undelivered ones wait in the outbox"
    )
    u.add_argument("files", nargs="*", type=Path)
    u.add_argument("--url", required=True, help="e.g. http://127.0.0.1:8501 (token from MPSBENCH_TOKEN)")
    u.add_argument("--outbox", action="store_true", help="only send what waits in the outbox")
    return p


def _plan_options(r: argparse.ArgumentParser) -> None:
    r.add_argument("--workload", action="append", default=[], help="workload name (repeatable)")
    r.add_argument("--suite", action="append", default=[], choices=["kernels", "models"])
    r.add_argument("--device", default="auto", choices=["auto", "mps", "cuda", "cpu"])
    r.add_argument("--dtype", help="comma list, e.g. float32,bfloat16 (default: each workload's own)")
    r.add_argument(
        "--compile",
        default="eager,inductor",
        help="comma list of eager,inductor (default both: each workload measures the modes it offers; kernels are eager only)",
    )
    r.add_argument("--tag", action="append", default=[], help="KEY=VALUE (repeatable)")
    r.add_argument("--machine-name")
    r.add_argument("--profile", default="quick", choices=["quick", "full"])
    r.add_argument("--out", default="runs", type=Path)
    r.add_argument("--push", metavar="URL", help="push the bundle afterwards (token from MPSBENCH_TOKEN)")
    r.add_argument(
        "--processes",
        type=int,
        metavar="N",
        help=f"worker processes that each time every case, one after another (default ${PROCESSES_VARIABLE} "
        f"or {DEFAULT_PROCESSES}): the replicates a review tests on; the time budgets are shared "
        "out between them",
    )
    r.add_argument(
        "--case",
        action="append",
        default=[],
        metavar="ID",
        help="only this case (repeatable): workload|case_key|dtype|compile, as `mpsbench confirm` names it",
    )
    r.add_argument(
        "--case-time-limit",
        type=float,
        metavar="SECONDS",
        help="per case: passes stop repeating at it; at it + max(2 s, 25 %%) the case is killed (error)",
    )
    r.add_argument(
        "--kernels",
        action="store_true",
        help="after the timing, each case's call under the backend's own profiler in a worker of its own "
        "(torch.profiler; MPS: MPSProfiler): what ran, per op call (on with --profile full)",
    )
    r.add_argument(
        "--idle-wait",
        type=float,
        metavar="SECONDS",
        default=DEFAULT_IDLE_WAIT_S,
        help=f"before timing a case, wait up to this long while other processes take more than "
        f"{THRESHOLD * 100:.0f} %% of the cores (default %(default)g; a run waits at most "
        f"{IdlePolicy.budget_factor:g}× this in all); a worker process that ran contended anyway is "
        "re-timed in a fresh one; 0: never wait",
    )


def _run_options(r: argparse.ArgumentParser) -> None:
    _plan_options(r)
    r.add_argument(
        "--channel",
        choices=DECLARABLE,
        help="the build's channel where its version string does not say (RCs carry the final's version)",
    )
    r.add_argument("--install-source", metavar="URL", help="the index torch was installed from (a sweep sets it)")
    r.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="JOURNAL",
        help="continue an interrupted run (default: the newest unfinished journal in --out)",
    )
    r.add_argument(
        "--retry-crashed",
        action="store_true",
        help="with --resume (implied): run again the cases that crashed or timed out (default: kept as "
        "errors, since a case that crashed its worker usually crashes it again)",
    )
    r.add_argument(
        "--status-file",
        type=Path,
        metavar="PATH",
        help="keep the run's live status in this JSON file (what it does, what it waits for, the cases done): "
        "the dashboard scripts/start.sh serves shows it while the run collects",
    )
    r.add_argument(
        "--in-process",
        action="store_true",
        help="run cases in this process, not a case worker: no crash isolation, the time limit is soft",
    )


def _sweep_options(r: argparse.ArgumentParser) -> None:
    _plan_options(r)
    r.add_argument(
        "--build",
        action="append",
        default=[],
        metavar="SPEC",
        help="a torch build (repeat, baseline first): 'torch==2.14.1', '--pre torch==2.15.0 --index-url "
        "URL', or python=/path/to/env/bin/python (an environment you have; add --channel rc|…)",
    )
    r.add_argument("--rounds", type=int, default=3, help="rounds; in each every build runs the plan once")
    r.add_argument("--aa", action="store_true", help="run the baseline build twice per round (A/A pairs: the noise)")
    r.add_argument(
        "--envs", type=Path, help="where build environments live (default ~/.cache/mpsbench/envs or MPSBENCH_ENVS)"
    )
    r.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="SWEEP_JOURNAL",
        help="continue an interrupted sweep (default: the newest sweep journal in --out)",
    )
