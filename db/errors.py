"""The one error type of the store boundary. Raised deep; the API turns it into its JSON error shape once,
the CLI into "ERROR: …" + exit 1, a page into st.error."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    field: str  # dotted path into the input, e.g. "results[3].unit" or a query parameter name
    rule: str  # the rule broken, e.g. "unit must be a time unit for metric op_time"


@dataclass
class StoreError(Exception):
    status: int  # the HTTP status the API answers with (400, 401, 409, 413, 415, 422, 404)
    message: str
    problems: list[Problem] = field(default_factory=list)

    def __str__(self) -> str:
        # a problem the message already says ("chart_cases: a whole number from 5 to 500 (got 'abc')") is not
        # said a second time in brackets
        details = "; ".join(f"{p.field}: {p.rule}" for p in self.problems[:5] if p.rule not in self.message)
        return f"{self.message} ({details})" if details else self.message
