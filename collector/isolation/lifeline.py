"""Child processes that end with their parent, even when the parent is SIGKILLed.

A sweep starts each slot's `collector run` in its own session (process group), and a run starts each case worker
as the leader of its own process group, so either can be ended with everything it started (a case's own children:
inductor's compile workers, a DataLoader's) by one killpg. The child ties itself to its parent: on Linux with
PR_SET_PDEATHSIG (the kernel signals it the moment the parent dies, SIGKILL included); elsewhere (macOS) a daemon
thread polls the parent every POLL_S. The signal is one the child handles (a run: SIGTERM = Ctrl-C, so its
incomplete bundle is written; a worker: SIGTERM = end its own group), so nothing it started is left behind.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

POLL_S = 0.5
PARENT_VARIABLE = "MPSBENCH_PARENT_PID"  # set by a sweep for its `collector run`: the pid to end with
_PR_SET_PDEATHSIG = 1


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _pdeathsig(sig: int) -> bool:
    """Linux: have the kernel send sig when the parent dies; False where that does not exist."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def tie_to_parent(parent: int, sig: int) -> None:
    """Send sig to this process when `parent` dies. `parent` is normally os.getppid(); when it is not (an
    environment's python that is a wrapper script which did not exec), the parent is watched by its pid."""
    direct = os.getppid() == parent
    if direct and _pdeathsig(sig):
        if os.getppid() != parent:  # it died before the prctl: the kernel will not tell us any more
            os.kill(os.getpid(), sig)
        return
    watch(parent, sig, direct)


def watch(parent: int, sig: int, direct: bool = True) -> threading.Thread:
    """The portable tie: a daemon thread that sends sig to this process once `parent` is gone (polled every
    POLL_S; `direct`: it is our parent, so a changed getppid() says so without any pid-reuse doubt)."""
    main = threading.main_thread().ident

    def poll() -> None:
        while (os.getppid() == parent) if direct else alive(parent):
            time.sleep(POLL_S)
        # At the main thread: its blocking call (a pipe read, a sleep) is interrupted and its handler runs now; a
        # signal this thread took would wait for the main thread's next bytecode.
        signal.pthread_kill(main, sig)

    thread = threading.Thread(target=poll, name="mpsbench-parent-watch", daemon=True)
    thread.start()
    return thread


def tie_from_environment(sig: int = signal.SIGTERM) -> None:
    """In a `collector run` a sweep started: end (sig) with the sweep. The variable is dropped, so the run's own
    children do not tie themselves to the sweep."""
    value = os.environ.pop(PARENT_VARIABLE, "")
    if value.isdigit():
        tie_to_parent(int(value), sig)


def lead_own_group() -> None:
    """Make this process the leader of a new process group (a case worker, at its start)."""
    try:
        os.setpgid(0, 0)
    except OSError:  # already a group or session leader: nothing to do
        pass


def end_own_group(*_: object) -> None:
    """SIGKILL this process's group when it leads one (a case worker and its children), else this process alone:
    never a group it merely belongs to. Usable as a signal handler."""
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def end_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Signal every process left in the group `pgid` (one this process made); False when none is left."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True
