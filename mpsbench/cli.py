"""`mpsbench COMMAND …`: dispatches to the layer that owns the command, importing only that layer (a Mac that
only collects never imports the store or the web)."""

from __future__ import annotations

import sys

from mpsbench import serve

COLLECTOR = {
    "run": "run workloads and write a bundle",
    "list": "workloads, cases and metrics with units",
    "show": "a bundle as a table",
    "sweep": "run the plan under several torch builds, interleaved in rounds",
    "push": "send bundles to a team server (or its outbox)",
}
STORE = {
    "ingest": "store bundles (or PyTorch OSS benchmark records) in the local DuckDB file",
    "export": "stored runs as PyTorch OSS benchmark records (--format pytorch-oss), a file per run",
    "compare": "baseline → candidate review (summary, regressions); --fail-on gates CI with exit 1",
    "info": "the store's path, version and row counts",
    "retract": "take a run out of every comparison, with a reason (local store, or --url server)",
    "backup": "export the store to a new folder (Parquet)",
    "restore": "import a backup into a new store",
    "migrate-store": "copy the store file into a new DuckLake (--to ducklake:postgres:…)",
}
WEB = {"serve": serve.DESCRIPTION}
BOTH = {
    "confirm": "rerun a review's suspected and unconfirmed cases here, both builds interleaved, until decided",
    "bisect": "find the first bad build between a good and a bad one (nightlies, releases or your envs)",
}


def usage() -> str:
    rows = [f"  {name:<13} {text}" for group in (COLLECTOR, STORE, BOTH, WEB) for name, text in group.items()]
    return "usage: mpsbench COMMAND [options]   (mpsbench COMMAND --help for each)\n\ncommands:\n" + "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args else ""
    if command in COLLECTOR:
        from collector.cli.main import main as collector_main

        return collector_main(args)
    if command in STORE:
        from db.cli import main as store_main

        return store_main(args)
    if command in WEB:
        return serve.main(args[1:])
    if command in BOTH:  # collects with the collector, judges with the store's review
        if command == "bisect":
            from mpsbench.workflows.bisect import main as bisect_main

            return bisect_main(args[1:])
        from mpsbench.workflows.confirm import main as confirm_main

        return confirm_main(args[1:])
    print(usage(), file=sys.stderr if command not in ("-h", "--help") else sys.stdout)
    return 0 if command in ("-h", "--help") else 2
