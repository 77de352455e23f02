"""`python -m collector run | list | show | push`. Expected failures are CollectorError: `ERROR: …`, exit 1."""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.markup import escape

from collector.console.arguments import parser
from collector.errors import CollectorError

# Piped into a log (scripts/start.sh), rich would wrap tables at 80 columns; a log reads better wide.
_WIDE = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160
console = Console(highlight=False, width=_WIDE)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        from collector.cli import commands

        return getattr(commands, f"cmd_{args.command}")(args, console)
    except CollectorError as exc:
        console.print(f"[bold red]ERROR:[/] {escape(str(exc))}", soft_wrap=True)
        return 1
    except KeyboardInterrupt:
        return 130
