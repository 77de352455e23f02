"""A push on the CLI's console: the Pusher checked before anything runs, and its answers printed one line each.
Used by `run --push`, `push` and a sweep's delivery (collector.sweep), so it sits below all three."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from collector.push.pusher import Pusher
from collector.push.pusher import token as push_token


def checked_pusher(url: str | None, console: Console) -> Pusher | None:
    """Checked before the run starts: a bad URL should not surface only after an hour of measuring."""
    if not url:
        return None
    pusher = Pusher(url)
    if push_token() is None:
        console.print(
            "[bold yellow]WARNING:[/] MPSBENCH_TOKEN is not set: the push carries no token (only a server "
            "without upload tokens, on this machine, accepts that)"
        )
    return pusher


def report_push(outcomes: list, console: Console) -> int:
    for o in outcomes:
        style = {"sent": "green", "queued": "yellow", "skipped": "yellow", "busy": "red", "rejected": "red"}[o.state]
        console.print(f"[{style}]{o.state}[/] {escape(str(o.path))}: {escape(o.detail)}", soft_wrap=True)
    if not outcomes:
        console.print("nothing to send: the outbox is empty")
    return 0 if all(o.state in ("sent", "skipped") for o in outcomes) else 1
