"""The search `mpsbench bisect` runs (mpsbench/workflows/bisect.py collects each step).

Builds in order, the first known good and the last known bad. Each step probes the midpoint of the interval that
is still open; its verdict comes from two reviews of the step's runs, the review's own test deciding
(db.review.decisions.step_verdict): bad, good or unclear. An unclear midpoint (still unclear after the most rounds)
stops the search there, which says so, never guessing a side."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from db.review.decisions import BAD, GOOD, UNCLEAR


@dataclass
class Search:
    builds: list[str]  # labels (or specs), oldest first: builds[0] good, builds[-1] bad
    verdicts: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.builds) < 2:
            raise ValueError("a bisection needs a good and a bad build")

    def bounds(self) -> tuple[int, int]:
        """(last known good, first known bad) indices."""
        good = [i for i, v in self.verdicts.items() if v == GOOD]
        bad = [i for i, v in self.verdicts.items() if v == BAD]
        lo = max([0, *good])
        return lo, min([len(self.builds) - 1, *(i for i in bad if i > lo)])

    def next_probe(self) -> int | None:
        """The build to probe next; None when the interval is closed or its midpoint was unclear."""
        lo, hi = self.bounds()
        if hi - lo <= 1:
            return None
        mid = (lo + hi) // 2
        return None if self.verdicts.get(mid) == UNCLEAR else mid

    def record(self, index: int, verdict: str) -> None:
        if verdict not in (GOOD, BAD, UNCLEAR):
            raise ValueError(f"verdict {verdict!r}: must be good, bad or unclear")
        self.verdicts[index] = verdict

    def steps_left(self) -> int:
        """Steps still needed at most if every step decides (⌈log2(open builds + 1)⌉)."""
        lo, hi = self.bounds()
        return 0 if hi - lo <= 1 or self.next_probe() is None else math.ceil(math.log2(hi - lo))

    def answer(self) -> str:
        lo, hi = self.bounds()
        if hi - lo <= 1:
            return f"first bad: {self.builds[hi]}; last good: {self.builds[lo]}"
        unclear = [self.builds[i] for i, v in sorted(self.verdicts.items()) if v == UNCLEAR]
        return (
            f"not found: the first bad build is after {self.builds[lo]} and at or before {self.builds[hi]}; "
            f"unclear: {', '.join(unclear) or 'none'} (more rounds, or a larger slowdown, would decide)"
        )
