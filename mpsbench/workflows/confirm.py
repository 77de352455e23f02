"""`mpsbench confirm`: rerun a review's suspected and unconfirmed cases on this machine until each is decided.

Like asv's re-run of a suspected regression: the review (local store, or a server's GET /api/v1/regressions with
--url) names its doubtful cases (db.review.release.listing.doubtful: unconfirmed — nothing to test them on — and
suspected — their own test passed, the review's family-wise step did not). This machine reruns only those cases,
both builds interleaved A B, B A, A B … (each side in its own environment: `--baseline-python` and
`--candidate-python`, a sweep's or any other), each run stored locally (or pushed with --url), and the review is
asked again after every round. A case is *confirmed* when the review now lists it as a regression, *cleared*
when it lists it neither as a regression nor as doubtful; after --rounds rounds the rest stay *undecided*.

The new runs must belong to the review's sides: a `tag:` side gets its tag on the new runs, a `runs:` side gets
the new run ids added; a `torch=` / `build=` side needs the environment's torch to be that build (checked before
anything runs). Everything done is journaled (<out>/confirm-<id>.confirm.jsonl): Ctrl-C and `--resume` continue
where it stopped, storing again (idempotently) what was already measured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Callable

from db.review.decisions import UNDECIDED, decide, doubtful_cases
from mpsbench.workflows.confirm_journal import SUFFIX, ConfirmError, Journal

ROOT = Path(__file__).resolve().parents[2]  # the source tree holding mpsbench/ and collector/


def interleaved(rounds: int) -> list[tuple[int, str]]:
    """(round, side) in the order A B, B A, A B …: each side goes first as often, so drift and heat spread."""
    out = []
    for r in range(1, rounds + 1):
        out += [(r, s) for s in (("baseline", "candidate") if r % 2 else ("candidate", "baseline"))]
    return out


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would exit 2 with its usage: the CLI's one error shape instead
        raise ConfirmError(f"{message} (see mpsbench confirm --help)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="mpsbench confirm",
        description="rerun a review's suspected and unconfirmed "
        "cases on this machine, both builds interleaved, until each is confirmed or cleared",
    )
    p.add_argument("--baseline", help="the review's baseline selector (torch=…, build=…, tag:k=v, runs:…)")
    p.add_argument("--candidate")
    p.add_argument("--baseline-python", type=Path, help="the Python of the baseline build's environment")
    p.add_argument("--candidate-python", type=Path, help="the Python of the candidate build's environment")
    review_and_run_options(p, 3, "at most this many A/B rounds (default 3)")
    p.add_argument("--out", type=Path, default=Path("runs"))
    p.add_argument("--url", help="a team server: read its review and push the new runs (token: MPSBENCH_TOKEN)")
    p.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="JOURNAL",
        help="continue the newest confirm journal in --out (or this one)",
    )
    return p


def review_and_run_options(p: argparse.ArgumentParser, rounds: int, rounds_help: str) -> None:
    """The options confirm and bisect share: the review's (scope, threshold, rules) and each run's."""
    p.add_argument("--scope", default="machine")
    p.add_argument("--threshold")
    p.add_argument("--rules")
    p.add_argument("--rounds", type=int, default=rounds, help=rounds_help)
    p.add_argument("--processes", type=int, help="worker processes per run (default: the collector's)")
    p.add_argument("--device", default="auto", choices=["auto", "mps", "cuda", "cpu"])
    p.add_argument("--machine-name", help="this machine's name as its runs carry it (default: the collector's)")
    p.add_argument("--idle-wait", type=_idle_wait, help="each run's --idle-wait (default: the collector's)")


def _idle_wait(text: str) -> float:
    """--idle-wait as the collector takes it (collector.run.plan), refused here before anything runs."""
    from collector.run.plan import MAX_IDLE_WAIT_S

    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= MAX_IDLE_WAIT_S:
        raise argparse.ArgumentTypeError(f"must be from 0 to {MAX_IDLE_WAIT_S:g} seconds (got {text!r})")
    return value


def main(args: list[str], say: Callable[[str], None] = print) -> int:
    from db.errors import StoreError

    try:
        return _main(_parser().parse_args(args), say)
    except (ConfirmError, StoreError) as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: `mpsbench confirm --resume` continues", file=sys.stderr)
        return 130


def _options(opts: argparse.Namespace) -> dict[str, Any]:
    if opts.resume is not None:
        path = Path(opts.resume) if opts.resume else _latest(opts.out)
        journal = Journal.load(path)
        return {**journal.header["options"], "_journal": journal}
    missing = [n for n in ("baseline", "candidate", "baseline_python", "candidate_python") if getattr(opts, n) is None]
    if missing:
        raise ConfirmError(f"--{missing[0].replace('_', '-')} is required (or --resume)")
    if not 1 <= opts.rounds <= 50:
        raise ConfirmError(f"--rounds must be from 1 to 50 (got {opts.rounds})")
    for side in ("baseline", "candidate"):
        python = getattr(opts, f"{side}_python")
        if not python.is_file() or not os.access(python, os.X_OK):
            raise ConfirmError(f"--{side}-python {python}: not an executable file")
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(opts).items() if k != "resume"}


def _latest(out: Path) -> Path:
    found = sorted(out.glob(f"*{SUFFIX}"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise ConfirmError(f"--resume: no confirm journal (*{SUFFIX}) in {out}")
    return found[-1]


def _main(opts: argparse.Namespace, say: Callable[[str], None]) -> int:
    from db.review.review import Review

    o = _options(opts)
    journal = o.pop("_journal", None)
    params = {k: o[k] for k in ("baseline", "candidate", "scope", "threshold", "rules") if o.get(k) is not None}
    review = Review.from_params(params)  # bad selectors or rules refused before anything runs
    out = Path(o["out"])
    out.mkdir(parents=True, exist_ok=True)
    sides = {s: _Side(s, Path(o[f"{s}_python"]), getattr(review.compare, s)) for s in ("baseline", "candidate")}
    for side in sides.values():
        side.check_build()
    if journal is None:
        answer = _review(review, o, sides)
        scope = machine_scope(o, answer)
        targets = doubtful_cases(answer, scope)
        if not targets:
            say(
                f"nothing to confirm: the review of {review.compare.candidate} against {review.compare.baseline} "
                f"has no suspected or unconfirmed case{' on ' + scope if scope else ''}"
            )
            return 0
        journal = Journal(out / f"confirm-{uuid.uuid4().hex[:12]}{SUFFIX}")
        journal.header = {"type": "confirm", "options": o, "targets": targets, "scope": scope}
        journal.append(journal.header)
    targets, scope = journal.header["targets"], journal.header["scope"]
    for record in journal.runs:  # resumed: what was measured counts again (storing is idempotent)
        sides[record["side"]].adopt(record, o)
    say(
        f"confirming {len(targets)} case(s) on this machine, at most {o['rounds']} rounds (A B, B A, …): "
        + ", ".join(targets)
    )
    states = {t: UNDECIDED for t in targets}
    done = {(r["round"], r["side"]) for r in journal.runs}
    for round_, name in interleaved(int(o["rounds"])):
        if (round_, name) not in done:
            say(f"round {round_}/{o['rounds']}: {name} ({sides[name].python})")
            record = sides[name].run(round_, [t for t in targets if states[t] == UNDECIDED], out, o)
            journal.append({"type": "run", **record})
        if name == ("candidate" if round_ % 2 else "baseline"):  # the round's second side: ask the review again
            states.update(decide([t for t in targets if states[t] == UNDECIDED], _review(review, o, sides), scope))
            say(f"after round {round_}: " + ", ".join(f"{t}: {s}" for t, s in states.items()))
            if UNDECIDED not in states.values():
                break
    for target, state in states.items():
        say(f"{state:>10}  {target}")
    return 0


def machine_scope(o: dict, answer: dict) -> str | None:
    """This machine's scope in a machine-scope review (its name), so only its own cases are rerun."""
    if o.get("scope", "machine") != "machine":
        return None
    if o.get("machine_name"):
        return o["machine_name"]
    from collector.fingerprint import current_machine

    return current_machine(None, "cpu").name


class _Side:
    def __init__(self, name: str, python: Path, selector: str) -> None:
        self.name, self.python, self.selector = name, python, selector
        self.new_runs: list[str] = []

    def check_build(self) -> None:
        """A torch=/build= side must be the environment's own build, or the new runs would not count."""
        kind, _, value = self.selector.partition("=")
        if kind not in ("torch", "build"):
            return
        probe = subprocess.run(
            [str(self.python), "-c", "import torch; print(torch.__version__); print(torch.version.git_version or '')"],
            capture_output=True,
            text=True,
        )
        if probe.returncode != 0:
            raise ConfirmError(f"--{self.name}-python {self.python}: cannot import torch: {probe.stderr[-300:]}")
        version, git = (probe.stdout.splitlines() + ["", ""])[:2]
        want_version, _, want_hash = value.partition("@")
        if version != want_version or (want_hash and not git.startswith(want_hash)):
            raise ConfirmError(
                f"--{self.name}-python {self.python} has torch {version} ({git[:7] or 'no hash'}); "
                f"the {self.name} side is {self.selector}: its runs would not count"
            )

    def selector_now(self) -> str:
        if self.selector.startswith("runs:") and self.new_runs:
            return self.selector + "," + ",".join(self.new_runs)
        return self.selector

    def adopt(self, record: dict, o: dict) -> None:
        self.new_runs.append(record["run_id"])
        store_bundle(Path(record["bundle"]), o)

    def run(self, round_: int, cases: list[str], out: Path, o: dict) -> dict:
        folder = out / f"confirm-{self.name}"
        cmd = [
            str(self.python),
            "-m",
            "collector",
            "run",
            "--device",
            o["device"],
            "--out",
            str(folder),
            "--tag",
            f"confirm_round={round_}",
            "--kernels",  # a confirmed regression says what ran on each side (bundle.kernels)
            *[x for c in cases for x in ("--case", c)],
        ]
        workloads = sorted({c.split("|", 1)[0] for c in cases})
        cmd += [x for w in workloads for x in ("--workload", w)] + ["--compile", "eager,inductor"]
        if self.selector.startswith("tag:"):
            cmd += ["--tag", self.selector[len("tag:") :]]
        if o.get("processes"):
            cmd += ["--processes", str(o["processes"])]
        if o.get("machine_name"):
            cmd += ["--machine-name", o["machine_name"]]
        if o.get("idle_wait") is not None:  # a journal from before the option has none: the collector's default
            cmd += ["--idle-wait", f"{o['idle_wait']:g}"]
        before = set(folder.glob("*.json")) if folder.exists() else set()
        from collector.isolation.lifeline import PARENT_VARIABLE

        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            PARENT_VARIABLE: str(os.getpid()),
        }  # a killed confirm takes its run (and the run its workers) with it
        done = subprocess.run(cmd, cwd=ROOT, env=env)
        made = sorted(set(folder.glob("*.json")) - before, key=lambda p: p.stat().st_mtime)
        if done.returncode != 0 or not made:
            raise ConfirmError(f"the {self.name} run failed (exit {done.returncode}): {' '.join(cmd[:6])} …")
        bundle = made[-1]
        run_id = json.loads(bundle.read_text())["run_id"]
        self.new_runs.append(run_id)
        store_bundle(bundle, o)
        return {"round": round_, "side": self.name, "bundle": str(bundle), "run_id": run_id}


def store_bundle(bundle: Path, o: dict) -> None:
    """Into the local store, or pushed to o["url"] (a ConfirmError names a push that was refused)."""
    if o.get("url"):
        from collector.push.pusher import Pusher

        outcome = Pusher(o["url"]).push([bundle])[0]
        if outcome.state not in ("sent", "skipped"):
            raise ConfirmError(f"push of {bundle} to {o['url']}: {outcome.state}: {outcome.detail}")
        return
    from db.cli import cli_identity
    from db.ingest.core import ingest_bundle
    from db.store.engine import writing
    from db.store.writers.upkeep import catch_up

    with writing() as engine:  # checkpointed when stored: the `.duckdb` alone holds every run
        ingest_bundle(engine, bundle.read_bytes(), cli_identity())
        catch_up(engine)  # the next step's review reads the summaries (right without them, only slower)


def _review(review, o: dict, sides: dict) -> dict:
    """The review's answer with each side's new runs in it."""
    from db.compare_command import local_answer, remote_answer
    from db.review.review import Review

    params = {
        **review.params(),
        "baseline": sides["baseline"].selector_now(),
        "candidate": sides["candidate"].selector_now(),
    }
    now = Review.from_params(params)
    return remote_answer(o["url"], now.params()) if o.get("url") else local_answer(now)
