"""Where a user's own model lives: a local directory, or a hub id already in the local Hugging Face cache.

Nothing is ever downloaded at run time: a hub id is only looked up in the cache (`local_files_only=True`),
and a miss is a CollectorError naming the variable, the spec, the directory and the cache that were searched.
The model name kept in case params is the hub id or the directory's name — never the machine's path — so the
same model on two Macs gives comparable cases.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from collector.errors import CollectorError

HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


@dataclass(frozen=True)
class LocalModel:
    spec: str  # as the user gave it
    name: str  # identity in case params: hub id or directory name
    path: Path | None  # the directory holding config.json; None when not found
    problem: str | None = None  # why it was not found (a CollectorError message)

    def require(self) -> Path:
        if self.path is None:
            raise CollectorError(self.problem or f"model {self.spec!r} not found")
        return self.path


def hub_cache_dir() -> Path:
    """The cache huggingface_hub would read, from the environment as it is now (tests point it elsewhere)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def specs_from_env(variable: str) -> list[str]:
    """The comma list in `variable`; empty when unset (the workload then uses its random-weight configs)."""
    return [s.strip() for s in os.environ.get(variable, "").split(",") if s.strip()]


def _with_config(root: Path, subfolders: tuple[str, ...]) -> Path | None:
    for sub in subfolders:
        candidate = root / sub if sub else root
        if (candidate / "config.json").is_file():
            return candidate
    return None


def _looked_in(root: Path, subfolders: tuple[str, ...]) -> str:
    return ", ".join(str((root / s if s else root) / "config.json") for s in subfolders)


def _cached_snapshot(hub_id: str) -> Path | None:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(hub_id, local_files_only=True, cache_dir=str(hub_cache_dir())))
    except (LocalEntryNotFoundError, FileNotFoundError, ValueError):
        return None


def _in_directory(spec: str, root: Path, variable: str, subfolders: tuple[str, ...], name: str) -> LocalModel:
    found = _with_config(root, subfolders)
    problem = (
        None
        if found
        else (f"{variable}={spec!r}: {root} has no model config (looked for {_looked_in(root, subfolders)})")
    )
    return LocalModel(spec, name, found, problem)


def locate(spec: str, variable: str, subfolders: tuple[str, ...] = ("",)) -> LocalModel:
    """Resolve one spec; a miss is returned (not raised) so cases() can still list the case."""
    root = Path(spec).expanduser()
    if root.is_dir():
        return _in_directory(spec, root, variable, subfolders, root.resolve().name)
    is_hub_id = bool(HUB_ID.fullmatch(spec))
    snapshot = _cached_snapshot(spec) if is_hub_id else None
    if snapshot is not None:
        return _in_directory(spec, snapshot, variable, subfolders, spec)
    where = (
        (f"not in the local Hugging Face cache ({hub_cache_dir()}) and no such local directory ({root.resolve()})")
        if is_hub_id
        else f"no such local directory ({root.resolve()})"
    )
    return LocalModel(
        spec,
        spec,
        None,
        (
            f"{variable}={spec!r}: {where}. Nothing is downloaded at run time: put the model in a directory "
            f"(config.json + weights) or fetch it into the cache first"
        ),
    )


def local_models(variable: str, subfolders: tuple[str, ...] = ("",)) -> list[LocalModel]:
    """Every spec in `variable`, located (found or not)."""
    return [locate(s, variable, subfolders) for s in specs_from_env(variable)]


def require_named(name: str, variable: str, subfolders: tuple[str, ...] = ("",)) -> Path:
    """The directory of the model a case names (its name, not a path, is in the params), found again
    among `variable`'s specs when the case runs; a miss raises the located problem."""
    found = next((m for m in local_models(variable, subfolders) if m.name == name), None)
    return (found or locate(name, variable, subfolders)).require()
