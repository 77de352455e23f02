"""The torch build: version string -> channel / nightly date / local variant (pure), plus the live facts."""
from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import sys
from dataclasses import dataclass

from bundle.schema import Build, Channel

_VERSION = re.compile(r"^(?P<base>\d+\.\d+(?:\.\d+)?)(?P<pre>(?:a|b|rc)\d+)?(?P<dev>\.dev(?P<date>\d{8}))?"
                      r"(?P<local>\+.+)?$")
_GIT_LOCAL = re.compile(r"^\+git(?P<hash>[0-9a-f]{7,40})")


@dataclass(frozen=True)
class VersionInfo:
    channel: Channel
    nightly_date: str | None = None
    local_variant: str | None = None
    git_hash: str | None = None  # from a "+git1a2b3c4" suffix


def parse_version(version: str) -> VersionInfo:
    """'2.15.0rc1' -> rc; '2.16.0.dev20261020' -> nightly 2026-10-20; '2.14.1' -> stable;
    '2.13.0+cpu' -> stable with local_variant '+cpu'; '2.16.0a0+git1a2b3c4' -> local with git hash."""
    m = _VERSION.match(version.strip())
    if m is None:
        return VersionInfo(Channel.unknown)
    local = m["local"]
    git = _GIT_LOCAL.match(local) if local else None
    if git or (m["pre"] or "").startswith("a"):
        return VersionInfo(Channel.local, local_variant=local, git_hash=git["hash"] if git else None)
    if m["dev"]:
        d = m["date"]
        return VersionInfo(Channel.nightly, nightly_date=f"{d[:4]}-{d[4:6]}-{d[6:]}", local_variant=local)
    if m["pre"]:
        return VersionInfo(Channel.rc if m["pre"].startswith("rc") else Channel.unknown, local_variant=local)
    return VersionInfo(Channel.stable, local_variant=local)


def pytorch_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    return {k: v for k, v in sorted(env.items()) if k.startswith("PYTORCH_")}


# the distributions a workload's figures can depend on besides torch; triton is inductor's code generator on CUDA
# (pytorch-triton on nightlies), kernels is Hugging Face's hub-kernel layer swapping
LIBRARIES = ("transformers", "diffusers", "kernels", "triton", "pytorch-triton")


def library_versions(names: tuple[str, ...] = LIBRARIES) -> dict[str, str]:
    """Installed versions of `names`; a package that is not installed is left out."""
    found = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def current_build(collector_version: str, command_line: str = "") -> Build:
    import torch
    info = parse_version(torch.__version__)
    git_hash = getattr(torch.version, "git_version", None) or info.git_hash
    return Build(torch_version=torch.__version__, git_hash=git_hash if git_hash != "Unknown" else info.git_hash,
                 channel=info.channel, nightly_date=info.nightly_date, local_variant=info.local_variant,
                 debug=bool(getattr(torch.version, "debug", False)), python_version=platform.python_version(),
                 env=pytorch_env(), libraries=library_versions(), collector_version=collector_version,
                 command_line=command_line or " ".join(sys.argv))
