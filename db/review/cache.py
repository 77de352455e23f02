"""The review's per-process memo: recent answers keyed by (store, its data version, the question), so every page,
API call, claim and gate asking the same question of the same data shares one computation. A new ingest or a
retraction changes the data version, so no answer outlives the data it was computed from.

Bounded by size, not only by count: a machine-scope review of two builds on a 10 M-result store (49,200 cases)
holds ~30 MB of frames (estimated ~64 MB: the comparison is counted in both memos), ~100 MB of the process, and
sixteen of them per memo took a long-running server past 1.7 GB. Every memo keeps its newest answer; older ones
go, least recently used first, while the answers of all memos together are estimated above BUDGET_MB
(`footprint`: their frames' and arrays' bytes) or a memo holds more than its entries. A server idle for db.memory.IDLE_S forgets them all (db.memory.on_idle)."""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
from sqlalchemy import Engine

from db.memory import on_idle
from db.query.read import read_data_version

T = TypeVar("T")
ENTRIES = 16  # per kind of answer, at most
BUDGET_MB = 64.0  # every memo's answers together, as footprint estimates them (each memo keeps its newest)

_MEMOS: list["Memo"] = []
_BUDGET_LOCK = threading.Lock()


def footprint(value: Any, seen: set[int] | None = None, depth: int = 0) -> int:
    """The bytes an answer holds in frames, arrays and Arrow data (each object counted once; 4 levels deep
    through dataclasses, dicts, lists and tuples). A frame's strings are counted (pandas' deep usage)."""
    seen = set() if seen is None else seen
    if id(value) in seen or depth > 4:
        return 0
    seen.add(id(value))
    if isinstance(value, pd.DataFrame):
        return int(value.memory_usage(deep=True).sum())
    if isinstance(value, (np.ndarray, pa.Array, pa.ChunkedArray, pa.Table)):
        return int(value.nbytes)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(footprint(getattr(value, f.name), seen, depth + 1) for f in dataclasses.fields(value))
    if isinstance(value, dict):
        return sum(footprint(v, seen, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(footprint(v, seen, depth + 1) for v in value)
    return 0


class Memo:
    def __init__(self, entries: int = ENTRIES):
        _MEMOS.append(self)
        self.entries = entries
        self._items: OrderedDict = OrderedDict()  # key → (answer, its footprint)
        self._lock = threading.Lock()

    def get(self, engine: Engine, question: Hashable, compute: Callable[[], T]) -> T:
        key = (id(engine), read_data_version(engine), question)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit[0]
        answer = compute()  # outside the lock: two threads may compute one answer, never block each other
        size = footprint(answer)
        with self._lock:
            self._items[key] = (answer, size)
            while len(self._items) > self.entries:
                self._items.popitem(last=False)
        _within_budget()
        return answer

    def bytes(self) -> int:
        with self._lock:
            return sum(size for _, size in self._items.values())

    def _drop_oldest(self) -> bool:
        """Forget the least recently used answer but the newest; False when only the newest is left."""
        with self._lock:
            if len(self._items) <= 1:
                return False
            self._items.popitem(last=False)
            return True

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def _within_budget() -> None:
    """Forget old answers, the largest memo's first, until all memos together fit BUDGET_MB."""
    with _BUDGET_LOCK:
        while sum(m.bytes() for m in _MEMOS) > BUDGET_MB * 2**20:
            for memo in sorted(_MEMOS, key=lambda m: m.bytes(), reverse=True):
                if memo._drop_oldest():
                    break
            else:
                return  # each memo is down to its newest answer


def clear_all() -> None:
    """Forget every memoised answer (benchmarks measure the uncached work with it; an idle server frees them)."""
    for memo in _MEMOS:
        memo.clear()


on_idle(clear_all)
