"""The CLI's commands; each takes the parsed args and a console and returns the exit code."""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bundle.metrics import metric as metric_info
from bundle.schema import Bundle, Result
from collector.catalog import load_catalog
from collector.console.arguments import csv_list, kv_pairs
from collector.console.display import kernels_table, progress_bar, results_table, run_summary
from collector.console.live import FINISHED, INTERRUPTED, LiveStatus
from collector.errors import CollectorError
from collector.isolation import lifeline
from collector.push.pusher import Pusher
from collector.push.report import checked_pusher, report_push
from collector.run import session as run_session
from collector.run.plan import Plan, PlannedCase, default_processes
from collector.timing.contention import IdleGate, IdlePolicy
from collector.workload import PROFILES, Workload


def _interrupt_on_sigterm() -> object:
    """SIGTERM ends a run like Ctrl-C (incomplete bundle written); returns the previous handler."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, handler)


def _open_session(args: argparse.Namespace) -> run_session.Session:
    catalog = load_catalog()
    if args.resume is not None or args.retry_crashed:
        path = Path(args.resume) if args.resume else run_session.latest_journal(args.out, args.retry_crashed)
        return run_session.resume(path, catalog, args.retry_crashed)
    plan = Plan(
        workloads=tuple(args.workload),
        suites=tuple(args.suite),
        dtypes=csv_list(args.dtype),
        compile_modes=csv_list(args.compile) or ("eager",),
        profile=args.profile,
        case_time_limit_s=args.case_time_limit,
        processes=_processes(args),
        cases=tuple(args.case),
        idle_wait_s=args.idle_wait,
        kernels=args.kernels or args.profile == "full",
    )
    return run_session.start(
        args.out,
        plan,
        catalog,
        args.device,
        args.machine_name,
        kv_pairs(args.tag),
        " ".join(shlex.quote(a) for a in sys.argv),
        args.channel,
        args.install_source,
    )


def _processes(args: argparse.Namespace) -> int:
    """--processes, or the default; --in-process measures in this one process (no replicates)."""
    if getattr(args, "in_process", False):
        if args.processes not in (None, 1):
            raise CollectorError(
                f"--in-process runs every case in this one process: it cannot take --processes {args.processes}"
            )
        return 1
    return default_processes() if args.processes is None else args.processes


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    previous = _interrupt_on_sigterm()
    lifeline.tie_from_environment(signal.SIGTERM)  # a sweep's run: stopped like Ctrl-C when the sweep dies
    try:
        return _run(args, console)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _announce(session: run_session.Session, console: Console) -> None:
    """Run-level warnings (battery, Low Power Mode…) go on screen as well as into the bundle."""
    for warning in session.state.header.get("warnings", []):
        console.print(f"[bold yellow]WARNING:[/] {escape(warning)}")
    pending, total = len(session.pending()), len(session.cases.cases)
    processes = session.plan.processes
    each = f", each timed in {processes} worker processes" if processes > 1 else ""
    console.print(
        escape(
            f"run {session.run_id}: {pending} cases to run ({total - pending} already done){each} on "
            f"{session.state.header['device']['name']}"
        )
    )


def _run_with_progress(
    session: run_session.Session, console: Console, in_process: bool = False, live: LiveStatus | None = None
) -> Path:
    with progress_bar(console) as bar:
        task = bar.add_task("starting", total=session.pending_measurements())
        processes = session.plan.processes

        def say(words: str) -> None:
            bar.update(task, description=escape(words))
            if live is not None:
                live.doing(words)

        def on_progress(event: str, planned: PlannedCase | None, results: list[Result] | None, process: int) -> None:
            if event == "retake" and planned is not None:  # not counted: the bar's total is the planned processes
                say(planned.case.label() + " · re-timing a contended process")
            elif event == "kernels" and planned is not None:  # the kernel pass, after the timing: not counted
                say(planned.case.label() + " · kernel pass (profiler)")
            elif event == "start" and planned is not None:
                where = f" · process {process + 1}/{processes}" if processes > 1 else ""
                say(planned.case.label() + where)
            else:
                bar.advance(task)
                if live is not None:
                    live.advance(results)

        def on_wait(share: float, limit_s: float) -> None:
            say(
                f"waiting up to {limit_s:.0f} s for an idle machine: other processes take "
                f"{share * 100:.0f} % of the cores"
            )

        session.gate = IdleGate(IdlePolicy(wait_s=session.plan.idle_wait_s), on_wait=on_wait)
        return run_session.run(session, on_progress, isolate=not in_process)


def _run(args: argparse.Namespace, console: Console) -> int:
    pusher = checked_pusher(args.push, console)
    session = _open_session(args)
    _announce(session, console)
    live = None
    if getattr(args, "status_file", None):
        device = session.state.header["device"]["name"]
        live = LiveStatus(args.status_file, session.run_id, device, session.pending_measurements())
    try:
        path = _run_with_progress(session, console, args.in_process, live)
    except KeyboardInterrupt:
        if live is not None:
            live.end(INTERRUPTED, f"interrupted: continue with mpsbench run --resume {session.journal.path}")
        console.print(
            escape(
                f"interrupted: incomplete bundle {session.bundle_path} (continue with: "
                f"python -m collector run --resume {session.journal.path})"
            )
        )
        return 130
    bundle = session.written  # the figures as stored: retakes included
    console.print(run_summary(bundle.results, f"run {session.run_id}"))
    for line in bundle.warnings:
        if line.startswith("CPU contention"):
            console.print(f"[bold yellow]{escape(line)}[/]", soft_wrap=True)
    if session.state.crashed:
        console.print(
            escape(
                f"{len(session.state.crashed)} case(s) crashed or timed out (error records); "
                f"--resume skips them, `run --resume {session.journal.path} --retry-crashed` runs "
                "them again"
            ),
            soft_wrap=True,
        )
    console.print(escape(f"bundle: {path}  (every record with its unit: python -m collector show {path})"))
    if pusher is not None:
        if live is not None:
            live.doing(f"storing the run ({len(bundle.results)} records)")
        code = report_push(pusher.push([path]), console)
        if live is not None:
            live.end(FINISHED, "stored" if code == 0 else f"written to {path}; storing it failed (see the terminal)")
        return code
    if live is not None:
        live.end(FINISHED, f"written to {path}")
    return 0


def cmd_sweep(args: argparse.Namespace, console: Console) -> int:
    from collector.sweep.command import cmd_sweep as sweep

    return sweep(args, console)


def _case_count(workload: Workload, profile: str) -> str:
    try:
        return str(len(workload.cases(profile)))
    except Exception as exc:  # noqa: BLE001 - shown in the listing, not fatal
        return f"error: {exc}"


def cmd_list(args: argparse.Namespace, console: Console) -> int:
    catalog = load_catalog()
    table = Table(title="workloads")
    for col in ("workload", "suite", *(f"cases ({p})" for p in PROFILES), "metrics (unit)"):
        table.add_column(col, overflow="fold")
    for w in catalog.workloads.values():
        counts = [_case_count(w, profile) for profile in PROFILES]
        metrics = ", ".join(f"{m} ({metric_info(m).unit})" for m in w.metrics)
        table.add_row(w.name, w.suite, *counts, metrics)
    console.print(table)
    for source, reason in catalog.unavailable.items():
        console.print(f"[yellow]unavailable[/] {escape(source)}: {escape(reason)}")
    return 0


def load_bundle(path: Path) -> Bundle:
    try:
        return Bundle.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise CollectorError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise CollectorError(f"{path} is not a valid bundle: {exc}") from None


def cmd_show(args: argparse.Namespace, console: Console) -> int:
    b = load_bundle(args.file)
    m = b.machine
    console.print(
        escape(
            f"run {b.run_id}  complete={b.complete}  {b.started_at.isoformat()}\n"
            f"machine {m.name}: {m.chip or m.cpu_model} {m.os} {m.os_version or ''}  device {b.device.type} "
            f"({b.device.name})\ntorch {b.build.torch_version} [{b.build.channel.value}]  tags {b.tags}"
        )
    )
    for w in b.warnings:
        console.print(f"[bold yellow]WARNING:[/] {escape(w)}")
    console.print(results_table(b.results, args.file.name))
    if b.kernels:
        console.print(kernels_table(b.kernels, b.results, f"what ran: each case's call under {b.kernels[0].profiler}"))
    return 0


def cmd_push(args: argparse.Namespace, console: Console) -> int:
    if not args.files and not args.outbox:
        raise CollectorError("push: name bundle files, or --outbox to send what waits in the outbox")
    missing = [str(f) for f in args.files if not f.is_file()]
    if missing:
        raise CollectorError(f"push: no such file: {', '.join(missing)}")
    return report_push(Pusher(args.url).push(list(args.files)), console)
