"""A review: one comparison (baseline → candidate) judged by its metrics' rules, the threshold and the overrides.

`Review` is the question, read one way from a page's widgets, GET /api/v1/regressions and `mpsbench compare`
(bad input is a 400 naming the parameter). `cached_review` is the answer every verdict reads — Compare's rows and
chart, Regressions, the release summary and its cards, the Markdown export, the CLI gate, `mpsbench confirm` —
judged once per review and store data version (db.review.cache)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, TypeVar

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from bundle.metrics import MetricError, Rule, parse_rules
from db.errors import Problem, StoreError
from db.query.params import threshold_percent
from db.review.cache import Memo
from db.review.comparison import CompareQuery, ComparisonResult, compare
from db.review.families import judged_counts
from db.review.rules import case_verdicts
from db.stats.ratios import as_fraction, as_percent

T = TypeVar("T")
DEFAULT_THRESHOLD = 0.05  # a replicated figure regresses when worse by more than this fraction (and significant)


@dataclass(frozen=True)
class Review:
    """A regression review: the comparison, the threshold (percent worse) and the rule overrides as written."""

    compare: CompareQuery
    threshold: float = as_percent(DEFAULT_THRESHOLD)  # percent, as typed and answered; `fraction` inside
    rules_text: str = ""

    @classmethod
    def from_params(cls, params: Mapping[str, str | None]) -> "Review":
        """From query parameters (threshold in percent, rules=metric.field=value,…); bad input is a 400 naming
        the parameter."""
        threshold = threshold_percent(params.get("threshold"), as_percent(DEFAULT_THRESHOLD))
        text = (params.get("rules") or "").strip()
        check_rules(text)
        return cls(CompareQuery.from_params(params), threshold, text)

    @classmethod
    def of(cls, question: "CompareQuery | Review", threshold: float | None = None) -> "Review":
        """A review of `question`; a bare comparison takes `threshold` (a fraction) or the default."""
        if isinstance(question, Review):
            return question
        return cls(question, as_percent(DEFAULT_THRESHOLD if threshold is None else threshold))

    @property
    def fraction(self) -> float:
        """The threshold as a fraction (0.05), as the rules read it."""
        return as_fraction(self.threshold)

    @property
    def rules(self) -> dict[str, Rule]:
        return parse_rules(self.rules_text)

    def params(self) -> dict[str, str]:
        """The review as URL parameters (what `--url` sends and a page link carries)."""
        q = self.compare
        out = {
            "baseline": q.baseline,
            "candidate": q.candidate,
            "scope": q.scope,
            "threshold": f"{self.threshold:g}",
            **{k: ",".join(v) for k, v in q.filters},
        }
        if q.pool:
            out["pool"] = "1"
        if self.rules_text:
            out["rules"] = self.rules_text
        return out


def check_rules(text: str) -> None:
    try:
        parse_rules(text)
    except MetricError as exc:
        raise StoreError(400, "rules: not a valid override", [Problem("rules", str(exc))]) from None


@dataclass(frozen=True)
class JudgedReview:
    """A review's answer: its comparison and each compared case's verdict under its rules (db.review.rules.case_verdicts:
    regressed, why, worse_by, bound, rule, verdict), `verdicts` on the same index as `comparison.cases`.
    Read-only: shared by every caller asking the same review of the same data."""

    review: Review
    comparison: ComparisonResult
    verdicts: pd.DataFrame
    # what views derive from this answer (Compare's rows), each computed once: it lives as long as
    # the answer, i.e. until the next upload or retraction (db.review.cache)
    _derived: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def of(cls, comparison: ComparisonResult, review: Review | None = None) -> "JudgedReview":
        """`comparison` judged under `review` (default: the default threshold and rules). Pure: no store."""
        review = review or Review(comparison.query)
        return cls(review, comparison, case_verdicts(comparison.cases, review.fraction, review.rules))

    @property
    def cases(self) -> pd.DataFrame:
        return self.comparison.cases

    @property
    def directions(self) -> np.ndarray:
        """Each case's direction (db.review.rules.directions: against its bound, or by its own rule), judged with
        its verdict: the summary's counts, the cards and Compare's rows read the same array."""
        return self.verdicts.direction.to_numpy()

    @property
    def families(self) -> pd.DataFrame:
        """The comparison's family geomeans, their better / worse / unchanged cases counted from `directions`."""
        return self.once("families", lambda: judged_counts(self.comparison.families, self.cases, self.directions))

    def once(self, name: str, compute: Callable[[], T]) -> T:
        """compute(), the first time `name` is asked of this answer; the same object after (treat as read-only)."""
        if name not in self._derived:
            self._derived[name] = compute()  # two threads may both compute it: the same answer either way
        return self._derived[name]


_JUDGED = Memo()


def cached_review(
    engine: Engine, question: "Review | CompareQuery | JudgedReview", threshold: float | None = None
) -> JudgedReview:
    """The review judged, once per review and data version; a JudgedReview is returned as it is."""
    if isinstance(question, JudgedReview):
        return question
    review = Review.of(question, threshold)

    return _JUDGED.get(engine, review, lambda: JudgedReview.of(compare(engine, review.compare), review))
