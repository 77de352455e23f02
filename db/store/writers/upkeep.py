"""The derived tables' upkeep after uploads: the side summaries of marked run groups (db.store.derived.side_cases) and the
A/A model's figures of groups with enough new pairs (db.store.derived.aa_pairs).

Both read every run (or pair) of a group, so inside an upload their cost grew with the store's history: the same
20,000-result bundle uploaded 20 times went from 0.8 to 1.7 s an upload and its peak memory from 78 to 225 MB
(benchmarks/upload_history.py). An upload now writes only its own rows and marks; the upkeep follows it. Each
piece is computed from a snapshot without the write lock, then written under it in a short transaction, so an
upload waits at most for that write. Nothing waits for the upkeep to be right: a marked side is answered from
the pivot (db.query.compare.side_reads) and the A/A figures already lag by up to REFRESH of a group's pairs. New A/A
figures change the data version (answers are memoised on it); a side's rewrite does not (its answer is the same).

Who runs it: the server after each upload's answer is sent (`catch_up_soon`), and at its start for marks a stopped
server left; each CLI command that stores runs, before it exits (`catch_up`).
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass

from sqlalchemy import Engine

from db.store.derived import aa_pairs, side_cases
from db.store.engine import WRITE_LOCK, bump_data_version

# results summarised per snapshot: bounds a step's memory, not the answer (the 10 M-row benchmark store's 5,400
# groups in batches of 20 groups peaked at 1.16 GB)
RESULTS_PER_WRITE = 200_000


@dataclass(frozen=True)
class CaughtUp:
    side_groups: int  # side groups rewritten
    aa_groups: int  # A/A groups whose figures were recomputed
    seconds: float


_ONE_AT_A_TIME = threading.Lock()  # two upkeeps at once would summarise the same groups twice


def catch_up(engine: Engine) -> CaughtUp:
    """Rewrite every marked side group and every due A/A group, as the store stands now."""
    with _ONE_AT_A_TIME:
        return _run(engine)


def _run(engine: Engine) -> CaughtUp:
    start = time.perf_counter()
    sides = _side_groups(engine)
    figures = _aa_figures(engine)
    return CaughtUp(sides, figures, time.perf_counter() - start)


def _side_groups(engine: Engine) -> int:
    with engine.connect() as conn:
        marked = side_cases.marks(conn)
        batches = [
            (kind, batch, parts)
            for kind in side_cases.KINDS
            for batch, parts in _batches(side_cases.sizes(conn, kind, [g for k, g in marked if k == kind]))
        ]
    for kind, groups, parts in batches:
        _rewrite(engine, kind, groups, parts)
    return len(marked)


def _batches(sizes: dict[int, int]) -> list[tuple[list[int], int]]:
    """The groups in runs of at most RESULTS_PER_WRITE results, each with the slices its cases are read in: a
    larger group alone, its cases in slices of about RESULTS_PER_WRITE results (side_cases.summarise), so a
    group's history grows the upkeep's time, not its memory."""
    batches: list[list[int]] = []
    held = 0
    for group, n in sorted(sizes.items()):
        if not batches or held + n > RESULTS_PER_WRITE:
            batches.append([])
            held = 0
        batches[-1].append(group)
        held += n
    return [(groups, max(1, -(-sum(sizes[g] for g in groups) // RESULTS_PER_WRITE))) for groups in batches]


def _rewrite(engine: Engine, kind: str, groups: list[int], parts: int = 1) -> None:
    with engine.connect() as conn, conn.begin():  # one snapshot: the groups' runs as they stand now
        seen = side_cases.marks(conn)  # the marks this snapshot answers (a mark made later stays)
        rows = side_cases.summarise(conn, kind, groups, parts)
    with WRITE_LOCK, engine.begin() as conn:
        side_cases.replace(conn, kind, groups, rows, [m for g in groups for m in seen.get((kind, g), [])])


def _aa_figures(engine: Engine) -> int:
    with engine.connect() as conn, conn.begin():
        figures = aa_pairs.due_figures(conn)
    if figures:
        with WRITE_LOCK, engine.begin() as conn:
            aa_pairs.write_figures(conn, figures)
            # a review judged since the upload read the old figures (its noise bounds and words): answers are
            # memoised per data version, so without a new one that answer stayed until the next upload (one
            # replica of a lake said 7 A/A pairs, the other 14)
            bump_data_version(conn)
    return len(figures)


_WAITING = threading.Semaphore(1)  # at most one upkeep waits behind the running one


def catch_up_soon(engine: Engine) -> None:
    """The server's upkeep after a stored upload or a retraction, run once the answer is sent (a Starlette
    background task; the Upload page after its files). A burst is caught up once or twice, not once per upload:
    while one upkeep waits for the running one, later calls return at once (the waiting one will see their
    marks: they were committed before the call). Never raises: a failure is one log line and the marks stay for
    the next upload or the next start; reads stay right meanwhile, from the samples."""
    if not _WAITING.acquire(blocking=False):
        return
    try:
        with _ONE_AT_A_TIME:
            _WAITING.release()
            _run(engine)
    except Exception as exc:  # noqa: BLE001 - see above
        print(
            f"mpsbench: the derived summaries were not caught up ({type(exc).__name__}: {exc}); reads stay "
            "right, from the samples",
            file=sys.stderr,
            flush=True,
        )
