"""Triage notes on regressions (review_notes): validated, append-only; the latest note per regression wins.

A note is saved with the scope it was made in (a machine, or a chip in chip scope), but a regression has one state
whatever the scope shown: a note is the chip's (a machine's note is its chip's), so triage on the Regressions page
(machine scope) is the state the Overview and Compare (chip scope) show, and the other way round. States in
TRIAGED_AWAY take a regression out of every count (db.review.release.answer)."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timezone

import pandas as pd
from sqlalchemy import Engine
from sqlmodel import Session

from db.errors import Problem, StoreError
from db.query.compare.pivot import CHIP_SCOPE
from db.query.read import read_frame
from db.store.tables import ReviewNote

STATES = ("new", "confirmed", "expected", "accepted", "fixed", "noise")
TRIAGED_AWAY = ("noise", "expected", "accepted")  # not a regression to act on: counted apart, as triaged
NOTE_KEY = ["workload", "case_key", "dtype", "compile", "metric", "scope"]
STATE_KEY = ["chip_scope", "workload", "case_key", "dtype", "compile", "metric"]  # one state per (chip, case, metric)
_LINK = re.compile(r"^https?://[^\s<>\"']{1,2000}$")


def _check(state: str, author: str, link: str, comment: str) -> None:
    problems = []
    if state not in STATES:
        problems.append(Problem("state", f"must be one of {', '.join(STATES)}"))
    if not author.strip() or len(author) > 200:
        problems.append(Problem("author", "must be a non-empty name of at most 200 characters"))
    if link and not _LINK.match(link):
        problems.append(Problem("link", "must be empty or an http(s):// URL without spaces"))
    if len(comment) > 10_000:
        problems.append(Problem("comment", "must be at most 10,000 characters"))
    if problems:
        raise StoreError(422, "the triage note is not valid", problems)


def save_note(
    engine: Engine, baseline: str, candidate: str, key: dict, state: str, author: str, comment: str = "", link: str = ""
) -> str:
    """Store one note for the regression `key` (NOTE_KEY fields); nothing is stored when a field is invalid."""
    _check(state, author, link.strip(), comment)
    note = ReviewNote(
        note_id=uuid.uuid4().hex,
        baseline=baseline,
        candidate=candidate,
        state=state,
        author=author.strip(),
        comment=comment,
        link=link.strip(),
        created_at=datetime.now(timezone.utc),
        **{k: str(key[k]) for k in NOTE_KEY},
    )
    note_id = note.note_id
    from db.store.engine import WRITE_LOCK  # the store's one shared connection: writers take turns (as ingest does)

    with WRITE_LOCK, Session(engine) as session:
        session.add(note)
        session.commit()
    return note_id


def latest_notes(engine: Engine, baseline: str, candidate: str) -> pd.DataFrame:
    """The latest note per STATE_KEY of this review's builds: `chip_scope` is the note's chip (chip_scopes)."""
    found = read_frame(
        engine,
        f"""SELECT {", ".join(NOTE_KEY)}, state, comment, author, link, created_at FROM review_notes
        WHERE baseline = ? AND candidate = ? ORDER BY created_at DESC, note_id DESC""",
        [baseline, candidate],
    )
    found["chip_scope"] = chip_scopes(engine, found["scope"])
    return found.drop_duplicates(STATE_KEY).reset_index(drop=True)  # newest first: the first of each is the latest


_CHIPS = f"SELECT DISTINCT ru.machine_name, {CHIP_SCOPE} AS chip FROM runs ru"


def chip_scopes(engine: Engine, scopes: pd.Series) -> list[str]:
    """Each scope as its chip scope: a machine's name becomes its chip's (as chip-scope Compare names it); a chip
    scope, or a name no run has, stays as it is."""
    if scopes.empty:
        return []
    chips = dict(read_frame(engine, _CHIPS).itertuples(index=False, name=None))
    return [chips.get(s, s) for s in scopes]


def note_states(engine: Engine, baseline: str, candidate: str, rows: pd.DataFrame) -> pd.DataFrame:
    """Per row of `rows` (NOTE_KEY columns; a case's correctness figures under metric "correctness"), on its index:
    its latest note's state ("new" where none), comment, author, link and time."""
    notes = latest_notes(engine, baseline, candidate)
    keyed = rows[NOTE_KEY].assign(chip_scope=chip_scopes(engine, rows["scope"]) if len(rows) else [])
    merged = keyed.merge(notes.drop(columns=["scope"]), how="left", on=STATE_KEY)
    merged.index = rows.index
    merged["state"] = merged["state"].fillna("new")
    for col in ("comment", "author", "link"):
        merged[col] = merged[col].fillna("")
    return merged[["state", "comment", "author", "link", "created_at"]]
