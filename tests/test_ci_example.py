"""examples/ci/: the self-hosted Mac workflow is valid YAML with the sweep → push → compare → gate steps in that
order, and every `mpsbench` command line in it parses with the CLI's real argparse options (and its build specs
and review selectors with the CLI's own checks), the job's env values filled in; a wrong option is caught."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from collector.cli.main import parser as collector_parser
from collector.errors import CollectorError
from collector.sweep.spec import parse_specs
from db.compare_command import _parser as compare_parser
from db.errors import StoreError
from db.review.review import Review
from mpsbench.cli import BOTH, COLLECTOR, STORE
from mpsbench.workflows.confirm import ConfirmError
from mpsbench.workflows.confirm import _parser as confirm_parser

WORKFLOW = Path(__file__).resolve().parents[1] / "examples" / "ci" / "mac-benchmark.yml"


def _commands(script: str, env: dict[str, str]) -> list[list[str]]:
    """The `mpsbench …` lines of a step's shell script: continuations joined, comments and redirections dropped,
    $NAME / ${NAME} of the job's env filled in (others, like $GITHUB_STEP_SUMMARY, left as written)."""
    out = []
    for line in script.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if not words or words[0] != "mpsbench":
            continue
        argv, target = [], False
        for word in words[1:]:
            if word in (">>", ">", "2>", "2>>"):
                target = True  # the next word is where the output goes, not an argument
            elif target:
                target = False
            else:
                argv.append(re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), m.group(0)), word))
        out.append(argv)
    return out


def check(argv: list[str]) -> None:
    """Parse `mpsbench ARGV` as the CLI would: each command's own argparse, and the values the CLI checks before
    running anything (build specs, review selectors); raises on anything the CLI would refuse."""
    command, rest = argv[0], argv[1:]
    assert command in {**COLLECTOR, **STORE, **BOTH}, f"unknown command {command!r}"
    if command in COLLECTOR:
        try:
            args = collector_parser().parse_args(argv)
        except SystemExit as exc:
            raise ValueError(f"mpsbench {' '.join(argv)}: argparse refused it") from exc
        if command == "sweep":
            parse_specs(args.build)  # CollectorError on a bad spec
        return
    if command == "compare":
        opts = compare_parser().parse_args(rest)  # StoreError on a bad option
        Review.from_params({"baseline": opts.baseline, "candidate": opts.candidate, "scope": opts.scope})
        return
    if command == "confirm":
        confirm_parser().parse_args(rest)


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _steps(workflow: dict) -> tuple[dict, list[dict]]:
    [job] = workflow["jobs"].values()
    return job, job["steps"]


def test_the_workflow_runs_on_a_self_hosted_mac_sweep_push_compare_gate(workflow):
    job, steps = _steps(workflow)
    assert "self-hosted" in job["runs-on"] and "macOS" in job["runs-on"]
    env = {k: str(v) for k, v in job["env"].items()}
    order = [(argv[0], step) for step in steps for argv in _commands(step.get("run", ""), env)]
    assert [c for c, _ in order] == ["sweep", "push", "compare", "compare"]
    summary, gate = order[2][1]["run"], order[3][1]["run"]
    assert "--format md" in summary and '>> "$GITHUB_STEP_SUMMARY"' in summary and "--url" in summary
    assert "--fail-on regression" in gate
    assert order[1][1].get("if") == "always()"  # the outbox goes out even when the sweep failed half-way


def test_every_mpsbench_line_parses_with_the_cli_options(workflow):
    job, steps = _steps(workflow)
    env = {k: str(v) for k, v in job["env"].items()}
    lines = [argv for step in steps for argv in _commands(step.get("run", ""), env)]
    assert len(lines) == 4
    for argv in lines:
        check(argv)
    sweep = collector_parser().parse_args(lines[0])
    assert [s.text for s in parse_specs(sweep.build)] == [env["BASELINE_SPEC"], env["CANDIDATE_SPEC"]]


@pytest.mark.parametrize(
    "argv,error",  # idle-wait: parsed by the CLIs' parsers, never run
    [
        (["compare", "--baseline", "torch=2.14.1", "--candidate", "torch=2.15.0", "--format", "markdown"], StoreError),
        (["compare", "--baseline", "torch=2.14.1", "--candidate", "torch=2.15.0", "--scope", "galaxy"], StoreError),
        (["sweep", "--device", "mps", "--repeat", "3", "--build", "torch==2.14.1"], ValueError),
        (["sweep", "--build", "torch==2.14.1", "--build", "torch=2.15.0"], CollectorError),
        (["confirm", "--baseline", "torch=2.14.1", "--rounds", "three"], ConfirmError),
        (["gate", "--fail-on", "regression"], AssertionError),
    ],
)
def test_the_checker_refuses_what_the_cli_refuses(argv, error):
    with pytest.raises(error):
        check(argv)


def test_a_line_with_a_wrong_option_in_the_workflow_is_caught(workflow):
    env = {k: str(v) for k, v in _steps(workflow)[0]["env"].items()}
    broken = WORKFLOW.read_text().replace("--fail-on regression", "--fail-on regresion")
    lines = [argv for step in _steps(yaml.safe_load(broken))[1] for argv in _commands(step.get("run", ""), env)]
    with pytest.raises(StoreError):
        for argv in lines:
            check(argv)
