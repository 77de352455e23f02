"""The live torch build of this process (identity rules: bundle.builds), plus the PYTORCH_* variables and library
versions."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys

from bundle.builds import infer_channel, parse_version
from bundle.schema import Build, Channel


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


def current_build(
    collector_version: str, command_line: str = "", channel: str | None = None, install_source: str | None = None
) -> Build:
    """This process's torch. `channel` is the user's --channel; `install_source` the index torch came from (a
    sweep passes it): both only count where the version string itself does not say (bundle.builds)."""
    import torch

    info = parse_version(torch.__version__)
    index = install_source if install_source and "://" in install_source else None
    git_hash = getattr(torch.version, "git_version", None)
    return Build(
        torch_version=torch.__version__,
        git_hash=git_hash if git_hash and git_hash != "Unknown" else info.git_hash,
        channel=Channel(infer_channel(torch.__version__, index, channel)),
        nightly_date=info.nightly_date,
        local_variant=info.local_variant,
        debug=bool(getattr(torch.version, "debug", False)),
        python_version=platform.python_version(),
        env=pytorch_env(),
        libraries=library_versions(),
        collector_version=collector_version,
        command_line=command_line or " ".join(sys.argv),
        install_source=install_source,
    )
