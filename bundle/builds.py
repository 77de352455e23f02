"""Build identity, the one home of it: a torch build is its version string plus its git hash (+ local variant,
debug). The channel (nightly / rc / release) is inferred here, labels (`2.15.0 (rc, 1a2b3c4)`) are made here,
and builds sort here (by version, not by string: 2.9 < 2.10, 2.15.0rc1 < 2.15.0, nightlies of one version by date).

Release candidates on PyTorch's test channel carry the FINAL version string (the 2.13.0 RC reported `2.13.0+cpu`),
so a plain version string says "a release build", never "the final release": only the index it came from or the
user can say rc, and the git hash tells an RC's binaries from the final's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

# channel values (bundle.schema.Channel holds the same strings): "stable" is what bundles written before build
# identity called a plain version; it still reads, and means what "release" means
NIGHTLY, RC, RELEASE, STABLE, LOCAL, UNKNOWN = "nightly", "rc", "release", "stable", "local", "unknown"
DECLARABLE = (NIGHTLY, RC, RELEASE, LOCAL)  # what a user's --channel may say
SHORT_HASH = 7

_VERSION = re.compile(
    r"^(?P<base>\d+\.\d+(?:\.\d+)?)(?P<pre>(?:a|b|rc)\d+)?(?P<dev>\.dev(?P<date>\d{8}))?"
    r"(?P<local>\+.+)?$"
)
_GIT_LOCAL = re.compile(r"^\+git(?P<hash>[0-9a-f]{7,40})")
# PyTorch's wheel indexes: https://download.pytorch.org/whl/{nightly,test}/<variant> and the plain release one
_INDEX_CHANNEL = re.compile(r"/whl/(?P<which>nightly|test)(?:/|$)")


@dataclass(frozen=True)
class VersionInfo:
    """What a version string alone says. channel is None for a plain release string: RC or final, not known."""

    channel: str | None
    nightly_date: str | None = None
    local_variant: str | None = None
    git_hash: str | None = None  # from a "+git1a2b3c4" suffix


def parse_version(version: str) -> VersionInfo:
    """'2.15.0rc1' -> rc; '2.16.0.dev20261201+cpu' -> nightly 2026-12-01, '+cpu'; '2.13.0+cpu' -> None (a release
    string: the final release or an RC); '2.16.0a0+git1a2b3c4' -> local with its git hash; junk -> unknown."""
    m = _VERSION.match(version.strip())
    if m is None:
        return VersionInfo(UNKNOWN)
    local = m["local"]
    git = _GIT_LOCAL.match(local) if local else None
    if git or (m["pre"] or "").startswith("a"):
        return VersionInfo(LOCAL, local_variant=local, git_hash=git["hash"] if git else None)
    if m["dev"]:
        d = m["date"]
        return VersionInfo(NIGHTLY, nightly_date=f"{d[:4]}-{d[4:6]}-{d[6:]}", local_variant=local)
    if m["pre"]:
        return VersionInfo(RC if m["pre"].startswith("rc") else UNKNOWN, local_variant=local)
    return VersionInfo(None, local_variant=local)


def index_channel(index_url: str | None) -> str | None:
    """The channel an install index implies: …/whl/nightly… -> nightly, …/whl/test… -> rc, any other index
    (PyPI, …/whl/cpu) -> release; no index known -> None."""
    if not index_url:
        return None
    m = _INDEX_CHANNEL.search(index_url.strip())
    return {"nightly": NIGHTLY, "test": RC}[m["which"]] if m else RELEASE


def infer_channel(version: str, index_url: str | None = None, declared: str | None = None) -> str:
    """The channel from what is known, first that says: the version itself, the index it was installed from,
    the user's --channel; a plain release string with none of them is recorded as "release"."""
    return parse_version(version).channel or index_channel(index_url) or declared or RELEASE


def short_hash(git_hash: str | None) -> str | None:
    """The first 7 hex digits; None for no hash (also a store's NULL read as NaN, or torch's "Unknown")."""
    return git_hash[:SHORT_HASH] if isinstance(git_hash, str) and git_hash and git_hash != "Unknown" else None


def build_label(torch_version: str, channel: str | None, git_hash: str | None, debug: bool | None = None) -> str:
    """`2.15.0 (rc, 1a2b3c4)`; `2.14.1 (stable)` for an old bundle without a hash; `, debug` for a debug build."""
    parts = [p for p in (channel, short_hash(git_hash), "debug" if debug else None) if p]
    return f"{torch_version} ({', '.join(parts)})" if parts else torch_version


def build_selector(torch_version: str, git_hash: str | None) -> str:
    """The selector text that picks exactly this build (db.query.selectors parses it)."""
    hashed = short_hash(git_hash)
    return f"build={torch_version}@{hashed}" if hashed else f"build={torch_version}"


_CHANNEL_ORDER = {RC: 0, RELEASE: 1, STABLE: 1}  # of one version string: an RC's binaries precede the final's


def build_sort_key(
    torch_version: str, nightly_date: str | None = None, channel: str | None = None, git_hash: str | None = None
) -> tuple:
    """Sort key of a torch build. An unparsable version sorts after all parsable ones, by its text."""
    base = torch_version.split("+", 1)[0]  # "+cpu" / "+cu128" is a variant, not an order
    try:
        version: Version | None = Version(base)
    except InvalidVersion:
        version = None
    rest = (
        nightly_date if isinstance(nightly_date, str) else "",
        _CHANNEL_ORDER.get(channel or "", 2),
        torch_version,
        short_hash(git_hash) or "",
    )
    return (0, version, *rest) if version is not None else (1, Version("0"), *rest)
