"""The server process's memory handed back to the system once its reads are answered.

A read builds frames of hundreds of MB and frees them, but the memory stayed with the process: glibc keeps freed
memory in its arenas (one per thread that allocated, up to 8 per core), Arrow's allocator keeps its own (its
strings back the frames), and DuckDB keeps every block of the store file a query read in its buffer pool (up to
its memory_limit: half the RAM). A long-running server's RSS so stayed near the sum of its largest reads.

- `limit_arenas`, at the server's start (before its threads allocate), keeps glibc to a few arenas.
- `busy()` marks a read in flight (an API request until its body is sent, a page's run). When the last one in
  flight ends, `settle` runs the hooks registered with `on_settle` (the store's buffer pool emptied:
  db.store.engine), then returns Arrow's and glibc's free pages (`release`). After IDLE_S seconds with nothing in
  flight the hooks registered with `on_idle` run too (the reviews' memo and the pages' views forgotten:
  db.review.cache, pages.parts.cache), then `release` again every IDLE_S while it stays idle, so an idle server is
  back near a fresh one's size.

Measured with benchmarks/read_memory.py (README, "Benchmarks of the tool itself"). MPSBENCH_IDLE_RELEASE_S sets
IDLE_S (0: never); MALLOC_ARENA_MAX the arenas. Elsewhere than glibc the glibc parts do nothing."""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

log = logging.getLogger("mpsbench.memory")
ARENAS = 2  # glibc's M_ARENA_MAX for the server: its default is 8 × the cores
IDLE_S = 30.0  # seconds with no read in flight before the memoised reviews are forgotten
_M_ARENA_MAX = -8  # glibc's mallopt parameter number
_releasing = threading.Lock()
_state = threading.Condition()
_active = 0
_last_end = 0.0
_idle_done = True
_settle_hooks: list[Callable[[], None]] = []
_idle_hooks: list[Callable[[], None]] = []
_watcher: threading.Thread | None = None
_generation = 0  # the idle thread of this generation runs; stop_watching starts the next


def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None  # glibc, not musl
    except OSError:
        return None


_LIBC = _libc()


def limit_arenas(arenas: int | None = None) -> bool:
    """At most `arenas` malloc arenas (else ARENAS, unless MALLOC_ARENA_MAX set glibc's own); True where glibc took
    it."""
    if _LIBC is None or (arenas is None and os.environ.get("MALLOC_ARENA_MAX")):
        return False  # glibc read MALLOC_ARENA_MAX itself at the start
    return bool(_LIBC.mallopt(_M_ARENA_MAX, arenas or ARENAS))


def release() -> None:
    """Return the free memory of Arrow's pool (mimalloc or jemalloc) and of every malloc arena to the system; one
    caller at a time, the others skip."""
    if not _releasing.acquire(blocking=False):
        return
    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
        if _LIBC is not None:
            _LIBC.malloc_trim(0)
    finally:
        _releasing.release()


def on_settle(hook: Callable[[], None]) -> None:
    """Run `hook` whenever the last read in flight ends (before `release`); registered once per process."""
    if hook not in _settle_hooks:
        _settle_hooks.append(hook)


def on_idle(hook: Callable[[], None]) -> None:
    """Run `hook` once the server has had no read in flight for IDLE_S seconds (before `release`)."""
    if hook not in _idle_hooks:
        _idle_hooks.append(hook)


def _run(hooks: list[Callable[[], None]]) -> None:
    for hook in list(hooks):
        try:
            hook()
        except Exception:
            log.exception("memory hook %s failed", getattr(hook, "__qualname__", hook))
    release()


def enter() -> None:
    """A read (or any request) starts; `leave` when it has ended."""
    global _active, _idle_done
    with _state:
        _active += 1
        _idle_done = False


def leave() -> bool:
    """A read has ended; True when it was the last in flight (its caller then runs `settle`, off any event loop)."""
    global _active, _last_end
    with _state:
        _active -= 1
        _last_end = time.monotonic()
        _state.notify_all()
        return _active == 0


@contextmanager
def busy() -> Iterator[None]:
    """A read in flight (a page's run): the last one to end settles the process (the settle hooks, `release`)."""
    enter()
    try:
        yield
    finally:
        if leave():
            settle()


def settle() -> None:
    """The settle hooks and `release`, if no read is in flight (one that starts meanwhile is not disturbed: the
    hooks only drop what the next read can read again)."""
    with _state:
        if _active:
            return
    _run(_settle_hooks)


def idle_seconds() -> float:
    """env MPSBENCH_IDLE_RELEASE_S (default IDLE_S; 0: never); a value that is not seconds ≥ 0 is a ValueError
    naming it (`mpsbench serve` refuses to start on it)."""
    raw = os.environ.get("MPSBENCH_IDLE_RELEASE_S", "").strip()
    try:
        wait = float(raw) if raw else IDLE_S
    except ValueError:
        wait = -1.0
    if not 0 <= wait < float("inf"):
        # a ValueError, not the store's StoreError: this module sits below db.errors (tests/test_layers.py)
        raise ValueError(
            f"MPSBENCH_IDLE_RELEASE_S={raw!r} is not a number of seconds (must be a number of seconds, 0 or more; "
            "0: never)"
        )
    return wait


def watch_idle() -> None:
    """Start the thread that runs the idle hooks after idle_seconds() with nothing in flight (once per process;
    nothing with MPSBENCH_IDLE_RELEASE_S=0)."""
    global _watcher
    wait = idle_seconds()
    if wait <= 0 or (_watcher is not None and _watcher.is_alive()):
        return
    _watcher = threading.Thread(target=_watch, args=(wait, _generation), name="mpsbench-idle-release", daemon=True)
    _watcher.start()


def stop_watching() -> None:
    """End the idle thread (tests); watch_idle starts another."""
    global _generation, _watcher
    with _state:
        _generation += 1
        _state.notify_all()
    if _watcher is not None:
        _watcher.join(timeout=5.0)
        _watcher = None


def _watch(wait: float, generation: int) -> None:
    """Idle for `wait` seconds: the idle hooks once, then `release` every `wait` seconds while it stays idle (what
    Streamlit frees later, a closed tab's session after server.disconnectedSessionTTL, goes back too)."""
    global _idle_done
    released = 0.0
    while True:
        with _state:
            while (_active or not _last_end) and generation == _generation:  # a read in flight, or none read yet
                _state.wait()
            if generation != _generation:
                return
            now = time.monotonic()
            due = max(_last_end, released if _idle_done else 0.0) + wait
            if now < due:
                _state.wait(due - now)
                continue
            first, _idle_done = not _idle_done, True
        if first:
            _run(_idle_hooks)
        else:
            release()
        released = time.monotonic()
