"""`mpsbench confirm`'s journal (<out>/confirm-<id>.confirm.jsonl): the header (the options, the targets, this
machine's scope) and one record per run, appended and fsynced (collector.journal.lines); read back on `--resume` by the collector's one
journal reader, each record checked against what a resume reads of it (collector.journal.read)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collector.journal.lines import append_line

SUFFIX = ".confirm.jsonl"


class ConfirmError(Exception):
    """Bad arguments or a build that does not belong to its side: printed as ERROR, exit 1."""


@dataclass
class Journal:
    path: Path
    header: dict[str, Any] = field(default_factory=dict)
    runs: list[dict[str, Any]] = field(default_factory=list)  # {"round", "side", "bundle", "run_id"}

    def append(self, record: dict[str, Any]) -> None:
        append_line(self.path, record, compact=False)

    @classmethod
    def load(cls, path: Path) -> "Journal":
        """The journal read back by the collector's one journal reader: a last line torn by a kill is dropped
        and cut off (appends continue on a clean line); an unreadable or damaged file, or one whose records are
        not a confirm journal's, is a ConfirmError naming the line and the field."""
        from collector.errors import CollectorError
        from collector.journal.read import read_journal

        try:
            lines = read_journal(path, "confirm journal", "confirm", _kinds())
        except CollectorError as exc:
            raise ConfirmError(f"--resume: {exc}") from None
        return cls(path, lines[0], [r for r in lines[1:] if r.get("type") == "run"])


def _kinds() -> dict:
    """What a resume reads of each record: the header's options (_main, _Side.run), targets and scope; each run."""
    from collector.journal.read import TEXT, WHOLE, list_of, obj, one_of, optional

    return {
        "confirm": {
            "options": obj(
                baseline=TEXT,
                candidate=TEXT,
                baseline_python=TEXT,
                candidate_python=TEXT,
                out=TEXT,
                rounds=WHOLE,
                device=TEXT,
                **{k: optional(TEXT) for k in ("scope", "threshold", "rules", "machine_name", "url")},
                processes=optional(WHOLE),
            ),
            "targets": list_of(TEXT),
            "scope": optional(TEXT),
        },
        "run": {"round": WHOLE, "side": one_of("baseline", "candidate"), "bundle": TEXT, "run_id": TEXT},
    }
