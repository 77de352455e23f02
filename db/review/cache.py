"""The review's per-process memo: recent answers keyed by (store, its data version, the question), so every page,
API call, claim and gate asking the same question of the same data shares one computation. A new ingest or a
retraction changes the data version, so no answer outlives the data it was computed from."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Hashable, TypeVar

from sqlalchemy import Engine

from db.store.read import read_data_version

T = TypeVar("T")
ENTRIES = 16  # per kind of answer (a 50k-case comparison is tens of MB)


_MEMOS: list["Memo"] = []


class Memo:
    def __init__(self, entries: int = ENTRIES):
        _MEMOS.append(self)
        self.entries = entries
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, engine: Engine, question: Hashable, compute: Callable[[], T]) -> T:
        key = (id(engine), read_data_version(engine), question)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        answer = compute()  # outside the lock: two threads may compute one answer, never block each other
        with self._lock:
            self._items[key] = answer
            while len(self._items) > self.entries:
                self._items.popitem(last=False)
        return answer

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def clear_all() -> None:
    """Forget every memoised answer (benchmarks measure the uncached work with it)."""
    for memo in _MEMOS:
        memo.clear()
