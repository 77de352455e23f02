"""One isolated environment per build: created with uv when it is on PATH (fast, one shared cache), else venv +
pip; keyed by a hash of the spec, so a second sweep over the same builds reuses them and creates nothing. Each
environment gets the collector's runtime requirements and its torch build; the collector itself runs from this
source tree (PYTHONPATH), so every build measures with the same collector code."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from bundle.builds import build_label, infer_channel
from collector.errors import CollectorError
from collector.sweep.spec import BuildSpec

ROOT = Path(__file__).resolve().parents[2]  # the source tree holding collector/ and bundle/
READY = "mpsbench-env.json"  # written last: an environment without it is (re)installed
PROBE_TIMEOUT_S = 300
# what a build's environment must answer: its torch, and whether the collector's own imports work there
_PROBE = (
    "import json, platform, torch, collector.cli.commands, collector.run.session; "
    "print(json.dumps({'torch_version': torch.__version__, 'git_hash': getattr(torch.version, 'git_version', None),"
    " 'debug': bool(getattr(torch.version, 'debug', False)), 'python_version': platform.python_version()}))"
)


@dataclass(frozen=True)
class ReadyBuild:
    """A build that can run: its interpreter and what its torch says it is."""

    index: int  # position of its --build (0 = the baseline)
    spec: str
    python: str
    torch_version: str
    git_hash: str | None
    debug: bool
    channel: str
    label: str  # 2.15.0 (rc, 1a2b3c4)
    install_source: str
    created: bool = False  # this sweep made the environment (False: reused or the user's own)

    def to_json(self) -> dict:
        return asdict(self)


def default_envs_dir() -> Path:
    return Path(os.environ.get("MPSBENCH_ENVS") or Path.home() / ".cache" / "mpsbench" / "envs")


def child_env() -> dict[str, str]:
    """The environment a build's processes run in: the collector from this source tree, nothing else added."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.pop("VIRTUAL_ENV", None)
    return env


def probe(python: str, spec: BuildSpec, index: int, created: bool = False) -> ReadyBuild:
    """Ask the interpreter what torch it has; one that is not a Python with torch and the collector's
    requirements is a CollectorError naming the --build."""
    try:
        done = subprocess.run(
            [python, "-c", _PROBE], env=child_env(), cwd=ROOT, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CollectorError(f"--build {spec.text!r}: {python} did not run ({exc})") from None
    lines = done.stdout.strip().splitlines()
    try:
        facts = json.loads(lines[-1]) if done.returncode == 0 and lines else None
    except ValueError:
        facts = None
    if not isinstance(facts, dict) or not isinstance(facts.get("torch_version"), str):
        why = (done.stderr.strip().splitlines() or lines[-1:] or ["no output"])[-1][:300]
        raise CollectorError(
            f"--build {spec.text!r}: {python} is not a Python with torch and the collector's requirements ({why})"
        )
    channel = infer_channel(facts["torch_version"], spec.install_index, spec.channel)
    git_hash = facts["git_hash"] if facts["git_hash"] not in (None, "Unknown") else None
    return ReadyBuild(
        index,
        spec.text,
        python,
        facts["torch_version"],
        git_hash,
        facts["debug"],
        channel,
        build_label(facts["torch_version"], channel, git_hash, facts["debug"]),
        spec.install_source,
        created,
    )


def runtime_requirements() -> list[str]:
    """requirements.txt without torch (each build brings its own)."""
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    return [
        ln.split("#")[0].strip()
        for ln in lines
        if ln.split("#")[0].strip() and not ln.strip().lower().startswith("torch")
    ]


class Installer:
    """uv when on PATH, else venv + this interpreter's pip (`pip --python`: no pip bootstrapped per env)."""

    def __init__(self, envs_dir: Path, log=print) -> None:
        self.envs_dir, self.log = envs_dir, log
        self.uv = shutil.which("uv")

    def ensure(self, spec: BuildSpec, index: int) -> ReadyBuild:
        """The build's environment, created and installed if it is not ready yet; an install that fails is a
        CollectorError carrying pip's (or uv's) own error."""
        if spec.python:
            return probe(spec.python, spec, index)
        env_dir = self.envs_dir / spec.key()
        python = str(env_dir / "bin" / "python")
        if (env_dir / READY).is_file():
            return probe(python, spec, index)
        self.log(f"creating environment {env_dir} for --build {spec.text!r}")
        env_dir.parent.mkdir(parents=True, exist_ok=True)
        if not Path(python).exists():
            self._run(spec, self._venv(env_dir), env_dir)
        self._run(spec, self._install(python, list(spec.requirements) + list(spec.pip_options)), env_dir)
        # the rest from the default index (PyTorch's does not carry them all); torch stays as installed
        self._run(spec, self._install(python, runtime_requirements()), env_dir)
        ready = probe(python, spec, index, created=True)
        (env_dir / READY).write_text(json.dumps({"spec": spec.text, **ready.to_json()}, indent=1))
        return ready

    def _venv(self, env_dir: Path) -> list[str]:
        if self.uv:
            return [self.uv, "venv", "--python", sys.executable, str(env_dir)]
        return [sys.executable, "-m", "venv", "--without-pip", str(env_dir)]

    def _install(self, python: str, args: list[str]) -> list[str]:
        if self.uv:
            pre = ["--prerelease", "allow"] if "--pre" in args else []
            return [self.uv, "pip", "install", "--python", python, *pre, *[a for a in args if a != "--pre"]]
        return [sys.executable, "-m", "pip", "--python", python, "install", "--disable-pip-version-check", *args]

    def _run(self, spec: BuildSpec, command: list[str], env_dir: Path) -> None:
        done = subprocess.run(command, capture_output=True, text=True)
        log = env_dir / "install.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a") as f:
            f.write(f"$ {' '.join(command)}\n{done.stdout}{done.stderr}\n")
        if done.returncode != 0:
            tool = "uv" if self.uv else "pip"
            error = [ln for ln in done.stderr.strip().splitlines() if ln.strip()][-6:] or ["(no output)"]
            raise CollectorError(
                f"--build {spec.text!r} cannot be installed; {tool} said:\n  "
                + "\n  ".join(error)
                + f"\n(full log: {log})"
            )
