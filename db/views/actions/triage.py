"""Triage of a regression: a note (state, comment, link) saved under the signed-in name (db.store.writers.triage)."""

from __future__ import annotations

from sqlalchemy import Engine

from db.store.writers import triage

STATES = triage.STATES  # a note's states, in the order the form offers them
NOTE_KEY = triage.NOTE_KEY  # the fields that name one regression


def save_note(
    engine: Engine, baseline: str, candidate: str, key: dict, state: str, author: str, comment: str, link: str
) -> str:
    """Store one note for the regression `key` (NOTE_KEY fields) of the review; a field that is not valid is a
    StoreError 422 and nothing is stored."""
    return triage.save_note(engine, baseline, candidate, key, state, author, comment, link)
