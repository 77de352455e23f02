"""What the serving process (the pages, the API) needs of the store under the views: its one engine, the data
version its caches are keyed on, a fault named in the one error type, and the memory it keeps between reads
(db.memory). Each is a call into the layer that owns it, so the pages and the API import no layer below db.views."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator

from db import memory
from db.errors import StoreError

if TYPE_CHECKING:  # app.py imports this module before the server starts: nothing heavy at import
    import pandas as pd
    from sqlalchemy import Engine


def shared_engine() -> Engine:
    """The process's one store engine (DuckDB has one writer), opened, checked and migrated on first use."""
    from db.store.engine import shared_store

    return shared_store()


def store_path() -> str:
    """The store's path as configured (MPSBENCH_DB), ":memory:" or a lake's catalogue included."""
    from db.store.engine import store_path as configured_path

    return configured_path()


def data_version(engine: Engine) -> str:
    """The store's data version: it changes with every ingest, so a cache keyed on it is never stale."""
    from db.query.read import read_data_version

    return read_data_version(engine)


def store_fault(exc: BaseException) -> StoreError | None:
    """`exc` as the StoreError naming a store fault (disk full, locked, damaged, out of memory…), the store
    reopened on the next request; None when it is no fault of the store's (db.store.faults)."""
    from db.store.faults import as_store_error

    return as_store_error(exc)


def write_succeeded() -> None:
    """A write went through: the last write fault is cleared (health says "ok" again)."""
    from db.store.faults import write_succeeded as cleared

    cleared()


def last_fault() -> dict | None:
    """The last write fault with none succeeding since (health's "degraded"), else None."""
    from db.store.faults import last_fault as recorded

    return recorded()


def checkpoint() -> None:
    """At a clean stop: the shared store checkpointed and closed, so its `.duckdb` alone holds every acknowledged
    write (db.store.engine.checkpoint_shared; a failure raises, and the WAL replays it at the next open)."""
    from db.store.engine import checkpoint_shared

    checkpoint_shared()


def serve_reads(engine: Engine | None) -> None:
    """This process serves reads from now on: its databases take the server's memory share (db.store.pool)."""
    from db.store.pool import serve_limits

    serve_limits(engine)


def limit_arenas() -> None:
    """A few malloc arenas, set before the server's threads allocate (db.memory)."""
    memory.limit_arenas()


def watch_idle() -> None:
    """Start the thread that forgets memoised reviews and page views once the server is idle (db.memory; a bad
    MPSBENCH_IDLE_RELEASE_S is a ValueError naming it)."""
    memory.watch_idle()


def on_idle(hook: Callable[[], None]) -> None:
    """Run `hook` when the server goes idle (db.memory): a page cache forgets its entries there."""
    memory.on_idle(hook)


@contextmanager
def busy() -> Iterator[None]:
    """A read in flight for its duration: the last to end gives the memory back (db.memory)."""
    with memory.busy():
        yield


def read_started() -> None:
    """A streamed answer's read begins (db.memory.enter)."""
    memory.enter()


def read_ended() -> bool:
    """A streamed answer's read ended; True when it was the last in flight (db.memory.leave)."""
    return memory.leave()


def settle() -> None:
    """After the last read in flight: DuckDB's blocks retired and free pages returned (db.memory.settle)."""
    memory.settle()


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame as JSON records, every value plain (db.query.json_values: the one conversion)."""
    from db.query.json_values import records as plain_records

    return plain_records(frame)
