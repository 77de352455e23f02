"""The one journal writer: a JSON record appended as one line, flushed and fsynced at once, so Ctrl-C or a kill
loses at most the line being written (collector.journal.read drops a torn last line). The run's journal, the
sweep's, confirm's and bisect's all append through it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def append_line(path: Path, record: dict[str, Any], *, compact: bool = True) -> None:
    """Append `record` to the journal at `path`. compact: no spaces and UTF-8 as is (the run's, the sweep's and
    bisect's journals); False: json.dumps' defaults, the form confirm's journals have always had."""
    line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) if compact else json.dumps(record)) + "\n"
    with path.open("a", encoding="utf-8") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())
