"""Capture the Python warnings of one case, deduplicated.

With warn-always on (so TORCH_WARN_ONCE fires in every case), a CPU-fallback op warns on every call: a timing
pass can emit thousands. Keeping one WarningMessage per distinct (category, text), with a count, keeps memory
flat where warnings.catch_warnings(record=True) would keep them all.
"""

from __future__ import annotations

import warnings
from typing import Any


class CaseWarnings:
    def __init__(self) -> None:
        self.seen: dict[tuple[type, str], warnings.WarningMessage] = {}
        self.counts: dict[tuple[type, str], int] = {}
        self._outer: warnings.catch_warnings | None = None

    def _show(
        self, message: Any, category: type, filename: str, lineno: int, file: Any = None, line: str | None = None
    ) -> None:
        key = (category, str(message))
        if key not in self.seen:
            self.seen[key] = warnings.WarningMessage(message, category, filename, lineno, file, line)
        self.counts[key] = self.counts.get(key, 0) + 1

    def __enter__(self) -> "CaseWarnings":
        self._outer = warnings.catch_warnings()
        self._outer.__enter__()
        warnings.simplefilter("always")
        warnings.showwarning = self._show
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._outer is not None
        self._outer.__exit__(*exc)

    @property
    def messages(self) -> list[warnings.WarningMessage]:
        return list(self.seen.values())
