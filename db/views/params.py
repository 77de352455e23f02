"""A view's query parameters, read the same way for a page (its widgets' values) and its JSON twin (the URL):
unknown names and values outside a fixed set are a 400 naming the parameter and the rule."""
from __future__ import annotations

from typing import Iterable, Mapping

from db.errors import Problem, StoreError

Params = Mapping[str, str | None]


def only(params: Params, allowed: Iterable[str]) -> dict[str, str]:
    """The parameters as plain strings (missing and None as ""), refusing a name the view does not take."""
    allowed = tuple(allowed)
    unknown = [k for k in params if k not in allowed]
    if unknown:
        raise StoreError(400, f"{unknown[0][:60]}: unknown parameter",
                         [Problem(unknown[0][:60], f"allowed: {', '.join(allowed)}")])
    return {name: (params.get(name) or "").strip() for name in allowed}


def one_of(name: str, value: str, allowed: Iterable[str]) -> str:
    allowed = tuple(allowed)
    if value not in allowed:
        raise StoreError(400, f"{name}: must be one of {', '.join(allowed)} (got {value[:40]!r})",
                         [Problem(name, f"must be one of {', '.join(allowed)}")])
    return value
