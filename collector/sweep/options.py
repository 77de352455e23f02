"""A sweep's options, recorded in its journal header so `sweep --resume` runs exactly as the sweep began: the
plan every slot's `collector run` gets, the builds, rounds, A/A, environments folder and --push URL.

A resume uses the journal's options. An option given again on resume with another value than the journal's is
refused (an ERROR naming it) rather than silently ignored or mixed into half a sweep; one left at its default
is taken as not given. The exception is --push on a sweep that had none: it is adopted (and journaled), so the
resume delivers every finished run too.
"""

from __future__ import annotations

import argparse
from typing import Any

from collector.console.arguments import parser  # the CLI's own defaults: no second copy of them here
from collector.errors import CollectorError
from collector.push.pusher import endpoint

PLAN = (
    "workload",
    "suite",
    "profile",
    "dtype",
    "compile",
    "device",
    "tag",
    "machine_name",
    "case_time_limit",
    "processes",
    "case",
    "idle_wait",
    "kernels",
)  # what each slot's `collector run` gets


def recorded(args: argparse.Namespace) -> dict[str, Any]:
    """The header's `options` for a new sweep (None: each run's default)."""
    out = {name: list(v) if isinstance(v := getattr(args, name), list) else v for name in PLAN}
    out["push"] = args.push
    return out


def run_args(options: dict) -> list[str]:
    """The plan options every slot's `collector run` gets (from the journal header, so a resume runs the same)."""
    out = ["--profile", options["profile"], "--device", options["device"], "--compile", options["compile"]]
    for name in ("workload", "suite", "tag", "case"):
        for value in options.get(name, ()):
            out += [f"--{name}", value]
    for name in ("dtype", "machine_name", "case_time_limit", "processes", "idle_wait"):
        if options.get(name) is not None:
            out += [f"--{name.replace('_', '-')}", str(options[name])]
    if options.get("kernels"):  # a journal from before the kernel pass: none
        out.append("--kernels")
    return out


def _defaults() -> dict[str, Any]:
    return vars(parser().parse_args(["sweep"]))


def _show(value: Any) -> str:
    if isinstance(value, list):
        return repr(" ".join(str(v) for v in value)) if value else "none"
    return "none" if value is None else repr(str(value))


def resume_push(args: argparse.Namespace, header: dict[str, Any]) -> str | None:
    """Check the options given with --resume against the journal's; the --push URL the resume delivers to
    (the journal's, or one given now for a sweep that had none). A conflict is a CollectorError naming it."""
    defaults, options = _defaults(), header.get("options", {})
    journal = {
        **{name: options.get(name) for name in PLAN},
        "build": header.get("builds"),
        "rounds": header.get("rounds"),
        "aa": header.get("aa"),
        "envs": header.get("envs"),
    }
    for name, was in journal.items():
        given = getattr(args, name, None)
        if given == defaults.get(name) or given == was or (name == "envs" and str(given) == str(was)):
            continue
        raise CollectorError(
            f"--{name.replace('_', '-')} {_show(given)}: sweep {header.get('sweep_id')} was started "
            f"with {_show(was)}; --resume runs with the sweep journal's options (leave it out, or "
            "give the same)"
        )
    was = options.get("push")
    if args.push and was and endpoint(args.push) != endpoint(was):
        raise CollectorError(
            f"--push {args.push!r}: sweep {header.get('sweep_id')} delivers to {was!r} (its journal's "
            "--push); --resume delivers there too (leave --push out, or give the same URL)"
        )
    return was or args.push
