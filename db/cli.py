"""`mpsbench ingest PATH...` (a bundle file, a file of PyTorch OSS benchmark records, or a folder: every *.json
under it, as `mpsbench sweep` and `mpsbench export` write them), `export --format pytorch-oss`, `info`,
`retract RUN_ID --reason TEXT [--url URL]`, `backup DIR`, `restore DIR`, `migrate-store --to LAKE` (also
`python -m db …`).
Every failure is "ERROR: …" and exit 1, no traceback."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import duckdb
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from bundle.pytorch_oss.metrics import MetricMap
from db.errors import StoreError
from db.ingest.core import ingest_bundle
from db.ingest.records import records_bundle
from db.store.engine import reading, store_path, writing
from db.store.faults import as_store_error
from db.store.lake import shown

USAGE_INGEST = "mpsbench ingest PATH... [--metric NAME=metric:unit]..."
USAGE = (
    f"usage: {USAGE_INGEST} | mpsbench export --format pytorch-oss --out DIR --select SEL… | "
    "mpsbench info | mpsbench compare --baseline SEL --candidate SEL "
    "[--fail-on regression|untriaged] … | mpsbench retract RUN_ID --reason TEXT [--url URL] |"
    " mpsbench backup DIR | mpsbench restore DIR | mpsbench migrate-store --to ducklake:postgres:<libpq>"
)


def cli_identity() -> str:
    """Who writes through the CLI: the owner of the process (whoever may write the store file), as cli:<user>."""
    import getpass

    try:
        return f"cli:{getpass.getuser()}"
    except (OSError, KeyError):  # no login name (a bare container): still marked as a CLI write
        return "cli:unknown"


def _ingest_one(engine, name: str, given: MetricMap) -> int:
    skipped: list[str] = []
    try:
        path = Path(name)
        modified = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
        converted = records_bundle(path, name, modified, given)  # streamed: a large record file is never held
        if converted is not None:  # PyTorch OSS benchmark records: a run per file
            raw, n_skipped, skipped = converted
        else:
            raw, n_skipped = path.read_bytes(), 0
        out = ingest_bundle(engine, raw, cli_identity())
    except OSError as err:  # missing file, a directory, no permission: say which and go on with the rest
        print(f"{name}: ERROR: cannot read the file: {err.strerror or err}")
        return 1
    except Exception as exc:  # a refusal, or a store fault (memory, temp space, disk): one ERROR
        err = exc if isinstance(exc, StoreError) else as_store_error(exc)
        if err is None:
            raise
        print(f"{name}: ERROR: {err.message}")
        for p in err.problems:
            print(f"  {p.field}: {p.rule}")
        return 1
    print(
        f"{name}: {out.run_id} {'new' if out.created else 'already present'}, {out.n_results} results"
        + (f" (PyTorch OSS records; {n_skipped} not stored)" if n_skipped else "")
    )
    for why in skipped:
        print(f"  {why}")
    return 0


def _bundles(name: str) -> list[str]:
    """A folder stands for every bundle under it (a sweep writes one folder per build and round; journals are
    *.jsonl), in path order; anything else is read as one bundle file."""
    path = Path(name)
    return sorted(str(p) for p in path.rglob("*.json") if p.is_file()) if path.is_dir() else [name]


def _ingest_arguments(args: list[str]) -> tuple[list[str], dict[str, tuple[str, str]]]:
    """The paths, and each `--metric NAME=metric:unit` checked against the metric and units registries (before a
    store is opened: a bad option makes nothing)."""
    from bundle.metrics import MetricError
    from bundle.pytorch_oss.metrics import parse_metric_option
    from db.errors import Problem

    paths, given, rest = [], {}, list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--metric" or arg.startswith("--metric="):
            text = arg.partition("=")[2] if "=" in arg[:9] else (rest.pop(0) if rest else "")
            try:
                name, metric, unit = parse_metric_option(text)
            except MetricError as exc:
                raise StoreError(400, f"--metric {text!r}: {exc}", [Problem("--metric", "NAME=metric:unit")]) from None
            if given.get(name, (metric, unit)) != (metric, unit):
                rule = f"{name!r} is given twice, as {':'.join(given[name])} and {metric}:{unit}"
                raise StoreError(400, f"--metric {text!r}: {rule}", [Problem("--metric", "one meaning a name")])
            given[name] = (metric, unit)
        elif arg.startswith("--"):
            raise StoreError(400, f"{arg}: not an option of mpsbench ingest", [Problem("arguments", USAGE_INGEST)])
        else:
            paths.append(arg)
    if not paths:
        raise StoreError(400, "no PATH to ingest", [Problem("arguments", USAGE_INGEST)])
    return paths, given


def _ingest(args: list[str]) -> int:
    paths, given = _ingest_arguments(args)
    failed = []
    with writing() as engine:
        for name in paths:
            files = _bundles(name)
            if not files:
                print(f"{name}: ERROR: no bundle (*.json) in this folder")
                failed.append(1)
            failed += [_ingest_one(engine, f, given) for f in files]
        _catch_up(engine)
    return 1 if any(failed) else 0


def _catch_up(engine) -> None:
    """The stored runs' derived summaries, before the command exits (db.store.writers.upkeep; the server does it after
    each upload). Reads are right without it (from the samples), only slower."""
    from db.store.writers.upkeep import catch_up

    done = catch_up(engine)
    if done.seconds >= 1.0:  # said when it made the command wait
        print(
            f"summaries: {done.side_groups} run group(s), {done.aa_groups} A/A group(s) brought up to date "
            f"in {done.seconds:.1f} s"
        )


def _export(args: list[str]) -> int:
    import argparse

    from db.errors import Problem
    from db.query.selectors import parse_selector
    from db.views.exports.pytorch_export import export_runs

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str):  # one error shape: "ERROR: …", exit 1
            raise StoreError(400, message, [Problem("arguments", "see mpsbench export --help")])

    p = _Parser(
        prog="mpsbench export",
        description="stored runs as PyTorch OSS benchmark records, one file per "
        "run (<out>/<run_id>.json); `mpsbench ingest` reads them back",
    )
    p.add_argument("--format", required=True, choices=["pytorch-oss"])
    p.add_argument("--out", required=True, type=Path, help="folder for the files (made if absent)")
    p.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="SEL",
        help="runs to export (repeatable): torch=VERSION, build=VERSION@HASH, tag:key=value, runs:id,id",
    )
    p.add_argument("--baseline", help="a review's baseline selector (with --candidate: both sides' runs)")
    p.add_argument("--candidate")
    opts = p.parse_args(args)
    if bool(opts.baseline) != bool(opts.candidate):
        raise StoreError(
            400, "--baseline and --candidate: a review needs both sides", [Problem("baseline", "give both or neither")]
        )
    texts = [("select", t) for t in opts.select] + [
        (k, getattr(opts, k)) for k in ("baseline", "candidate") if getattr(opts, k)
    ]
    if not texts:
        raise StoreError(
            400, "--select or --baseline/--candidate: nothing to export", [Problem("select", "name the runs to export")]
        )
    selectors = [parse_selector(t, field) for field, t in texts]
    with reading() as engine:  # a read: a missing store is an error, never made
        written = export_runs(engine, selectors, opts.out)
    for path, n in written:
        print(f"{path}: {n} records")
    print(f"{len(written)} run(s) exported to {opts.out} (PyTorch OSS benchmark format)")
    return 0


def _info() -> int:
    with reading() as engine, engine.connect() as conn:
        version = conn.execute(text("SELECT value FROM meta WHERE key='store_version'")).scalar()
        print(f"path: {shown(store_path())}\nstore version: {version}")
        for table in ("runs", "run_tags", "results", "review_notes", "aa_pairs"):
            print(f"{table}: {conn.execute(text(f'SELECT count(*) FROM {table}')).scalar()}")
    return 0


def _retract(args: list[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(
        prog="mpsbench retract",
        description="take a run out of every comparison; it stays listed with who, when and why",
    )
    p.add_argument("run_id")
    p.add_argument("--reason", required=True)
    p.add_argument("--url", help="retract on this server (token from MPSBENCH_TOKEN) instead of the local store")
    opts = p.parse_args(args)
    if opts.url:
        from db.remote import retract_remote

        done = retract_remote(opts.url, opts.run_id, opts.reason)
    else:
        from db.store.writers.retract import retract_run

        # the local store file's owner: whoever may write the file may retract (recorded as cli:<user>)
        with writing(must_exist=True) as engine:
            done = retract_run(engine, opts.run_id, opts.reason, cli_identity(), admin=True)
            _catch_up(engine)
    print(f"{done['run_id']}: retracted by {done['retracted_by']} at {done['retracted_at']}: {done['reason']}")
    return 0


def _backup(folder: str) -> int:
    from db.store.writers.backup import backup

    files = backup(store_path(), folder)
    print(f"{shown(store_path())} -> {folder}: {len(files)} files ({', '.join(files)})")
    return 0


def _restore(folder: str) -> int:
    from db.store.writers.backup import restore

    counts = restore(folder, store_path())
    print(f"{folder} -> {shown(store_path())}: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
    return 0


def _migrate_store(target: str) -> int:
    from db.store.writers.copy import copy_store

    counts = copy_store(store_path(), target)
    print(
        f"{store_path()} -> the lake: "
        + ", ".join(f"{t} {n} rows" for t, n in counts.items())
        + " (row counts checked)"
    )
    return 0


def main(args: list[str]) -> int:
    try:
        if args[:1] == ["ingest"] and len(args) > 1:
            return _ingest(args[1:])
        if args[:1] == ["export"]:
            return _export(args[1:])
        if args == ["info"]:
            return _info()
        if args[:1] == ["compare"]:
            from db.compare_command import main as compare_main

            return compare_main(args[1:])
        if args[:1] == ["retract"]:
            return _retract(args[1:])
        if args[:1] in (["backup"], ["restore"]) and len(args) == 2:
            return (_backup if args[0] == "backup" else _restore)(args[1])
        if args[:2] == ["migrate-store", "--to"] and len(args) == 3:
            return _migrate_store(args[2])
    except StoreError as err:  # e.g. a store written by a newer mpsbench
        print(f"ERROR: {err}")
        return 1
    except (duckdb.Error, OSError) as err:  # backup/restore: a folder or file DuckDB cannot write or read
        print(f"ERROR: {err}")
        return 1
    except DBAPIError as err:  # the store file itself: locked by another process, a directory, not DuckDB
        hint = (
            (
                " (a running server holds it: read through the server instead, e.g. mpsbench compare --url "
                "http://127.0.0.1:8501)"
            )
            if "lock" in str(err.orig).lower()
            else ""
        )
        print(f"ERROR: cannot open the store {shown(store_path())}: {err.orig}{hint}")
        return 1
    print(USAGE, file=sys.stderr)
    return 2
