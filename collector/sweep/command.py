"""`mpsbench sweep` / `python -m collector sweep`: check every argument, make or reuse each build's environment,
then run the rounds with progress (builds × rounds × cases, ETA), journaling as it goes."""

from __future__ import annotations

import argparse
import uuid
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, TaskID

from collector.catalog import load_catalog
from collector.console.arguments import csv_list
from collector.console.display import progress_bar
from collector.errors import CollectorError
from collector.push.report import checked_pusher  # a bad URL is refused (and a missing token said) before anything runs
from collector.run.plan import Plan, expand
from collector.sweep.delivery import Delivery
from collector.sweep.envs import Installer, ReadyBuild, default_envs_dir, probe
from collector.sweep.journal import SweepJournal, SweepState, latest
from collector.sweep.options import recorded, resume_push, run_args
from collector.sweep.runner import SlotOutcome, SlotRun, run_slot
from collector.sweep.schedule import Slot, schedule
from collector.sweep.spec import BuildSpec, parse_spec, parse_specs


def _count_cases(options: dict) -> int:
    """The plan's cases (checked here, before anything runs: an unknown workload is an ERROR now)."""
    plan = Plan(
        workloads=tuple(options["workload"]),
        suites=tuple(options["suite"]),
        dtypes=csv_list(options["dtype"]),
        compile_modes=csv_list(options["compile"]) or ("eager",),
        profile=options["profile"],
        cases=tuple(options.get("case", ())),
    )
    return len(expand(plan, load_catalog()).cases)


def _check_args(args: argparse.Namespace) -> None:
    if args.rounds < 1:
        raise CollectorError(f"--rounds must be at least 1 (got {args.rounds})")
    reserved = {"sweep", "round", "build", "aa", "spec", "position"}
    for tag in args.tag:
        if tag.partition("=")[0] in reserved:
            raise CollectorError(f"--tag {tag!r}: {', '.join(sorted(reserved))} are the sweep's own tags")


def cmd_sweep(args: argparse.Namespace, console: Console) -> int:
    if args.resume is not None:
        path = Path(args.resume) if args.resume else latest(args.out)
        journal = SweepJournal(path)
        state = journal.read()
        url = resume_push(args, state.header)  # the journal's options; a conflicting one is refused here
        pusher = checked_pusher(url, console)
        if url and not state.header["options"].get("push"):
            journal.append({"type": "options", "options": {"push": url}})
            state.header["options"]["push"] = url
        console.print(escape(f"resuming sweep {state.header['sweep_id']} ({path})"))
    else:
        pusher = checked_pusher(args.push, console)
        journal, state = _start(args, console)
    return _run(journal, state, console, Delivery(pusher, journal, state, console) if pusher else None)


def _start(args: argparse.Namespace, console: Console) -> tuple[SweepJournal, SweepState]:
    _check_args(args)
    specs = parse_specs(args.build)
    options = recorded(args)
    n_cases = _count_cases(options)
    # an existing environment that is not a Python with torch is bad input: refused before anything is written
    given = {i: probe(s.python, s, i) for i, s in enumerate(specs) if s.python}
    sweep_id = uuid.uuid4().hex[:12]
    journal = SweepJournal(SweepJournal.path_for(args.out, sweep_id))
    header = {
        "sweep_id": sweep_id,
        "started_at": datetime.now(timezone.utc).isoformat(),
        "rounds": args.rounds,
        "aa": bool(args.aa),
        "builds": [s.text for s in specs],
        "options": options,
        "n_cases": n_cases,
        "envs": str(args.envs or default_envs_dir()),
    }
    journal.start(header)
    state = SweepState(header)
    installer = Installer(Path(header["envs"]), log=lambda text: console.print(escape(text)))
    for i, spec in enumerate(specs):
        record = _ready(given[i]) if i in given else _install(installer, spec, i, console)
        journal.append(record)
        state.builds[i] = record
    return journal, state


def _ready(build: ReadyBuild) -> dict:
    return {"type": "build", "ok": True, **build.to_json()}


def _install(installer: Installer, spec: BuildSpec, index: int, console: Console) -> dict:
    try:
        build = installer.ensure(spec, index)
    except CollectorError as exc:  # reported; the sweep goes on with the builds that install
        console.print(f"[bold red]build failed:[/] {escape(str(exc))}", soft_wrap=True)
        return {"type": "build", "ok": False, "index": index, "spec": spec.text, "error": str(exc)}
    console.print(
        escape(f"build {index + 1}: {build.label} ({'created' if build.created else 'reused'} {build.python})")
    )
    return _ready(build)


def _slots(journal: SweepJournal, state: SweepState) -> list[Slot]:
    if state.order is None:
        ready = [i for i, b in sorted(state.builds.items()) if b["ok"]]
        if len(ready) < 2:
            failed = "; ".join(b["spec"] for b in state.builds.values() if not b["ok"])
            raise CollectorError(f"--build: fewer than two builds could be made ready (failed: {failed}); nothing ran")
        slots = schedule(ready, state.header["rounds"], state.header["aa"])
        state.order = [s.__dict__ for s in slots]
        journal.append({"type": "schedule", "slots": state.order})  # the rotated order, recorded once
    return [Slot(**s) for s in state.order]


def _run(journal: SweepJournal, state: SweepState, console: Console, delivery: Delivery | None) -> int:
    slots = _slots(journal, state)
    header, builds = state.header, state.builds
    n_cases, sweep_id = header["n_cases"], header["sweep_id"]
    args = run_args(header["options"])
    folder = journal.path.parent / f"sweep-{sweep_id}"
    pending = [s for s in slots if not (state.done.get(s.key) or {}).get("ok")]
    n_builds = len({s.build for s in slots})
    console.print(
        escape(
            f"sweep {sweep_id}: {n_builds} builds × {header['rounds']} rounds"
            f"{' + A/A' if header['aa'] else ''} × {n_cases} cases = {len(slots)} runs "
            f"({len(slots) - len(pending)} done); journal {journal.path}"
        )
    )
    failures = 0
    try:
        if delivery is not None:
            delivery.backlog()  # runs a killed sweep finished but never delivered
        with progress_bar(console) as bar:
            task = bar.add_task("starting", total=len(slots) * n_cases, completed=(len(slots) - len(pending)) * n_cases)
            for slot in pending:
                outcome = _run_one(slot, state, folder / slot.key, args, journal, (bar, task))
                state.done[slot.key] = outcome.record
                if not outcome.ok:
                    failures += 1
                    console.print(
                        f"[bold red]run failed:[/] {escape(slot.key)}: {escape(outcome.detail)}", soft_wrap=True
                    )
                elif delivery is not None:
                    delivery.push([slot.key])
    except KeyboardInterrupt:
        console.print(escape(f"interrupted: continue with: mpsbench sweep --resume {journal.path}"))
        return 130
    console.print(escape(f"sweep {sweep_id} done: {len(slots) - failures} of {len(slots)} runs in {folder}"))
    if delivery is not None:
        console.print(escape(delivery.summary()))
    failed_builds = [b for b in builds.values() if not b["ok"]]
    for b in failed_builds:
        console.print(escape(f"not measured: --build {b['spec']!r} (could not be installed)"))
    return 1 if failures or failed_builds else 0


def _run_one(
    slot: Slot,
    state: SweepState,
    folder: Path,
    args: list[str],
    journal: SweepJournal,
    progress: tuple[Progress, TaskID],
) -> SlotOutcome:
    """One slot's `collector run`, its cases counted on the sweep's progress bar as they finish."""
    (bar, task), header, build = progress, state.header, state.builds[slot.build]
    n_cases = header["n_cases"]
    run = SlotRun(slot, build["python"], build["label"], build["install_source"], _declared(build["spec"]), folder)
    base = bar.tasks[0].completed
    bar.update(
        task,
        description=escape(f"round {slot.round}/{header['rounds']} · {build['label']}{' (A/A)' if slot.aa else ''}"),
    )
    outcome = run_slot(
        run,
        header["sweep_id"],
        args,
        journal,
        lambda n, base=base: bar.update(task, completed=base + min(n, n_cases)),
    )
    bar.update(task, completed=base + n_cases)
    return outcome


def _declared(spec_text: str) -> str | None:
    try:
        return parse_spec(spec_text).channel
    except CollectorError:  # a python= env gone since the journal was written: its run will say so
        return None
