"""Triage notes on regressions (review_notes): validated, append-only; the latest note per regression wins."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timezone

import pandas as pd
from sqlalchemy import Engine
from sqlmodel import Session

from db.errors import Problem, StoreError
from db.store.read import read_frame
from db.store.tables import ReviewNote

STATES = ("new", "confirmed", "expected", "fixed", "noise")
NOTE_KEY = ["workload", "case_key", "dtype", "compile", "metric", "scope"]
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
    return read_frame(
        engine,
        f"""SELECT {", ".join(NOTE_KEY)}, state, comment, author, link, created_at FROM review_notes
        WHERE baseline = ? AND candidate = ?
        QUALIFY row_number() OVER (PARTITION BY {", ".join(NOTE_KEY)} ORDER BY created_at DESC, note_id DESC) = 1""",
        [baseline, candidate],
    )
