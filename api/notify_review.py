"""Which review the upload notifications watch, and what they say of it: the server's settings
(MPSBENCH_NOTIFY_URL, MPSBENCH_NOTIFY_REVIEW, MPSBENCH_PUBLIC_URL), the review named there or else the default
release comparison (resolved at each check, as builds arrive), its regressions as one line each keyed by
NOTE_KEY, and the link to its Regressions page. api/notify.py queues, judges and posts."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit

from sqlalchemy import Engine

from db.errors import StoreError
from db.views.actions.triage import NOTE_KEY
from db.views.inputs import COMPARE_FILTERS
from db.views.release.regressions import regression_list
from db.views.release.review import Review, review_of

URL_VAR, REVIEW_VAR, PUBLIC_VAR = "MPSBENCH_NOTIFY_URL", "MPSBENCH_NOTIFY_REVIEW", "MPSBENCH_PUBLIC_URL"
REVIEW_KEYS = ("baseline", "candidate", "scope", "threshold", "rules", "pool") + tuple(COMPARE_FILTERS)


@dataclass(frozen=True)
class Settings:
    url: str  # the webhook
    review: str  # MPSBENCH_NOTIFY_REVIEW as written; "" = the default release comparison
    public_url: str  # the dashboard's base address ("" = the link is the page's path only)

    @classmethod
    def from_env(cls) -> "Settings | None":
        url = os.environ.get(URL_VAR, "").strip()
        if not url:
            return None
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
            raise ValueError(f"{URL_VAR}: must be an http(s) URL, not {url[:80]!r}")
        review = os.environ.get(REVIEW_VAR, "").strip()
        if review:
            named_review(review)  # a bad review is named now, not at the first post
        return cls(url, review, os.environ.get(PUBLIC_VAR, "").strip().rstrip("/"))


def named_review(text: str) -> Review:
    """MPSBENCH_NOTIFY_REVIEW's review; a bad one is a ValueError naming the variable and the parameter."""
    params = dict(parse_qsl(text, keep_blank_values=True))
    unknown = [k for k in params if k not in REVIEW_KEYS]
    if unknown or not params.get("baseline") or not params.get("candidate"):
        what = f"unknown parameter {unknown[0]!r}" if unknown else "baseline and candidate are required"
        raise ValueError(f"{REVIEW_VAR}: {what} (write it as baseline=…&candidate=…[&scope=chip&threshold=5])")
    try:
        return review_of({"scope": "chip", **params})
    except StoreError as exc:
        raise ValueError(f"{REVIEW_VAR}: {exc}") from None


def release_review(engine: Engine, settings: Settings) -> Review | None:
    """The review notified about, resolved now (the default sides move as builds arrive); None: nothing to compare."""
    if settings.review:
        return named_review(settings.review)
    from db.views.release.verdict_cards import release_sides

    sides = release_sides(engine)
    return review_of({"baseline": sides[0], "candidate": sides[1], "scope": "chip"}) if sides else None


def regression_lines(engine: Engine, review: Review | None) -> dict[str, str]:
    """The review's regressions: key (NOTE_KEY as JSON) → one line for the post, worst first."""
    if review is None:
        return {}
    found = regression_list(engine, review)
    return {
        json.dumps([str(r[k]) for k in NOTE_KEY]): f"{r['case']} · {r['scope']} · {r['metric']}: {r['change']}"
        for _, r in found.iterrows()
    }


def review_link(settings: Settings, review: Review) -> str:
    """The Regressions page of `review` (base MPSBENCH_PUBLIC_URL; unset: the path alone)."""
    return f"{settings.public_url}/regressions?{urlencode(review.params())}"
