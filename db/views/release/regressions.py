"""The Regressions page's adapter: one judged review (db.review) listed for triage — its regressions worst first,
its doubtful cases apart, its verdict cards — or why nothing was compared. GET /api/v1/regressions answers the
same review (db.review.release.summary.review_answer)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pandas as pd
from sqlalchemy import Engine

from db.query.json_values import records
from db.review.release.listing import doubtful, regressions
from db.review.release.status_changes import status_changes
from db.review.release.summary import review_answer
from db.review.review import Review, cached_review
from db.review.rules import SUSPECTED, UNCONFIRMED_STATE
from db.store.writers.triage import STATES, TRIAGED_AWAY
from db.views.empty_reason import empty_reason
from db.views.release.verdict_cards import Cards, verdict_cards


@dataclass(frozen=True)
class RegressionsView:
    review: Review
    empty: str | None  # why nothing was compared (never "0 regressions" over nothing)
    found: pd.DataFrame  # the regressions, worst first, with their triage notes
    unconfirmed: pd.DataFrame  # worse beyond the bound, nothing to test on
    suspected: pd.DataFrame  # their own test says worse, the review's family-wise step does not
    cards: Cards | None
    changes: list[dict] = field(default_factory=list)  # status changes, one per case (for the export)

    @property
    def doubts(self) -> pd.DataFrame:
        """The unconfirmed and suspected cases in one list, worst first (the exports carry them)."""
        both = pd.concat([self.unconfirmed, self.suspected], ignore_index=True)
        return both.sort_values("worse_by", ascending=False, kind="stable", na_position="last") if len(both) else both


def regressions_view(engine: Engine, review: Review) -> RegressionsView:
    """Not memoised as a whole: the judged review under it is, and triage notes show as soon as they are saved."""
    judged = cached_review(engine, review)
    why = empty_reason(judged.comparison)
    found = regressions(engine, judged)
    if why:
        return RegressionsView(review, why, found, found.iloc[:0], found.iloc[:0], None)
    doubts = doubtful(engine, judged)
    result = judged.comparison
    return RegressionsView(
        review,
        None,
        found,
        doubts[doubts.verdict == UNCONFIRMED_STATE],
        doubts[doubts.verdict == SUSPECTED],
        verdict_cards(engine, judged, found, doubts),
        records(status_changes(result.cases, result.unmatched)),
    )


def regressions_answer(engine: Engine, review: Review, rows: Callable[[pd.DataFrame], Any]) -> dict[str, Any]:
    """GET /api/v1/regressions' answer: the review's summary, regressions and doubtful cases, each table as `rows`
    makes it (db.review.release.summary.review_answer)."""
    return review_answer(engine, review, rows)


def regression_list(engine: Engine, review: Review) -> pd.DataFrame:
    """The review's regressions, worst first (the notifications' list)."""
    return regressions(engine, review)


# what the triage form says a state does (db.store.triage.TRIAGED_AWAY; db.review.release.answer counts by it)
TRIAGE_RULE = (
    f"A state of {', '.join(TRIAGED_AWAY[:-1])} or {TRIAGED_AWAY[-1]} takes the regression out of the counts (the "
    "cards, Overview, the exports and the gate list it as triaged, with who and why); "
    f"{', '.join(s for s in STATES if s not in TRIAGED_AWAY)} keep it counted. One state per case and chip, "
    "whatever the scope shown."
)


def saved_triage(row) -> str:
    """A listed regression's saved triage in words: "Saved: noise, by alice — “flaky runner” (https://…)", or that
    none is (its state is then "new")."""
    if not row["author"]:
        return "Saved: nothing yet (state new)."
    comment = f" — “{row['comment']}”" if row["comment"] else ""
    link = f" ({row['link']})" if row["link"] else ""
    return f"Saved: {row['state']}, by {row['author']}{comment}{link}."
