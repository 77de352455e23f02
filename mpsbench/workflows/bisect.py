"""`mpsbench bisect`: find the build that brought a regression, from a good build to a bad one.

The builds between them, oldest first: nightlies an index lists by date (`--index-url`, `--from/--to`), the
releases an index lists between the two pinned versions (`--releases`), or the user's own list (`--between`,
repeated: build specs as `sweep --build` takes them, `python=/path/bin/python` included). Only the cases that
regressed run: a review's regressions and doubtful cases (`--baseline/--candidate`, read from the store or the
`--push` server) or `--case` / `--workload`. Each step runs the interval's ends and its midpoint interleaved in
rounds; the review's own test decides the midpoint good, bad or unclear (db.review.decisions.bisect_verdict),
asked after every round up to `--rounds`; a step still unclear stops the search, naming the interval left and its
unclear build: never a guess. The answer names the first bad and last good build, the figures (medians with
units, the change against the last good build) and the torch git range between them.

Exit: 0 found, 3 stopped unclear, 1 bad input or a failed run (ERROR line). Runs stored (`--db`, else
MPSBENCH_DB / the default store) or pushed (`--push URL`, its reviews read there): Trends shows their builds."""

from __future__ import annotations

import argparse
import math
import os
import sys
import uuid
from pathlib import Path
from typing import Any, Callable

from mpsbench.workflows.bisect_search import Search
from mpsbench.workflows.bisect_steps import SUFFIX, BisectError, Journal, State, Stepper

NOT_FOUND = 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # the CLI's one error shape, not argparse's usage and exit 2
        raise BisectError(f"{message} (see mpsbench bisect --help)")


def _parser() -> argparse.ArgumentParser:
    from mpsbench.workflows.confirm import review_and_run_options

    p = _Parser(
        prog="mpsbench bisect",
        description="find the first bad build between a good and a bad one",
        epilog="exit status: 0 found, 3 stopped at an unclear step (named), 1 an ERROR",
    )
    p.add_argument("--good", metavar="SPEC", help="the last known good build (a sweep --build spec)")
    p.add_argument("--bad", metavar="SPEC", help="the first known bad build")
    between = p.add_argument_group("the builds between (one way)")
    between.add_argument(
        "--between",
        action="append",
        default=[],
        metavar="SPEC",
        help="a build between them, oldest first (repeat): e.g. python=/envs/n0915/bin/python",
    )
    between.add_argument(
        "--index-url",
        help="an index (PEP 503) listing torch wheels: its nightlies "
        "--from..--to, or with --releases its releases between --good's and --bad's versions",
    )
    between.add_argument("--from", dest="start", metavar="YYYY-MM-DD", help="first nightly date (included)")
    between.add_argument("--to", dest="end", metavar="YYYY-MM-DD", help="last nightly date (included)")
    between.add_argument("--releases", action="store_true", help="the releases between (default index: PyPI)")
    between.add_argument("--platform", help="wheel platform words that must match (e.g. 'macosx arm64')")
    cases = p.add_argument_group("the cases (one way)")
    cases.add_argument("--baseline", help="a review's baseline selector: its regressions and doubtful cases run")
    cases.add_argument("--candidate")
    cases.add_argument("--case", action="append", default=[], metavar="ID", help="workload|case_key|dtype|compile")
    cases.add_argument("--workload", action="append", default=[], help="every case of this workload")
    review_and_run_options(p, 4, "most rounds a step runs before it is unclear (default 4)")
    p.add_argument("--envs", type=Path, help="where build environments live (default: sweep's)")
    p.add_argument("--out", type=Path, default=Path("runs"))
    p.add_argument("--db", help="the store the runs go into and the reviews read (default: MPSBENCH_DB)")
    p.add_argument("--push", metavar="URL", help="push the runs to a team server and read its reviews")
    p.add_argument("--list", action="store_true", help="print the builds in order and the most steps, run nothing")
    p.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="JOURNAL",
        help="continue the newest bisect journal in --out (or this one)",
    )
    return p


def main(args: list[str], say: Callable[[str], None] = print) -> int:
    from collector.errors import CollectorError
    from db.errors import StoreError
    from mpsbench.workflows.confirm import ConfirmError

    try:
        return _main(_parser().parse_args(args), say)
    except (BisectError, CollectorError, StoreError, ConfirmError) as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: `mpsbench bisect --resume` continues", file=sys.stderr)
        return 130


def builds_between(o: argparse.Namespace) -> list[str]:
    """The specs between --good and --bad, oldest first, from whichever way was given."""
    from collector.sweep import nightlies

    ways = [bool(o.between), bool(o.start or o.end), bool(o.releases)]
    if sum(ways) != 1:
        raise BisectError(
            "name the builds between --good and --bad one way: --between SPEC (repeat), "
            "--index-url with --from/--to (nightlies), or --releases"
        )
    if o.between:
        return list(o.between)
    if o.releases:
        index = o.index_url or nightlies.PYPI
        versions = [_pinned(o.good, "--good"), _pinned(o.bad, "--bad")]
        return nightlies.release_builds(nightlies.fetch_page(index), index, *versions, platform=o.platform)
    if not (o.start and o.end and o.index_url):
        raise BisectError("nightlies need --index-url, --from and --to (YYYY-MM-DD)")
    start, end = nightlies.parse_day(o.start, "--from"), nightlies.parse_day(o.end, "--to")
    found = nightlies.nightly_builds(nightlies.fetch_page(o.index_url), o.index_url, start, end, platform=o.platform)
    return [n.spec for n in found]


def _pinned(spec: str, option: str) -> str:
    from packaging.requirements import Requirement

    from collector.sweep.spec import parse_spec

    for text in parse_spec(spec).requirements:
        pins = [s.version for s in Requirement(text).specifier if s.operator == "=="]
        if Requirement(text).name.lower() == "torch" and pins:
            return pins[0]
    raise BisectError(f"{option} {spec!r}: --releases needs it to pin torch==VERSION")


def _builds(o: argparse.Namespace) -> list[str]:
    from collector.sweep.spec import parse_specs

    if not (o.good and o.bad):
        raise BisectError(f"--{'good' if not o.good else 'bad'} is required (or --resume)")
    builds = [o.good, *builds_between(o), o.bad]
    parse_specs(builds)  # every spec checked, none named twice, before anything runs
    if len(builds) < 3:
        raise BisectError(f"no build between --good {o.good!r} and --bad {o.bad!r}: nothing to bisect")
    return builds


def _requested(o: argparse.Namespace, review: Callable[[str, str], dict], scope: str | None) -> list[str]:
    """The cases to chase: the review's regressions and doubtful ones, or the --case / --workload cases."""
    from db.review.decisions import regressed_cases

    given = [bool(o.baseline or o.candidate), bool(o.case or o.workload)]
    if sum(given) != 1:
        raise BisectError("name the cases one way: --baseline and --candidate (a review), or --case / --workload")
    if o.baseline or o.candidate:
        if not (o.baseline and o.candidate):
            raise BisectError(
                f"--{'candidate' if o.baseline else 'baseline'} is required with "
                f"--{'baseline' if o.baseline else 'candidate'}"
            )
        found = regressed_cases(review(o.baseline, o.candidate), scope)
        if not found:
            raise BisectError(
                f"the review of {o.candidate} against {o.baseline} has no regressed or doubtful case"
                f"{' on ' + scope if scope else ''}: nothing to bisect"
            )
        return found
    from collector.catalog import load_catalog
    from collector.run.plan import Plan, expand

    plan = Plan(
        workloads=tuple(o.workload or sorted({c.split("|", 1)[0] for c in o.case})),
        compile_modes=("eager", "inductor"),
        cases=tuple(o.case),
    )
    return [c.id for c in expand(plan, load_catalog()).cases]


def _plan(o: argparse.Namespace, targets: list[str]) -> dict[str, Any]:
    """Each run's `collector run` plan (sweep's recorded options): only the targets."""
    return {
        "profile": "quick",
        "device": o.device,
        "compile": "eager,inductor",
        "suite": [],
        "tag": [],
        "workload": sorted({t.split("|", 1)[0] for t in targets}),
        "case": targets,
        "dtype": None,
        "machine_name": o.machine_name,
        "case_time_limit": None,
        "processes": o.processes,
        "idle_wait": o.idle_wait,
        "kernels": True,  # every bisect run breaks its cases down: the answer says what ran (bundle.kernels)
    }


def _reviewer(o: dict[str, Any]) -> Callable[[str, str], dict]:
    from db.compare_command import local_answer, remote_answer
    from db.review.review import Review

    def review(baseline: str, candidate: str) -> dict:
        params = {
            "baseline": baseline,
            "candidate": candidate,
            "scope": o.get("scope") or "machine",
            **{k: o[k] for k in ("threshold", "rules") if o.get(k)},
        }
        now = Review.from_params(params)
        return remote_answer(o["push"], now.params()) if o.get("push") else local_answer(now)

    return review


def _start(o: argparse.Namespace, say: Callable[[str], None]) -> tuple[Journal, State] | None:
    from collector.sweep.envs import default_envs_dir
    from mpsbench.workflows.confirm import machine_scope

    if o.rounds < 1 or o.rounds > 50:
        raise BisectError(f"--rounds must be from 1 to 50 (got {o.rounds})")
    builds = _builds(o)
    if o.list:
        for i, spec in enumerate(builds):
            say(f"{i + 1:>4}  {spec}{'  (good)' if i == 0 else '  (bad)' if i == len(builds) - 1 else ''}")
        say(f"{len(builds)} builds: at most {math.ceil(math.log2(len(builds) - 1))} steps if every step decides")
        return None
    options = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(o).items() if k not in ("resume", "list")}
    scope = machine_scope(options, {})
    targets = _requested(o, _reviewer(options), scope)
    bisect_id = uuid.uuid4().hex[:12]
    journal = Journal(o.out / f"bisect-{bisect_id}{SUFFIX}")
    header = {
        "type": "bisect",
        "bisect_id": bisect_id,
        "builds": builds,
        "targets": targets,
        "scope": scope,
        "rounds": o.rounds,
        "plan": _plan(o, targets),
        "options": options,
        "envs": str(o.envs or default_envs_dir()),
    }
    journal.append(header)
    return journal, State(header)


def _resume(o: argparse.Namespace) -> tuple[Journal, State]:
    defaults = vars(_parser().parse_args([]))
    given = [k for k, v in vars(o).items() if k not in ("resume", "out") and v != defaults[k]]
    if given:  # half a bisect under other options would answer neither question
        raise BisectError(
            f"--{given[0].replace('_', '-')}: --resume runs with the bisect journal's own options (leave it out)"
        )
    if o.resume:
        path = Path(o.resume)
    else:
        found = sorted(o.out.glob(f"bisect-*{SUFFIX}"), key=lambda p: p.stat().st_mtime)
        if not found:
            raise BisectError(f"--resume: no bisect journal (bisect-*{SUFFIX}) in {o.out}")
        path = found[-1]
    journal = Journal(path)
    return journal, State.of(journal.read())


def _main(o: argparse.Namespace, say: Callable[[str], None]) -> int:
    if o.db:
        os.environ["MPSBENCH_DB"] = o.db  # the store every run goes into and every review reads
    started = _resume(o) if o.resume is not None else _start(o, say)
    if started is None:
        return 0
    journal, state = started
    h = state.header
    if o.resume is not None and h["options"].get("db"):
        os.environ["MPSBENCH_DB"] = h["options"]["db"]
    from mpsbench.workflows.confirm import store_bundle

    options = h["options"]
    stepper = Stepper(
        journal,
        state,
        lambda bundle: store_bundle(bundle, {"url": options.get("push")}),
        _reviewer(options),
        h["scope"],
        say,
    )
    search = Search(h["builds"])
    for v in state.verdicts:
        search.record(v["index"], v["verdict"])
    say(
        f"bisect {h['bisect_id']}: {len(h['builds'])} builds, {len(h['targets'])} case(s): "
        + ", ".join(h["targets"])
        + f"; journal {journal.path}"
    )
    while (mid := search.next_probe()) is not None:
        lo, hi = search.bounds()
        step = len(state.verdicts) + 1
        say(
            f"step {step} ({search.steps_left()} left at most): build {mid + 1} of {len(h['builds'])} "
            f"between {stepper.label(lo)} (good) and {stepper.label(hi)} (bad)"
        )
        search.record(mid, stepper.step(step, lo, mid, hi)["verdict"])
    return _answer(search, state, stepper, say)


def _answer(search: Search, state: State, stepper: Stepper, say: Callable[[str], None]) -> int:
    lo, hi = search.bounds()
    builds = state.header["builds"]
    steps = ", ".join(
        f"{v['step']}: build {v['index'] + 1} {v['verdict']} after {v['rounds']} round(s)" for v in state.verdicts
    )
    if hi - lo > 1:
        unclear = [v for v in state.verdicts if v["verdict"] == "unclear"]
        say(
            f"not found: the first bad build is after build {lo + 1} ({stepper.label(lo)}) and at or before build "
            f"{hi + 1} ({stepper.label(hi)})"
        )
        for v in unclear:
            say(
                f"  unclear: step {v['step']}, build {v['index'] + 1} ({stepper.label(v['index'])}) after "
                f"{v['rounds']} round(s): {v['why']}"
            )
        say(
            f"steps: {steps}. More --rounds (or a quieter machine) may decide: bisect again with --good and --bad "
            "set to this interval's ends"
        )
        return NOT_FOUND
    say(f"first bad: build {hi + 1} of {len(builds)}: {stepper.label(hi)}  ({builds[hi]})")
    say(f"last good: build {lo + 1} of {len(builds)}: {stepper.label(lo)}  ({builds[lo]})")
    last = state.verdicts[-1] if state.verdicts else {"rows": []}
    for r in last["rows"]:
        say(
            f"  {r['case']} {r['metric']}: {r['baseline_value']} (last good) → {r['candidate_value']} (first bad): "
            f"{r['change']} than the last good build"
        )
        if r.get("what_ran"):  # a journal written before what ran was listed has none
            say(f"    what ran: {r['what_ran']}")
    good, bad = (state.builds.get(i, {}).get("git_hash") for i in (lo, hi))
    if good and bad:
        say(
            f"torch commits between them: git log {good[:12]}..{bad[:12]}  "
            f"(https://github.com/pytorch/pytorch/compare/{good[:12]}...{bad[:12]})"
        )
    else:
        say("torch commits between them: unknown (a build without torch.version.git_version)")
    say(f"steps: {steps}")
    return 0
