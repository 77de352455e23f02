"""Run the cases of a run in a long-lived child worker, so a case that crashes or hangs cannot end the run.

- The worker is a `spawn`ed process (fork is unsafe once MPS/CUDA is initialised); it imports torch once and
  runs case after case (collector.isolation.runner.run_case), so a case costs a pipe round trip, not a torch import.
- Hard deadline per case = the case time limit + max(2 s, 25 %) (the soft limit inside the case stops its
  passes first; the margin is for the last block, teardown and a loaded machine). Past it the worker is
  killed and the case becomes `error` "timed out after N s (limit M s)". No limit: no deadline.
- A worker that dies in a case (segfault, a Metal assertion's abort, os._exit) makes that case `error`
  "crashed: SIGSEGV (signal 11)" (or its exit status). Either way the next case gets a fresh worker.
- The kernel pass (collector.run.kernel_pass) uses the same worker with a profiler in its spec: it profiles the case
  (collector.isolation.profiled) instead of timing it, starts with the profiler's environment and writes its output to a log
  file the parent reads once it has exited.
- Ctrl-C belongs to the parent: the worker ignores SIGINT and is killed when the parent stops. The worker leads
  its own process group, so killing it ends what a case started too (inductor's compile workers, a DataLoader's);
  it is tied to the parent (collector.isolation.lifeline), so a parent that is SIGKILLed leaves no worker behind.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any, Iterator

from bundle.schema import Status
from collector.adapters.profilers import KernelProfiler
from collector.isolation import lifeline
from collector.isolation.runner import RunContext, finalize, records, run_case
from collector.timing.bench import CaseBench
from collector.timing.loop import TimingPolicy
from collector.workload import Case, Workload

MARGIN_MIN_S = 2.0
MARGIN_FRACTION = 0.25
START_TIMEOUT_S = 600.0  # importing torch on a busy machine can take a while; a worker never ready is a crash
CRASHED, TIMED_OUT = "crashed", "timed_out"  # journal outcomes that --resume skips unless --retry-crashed


def hard_deadline_s(limit_s: float | None) -> float | None:
    return None if limit_s is None else limit_s + max(MARGIN_MIN_S, MARGIN_FRACTION * limit_s)


def exit_text(exitcode: int | None) -> str:
    """'SIGSEGV (signal 11)' for a death by signal, else the exit status."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = "unknown signal"
        return f"{name} (signal {-exitcode})"
    return f"the worker exited with status {exitcode}"


@dataclass(frozen=True)
class WorkerSpec:
    """What the worker needs to build the run's RunContext itself (picklable; the adapter is not sent)."""

    device_choice: str
    profile: str
    case_time_limit_s: float | None = None
    chip: str | None = None
    gpu_cores: int | None = None
    processes: int = 1  # how many worker processes time each case (the policy's budgets are shared out)
    full: bool = True  # run the memory and correctness passes too (one process of a run does)
    profiler: KernelProfiler | None = None  # the kernel pass: profile each case with it (collector.isolation.profiled)
    log_path: str | None = None  # the worker's stdout and stderr go to this file (the kernel pass reads it)

    def context(self) -> RunContext:
        from collector.adapters import get_adapter

        return RunContext(
            get_adapter(self.device_choice, chip=self.chip),
            TimingPolicy.for_profile(self.profile, self.processes),
            self.case_time_limit_s,
            self.chip,
            self.gpu_cores,
            self.full,
        )


@dataclass
class CaseOutcome:
    records: list[
        dict[str, Any]
    ]  # one process's records of the case (collector.isolation.runner.records), as journaled
    failure: str | None = None  # None | CRASHED | TIMED_OUT


def _worker_main(conn: Connection, spec: WorkerSpec) -> None:
    # Its own group first, so whatever a case starts can be ended with it; SIGTERM (the parent died) ends that
    # group at once instead of finishing a long case first.
    lifeline.lead_own_group()
    signal.signal(signal.SIGTERM, lifeline.end_own_group)
    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid is not None:
        lifeline.tie_to_parent(parent.pid, signal.SIGTERM)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and then ends this worker
    if spec.log_path:  # file descriptors 1 and 2: what C++ prints at exit (MPSProfiler's statistics) lands there too
        log = os.open(spec.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
    ctx = spec.context()
    conn.send(("ready", os.getpid()))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):  # the parent is gone: so is this worker, with whatever its cases started
            lifeline.end_own_group()
        if job is None:
            return
        workload, case = job
        if spec.profiler is not None:
            from collector.isolation.profiled import profile_case

            conn.send(profile_case(workload, case, ctx, spec.profiler))
        else:
            conn.send(records(run_case(workload, case, ctx)))


@contextmanager
def _environment(extra: dict[str, str]) -> Iterator[None]:
    """os.environ with `extra` while a worker starts (a spawned process copies the environment it is started with);
    restored after. The parent runs nothing on the device, so nothing of its own reads them."""
    before = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class Worker:
    """One child process and its pipe."""

    def __init__(self, spec: WorkerSpec) -> None:
        mp = multiprocessing.get_context("spawn")
        self.conn, child = mp.Pipe()
        # Not daemonic: a daemonic process may not start children (inductor's compile workers, DataLoader).
        self.process = mp.Process(target=_worker_main, args=(child, spec), name="mpsbench-case-worker")
        started = time.perf_counter()
        with _environment(spec.profiler.environment() if spec.profiler else {}):
            self.process.start()
        child.close()
        try:
            self.ready = self.conn.poll(START_TIMEOUT_S) and self._ready_message()
        except BaseException:  # Ctrl-C while it starts: no worker outlives the run
            self.close(kill=True)
            raise
        self.start_s = time.perf_counter() - started

    def _ready_message(self) -> bool:
        try:
            return self.conn.recv()[0] == "ready"
        except (EOFError, OSError):
            return False

    def call(self, job: bytes, deadline_s: float | None) -> list[dict[str, Any]] | str:
        """The case's records (collector.isolation.runner.records), or TIMED_OUT / CRASHED."""
        try:
            self.conn.send_bytes(job)
        except (BrokenPipeError, OSError):
            return CRASHED
        if not self.conn.poll(deadline_s):
            return TIMED_OUT
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            return CRASHED

    def close(self, kill: bool = False) -> None:
        """Ask the worker to stop (or kill it), then end whatever is left in its process group."""
        if not kill and self.process.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.process.join(5)
        pid = self.process.pid
        if self.process.is_alive():
            if not lifeline.end_group(pid):  # not yet its own group (still starting): the worker alone
                self.process.kill()
            self.process.join()
        if pid is not None:
            lifeline.end_group(pid)  # a case's own children that outlived the worker
        self.conn.close()


class Isolator:
    """Runs cases in a worker, restarting it after a crash or timeout. Use as a context manager."""

    def __init__(self, spec: WorkerSpec, ctx: RunContext) -> None:
        self.spec, self.ctx = spec, ctx
        self.worker: Worker | None = None
        self.deadline_s = hard_deadline_s(spec.case_time_limit_s)

    def __enter__(self) -> "Isolator":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.worker is not None:
            self.worker.close(kill=exc[0] is not None)
            self.worker = None

    def run(self, workload: Workload, case: Case) -> CaseOutcome:
        try:  # pickled here, so a workload that cannot travel is its own error, not the run's
            job = bytes(ForkingPickler.dumps((workload, case)))
        except Exception as exc:  # noqa: BLE001 - pickle raises many types
            return self._failed(
                workload, case, None, f"cannot be sent to the case worker: {type(exc).__name__}: {exc}", 0.0
            )
        if self.worker is None:
            self.worker = Worker(self.spec)
            if not self.worker.ready:
                return self._failed(
                    workload,
                    case,
                    CRASHED,
                    f"crashed: the case worker did not start ({exit_text(self._drop_worker(wait_s=5))})",
                    0.0,
                )
        started = time.monotonic()
        answer = self.worker.call(job, self.deadline_s)
        elapsed = time.monotonic() - started
        if answer == TIMED_OUT:
            self._drop_worker(wait_s=0)
            return self._failed(
                workload,
                case,
                TIMED_OUT,
                f"timed out after {self.deadline_s:g} s (limit "
                f"{self.spec.case_time_limit_s:g} s): the case's worker was killed",
                elapsed,
            )
        if answer == CRASHED:
            return self._failed(workload, case, CRASHED, f"crashed: {exit_text(self._drop_worker(wait_s=5))}", elapsed)
        return CaseOutcome(
            answer
        )  # validated once, when the case's processes are merged (collector.isolation.processes)

    def _drop_worker(self, wait_s: float) -> int | None:
        """Reap (a dead worker's status is its signal) or kill the worker; its exit code."""
        worker, self.worker = self.worker, None
        if worker is None:
            return None
        worker.process.join(wait_s)
        worker.close(kill=True)
        return worker.process.exitcode

    def _failed(
        self, workload: Workload, case: Case, failure: str | None, message: str, elapsed_s: float
    ) -> CaseOutcome:
        """Every declared metric of the case as `error` with the message (what the worker measured is lost)."""
        bench = CaseBench(case, workload, self.ctx.adapter, chip=self.ctx.chip, gpu_cores=self.ctx.gpu_cores)
        return CaseOutcome(records(finalize(bench, [], (Status.error, message), elapsed_s, None)), failure)
