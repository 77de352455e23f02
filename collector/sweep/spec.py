"""What one `--build` says: a torch requirement with pip's index options, or an environment the user already has.

  'torch==2.14.1'
  '--pre torch==2.15.0 --index-url https://download.pytorch.org/whl/test/cpu'
  'python=/path/to/env/bin/python'            (optionally with '--channel rc')

Bad input is a CollectorError naming the --build and the rule, raised before anything is installed or run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from bundle.builds import DECLARABLE
from collector.errors import CollectorError

# pip options a spec may carry, with whether each takes a value (uv pip install takes the same ones)
_OPTIONS = {
    "--index-url": True,
    "-i": True,
    "--extra-index-url": True,
    "--find-links": True,
    "-f": True,
    "--pre": False,
    "--no-index": False,
}
_ALIASES = {"-i": "--index-url", "-f": "--find-links"}
PYPI = "https://pypi.org/simple"


@dataclass(frozen=True)
class BuildSpec:
    text: str  # as the user wrote it
    requirements: tuple[str, ...] = ()  # "torch==2.15.0", and any other package pinned with it
    pip_options: tuple[str, ...] = ()  # normalized: ("--pre", "--index-url", URL, …)
    python: str | None = None  # an existing environment's interpreter (absolute path)
    channel: str | None = None  # the user's --channel for this build

    @property
    def index_url(self) -> str | None:
        opts = self.pip_options
        return next((opts[i + 1] for i, o in enumerate(opts) if o == "--index-url"), None)

    @property
    def install_index(self) -> str | None:
        """The index torch was resolved from, when one is known: --index-url, else PyPI when no option moved
        pip elsewhere (--find-links / --no-index: no index says anything about the channel)."""
        if self.python:
            return None
        return self.index_url or (None if set(self.pip_options) & {"--find-links", "--no-index"} else PYPI)

    @property
    def install_source(self) -> str:
        """What the bundle records as where torch came from."""
        if self.python:
            return f"python={self.python}"
        return self.install_index or " ".join(self.pip_options)

    @property
    def prerelease(self) -> bool:
        return "--pre" in self.pip_options

    def key(self) -> str:
        """Environment key: the same spec on the same base Python reuses one environment."""
        ident = {
            "requirements": self.requirements,
            "options": self.pip_options,
            "python": f"{sys.implementation.name}{sys.version_info[0]}.{sys.version_info[1]}",
        }
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]

    def identity(self) -> tuple:
        """Two specs with one identity are the same build named twice."""
        if self.python:
            return ("python", environment_of(self.python))
        return ("install", tuple(sorted(self.requirements)), self.pip_options)


def environment_of(python: str) -> str:
    """The environment an interpreter path runs in: a venv's folder (its pyvenv.cfg), else the interpreter's
    real path. Not the interpreter's real path alone: every venv made from one Python links to the same one."""
    root = Path(os.path.realpath(Path(python).parent)).parent
    return str(root) if (root / "pyvenv.cfg").is_file() else os.path.realpath(python)


def _bad(text: str, rule: str) -> CollectorError:
    return CollectorError(f"--build {text!r}: {rule}")


def parse_spec(text: str) -> BuildSpec:
    try:
        tokens = shlex.split(text)
    except ValueError as exc:
        raise _bad(text, f"cannot be split into words ({exc})") from None
    if not tokens:
        raise _bad(text, "is empty; give a torch requirement (torch==2.14.1) or python=/path/to/bin/python")
    requirements, options, python, channel = [], [], None, None
    it = iter(tokens)
    for token in it:
        name, eq, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        if token.startswith("python="):
            python = token[len("python=") :]
        elif name == "--channel":
            channel = inline if eq else next(it, None)
            if channel not in DECLARABLE:
                raise _bad(text, f"--channel must be one of {', '.join(DECLARABLE)} (got {channel!r})")
        elif name in _OPTIONS or token in _OPTIONS:
            option = _ALIASES.get(name, name)
            if _OPTIONS[name]:
                value = inline if eq else next(it, None)
                if not value or value.startswith("-"):
                    raise _bad(text, f"{option} needs a value")
                options += [option, value]
            else:
                options.append(option)
        elif token.startswith("-"):
            raise _bad(
                text, f"unknown option {token!r}; a spec takes {', '.join(sorted(_OPTIONS))}, --channel or python=PATH"
            )
        else:
            try:
                Requirement(token)
            except InvalidRequirement as exc:
                raise _bad(text, f"{token!r} is not a requirement pip understands ({exc})") from None
            requirements.append(token)
    return _checked(text, tuple(requirements), tuple(options), python, channel)


def _checked(
    text: str, requirements: tuple[str, ...], options: tuple[str, ...], python: str | None, channel: str | None
) -> BuildSpec:
    if python is not None:
        if requirements or options:
            raise _bad(text, "python=PATH names an existing environment: it takes no requirement or index option")
        path = os.path.abspath(os.path.expanduser(python))
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise _bad(text, f"python={python}: no executable file there")
        return BuildSpec(text, python=path, channel=channel)
    torches = [r for r in requirements if Requirement(r).name.lower() == "torch"]
    if len(torches) != 1:
        raise _bad(text, "needs exactly one torch requirement (e.g. torch==2.14.1), or python=PATH")
    return BuildSpec(text, requirements, options, channel=channel)


def parse_specs(texts: list[str]) -> list[BuildSpec]:
    """Every --build, checked together: at least two, none named twice."""
    specs = [parse_spec(t) for t in texts]
    if len(specs) < 2:
        raise CollectorError(
            f"--build: a sweep compares at least two builds (got {len(specs)}); name each with "
            "--build (e.g. --build 'torch==2.14.1' --build python=/path/to/env/bin/python)"
        )
    seen: dict[tuple, str] = {}
    for spec in specs:
        if spec.identity() in seen:
            raise CollectorError(
                f"--build {spec.text!r}: the same build as --build {seen[spec.identity()]!r} "
                "(named twice); use --aa to run a build twice per round"
            )
        seen[spec.identity()] = spec.text
    return specs
