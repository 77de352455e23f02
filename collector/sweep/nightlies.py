"""The nightlies an index lists between two dates, as build specs (`sweep --build` and, later, `bisect`).

A PEP 503 "simple" project page (https://download.pytorch.org/whl/nightly/torch/, or any index's `<project>/`
page) is HTML with one anchor per file; a wheel's file name says its version and tags:
`torch-2.16.0.dev20261201+cpu-cp312-none-macosx_11_0_arm64.whl`. The page is parsed offline (`nightly_builds`);
`fetch_page` only reads it. Nightlies are told by their `.devYYYYMMDD` version; one build per date is kept (the
first version listed for it); a wheel for another Python or platform does not count, so a date whose wheels
cannot run here is not offered. Each build becomes the spec `--pre torch==VERSION --index-url URL` (the local
variant `+cpu` is left out: pip matches it, PEP 440)."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from datetime import date
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

from collector.errors import CollectorError
from collector.sweep.spec import PYPI

_WHEEL = re.compile(
    r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)-(?P<python>[^-]+)-(?P<abi>[^-]+)-"
    r"(?P<platform>[^-]+)\.whl$"
)
_NIGHTLY = re.compile(r"\.dev(?P<date>\d{8})")


@dataclass(frozen=True)
class Nightly:
    version: str  # without its local variant: 2.16.0.dev20261201
    day: date
    spec: str  # --pre torch==2.16.0.dev20261201 --index-url …


class _Anchors(HTMLParser):
    """Each anchor's file name: its text, else the last part of its href."""

    def __init__(self) -> None:
        super().__init__()
        self.files: list[str] = []
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag == "a":
            self._href, self._text = dict(attrs).get("href") or "", []

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            name = unquote("".join(self._text).strip() or urlsplit(self._href).path.rsplit("/", 1)[-1])
            if name:
                self.files.append(name)
            self._href = None


def this_python_tag() -> str:
    return f"cp{sys.version_info[0]}{sys.version_info[1]}"


def runs_here(python_tag: str, platform_tag: str, python: str, platform: str | None) -> bool:
    """A wheel's tags fit this interpreter (cpXY) and, when given, a platform word (e.g. "macosx", "arm64")."""
    return python in python_tag.split(".") and (platform is None or all(p in platform_tag for p in platform.split()))


def parse_day(text: str, option: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise CollectorError(f"{option} {text!r}: must be a date YYYY-MM-DD") from None


def _wheel_versions(page: str, project: str, python: str | None, platform: str | None) -> list[str]:
    """The versions (local variant left out) of the project's wheels on `page` that run here, in page order."""
    parser = _Anchors()
    parser.feed(page)
    python = python or this_python_tag()
    out = []
    for name in parser.files:
        wheel = _WHEEL.match(name)
        if (
            wheel
            and wheel["name"].replace("_", "-").lower() == project
            and runs_here(wheel["python"], wheel["platform"], python, platform)
        ):
            out.append(wheel["version"].split("+", 1)[0])
    return out


def nightly_builds(
    page: str,
    index_url: str,
    start: date,
    end: date,
    project: str = "torch",
    python: str | None = None,
    platform: str | None = None,
) -> list[Nightly]:
    """The project's nightlies listed on `page` dated start..end (both included), oldest first, one per date."""
    if end < start:
        raise CollectorError(f"--to {end}: before --from {start}")
    found: dict[date, str] = {}
    for version in _wheel_versions(page, project, python, platform):
        nightly = _NIGHTLY.search(version)
        if not nightly:
            continue
        d = nightly["date"]
        day = date(int(d[:4]), int(d[4:6]), int(d[6:]))
        if start <= day <= end:
            found.setdefault(day, version)
    return [Nightly(v, day, f"--pre {project}=={v} --index-url {index_url}") for day, v in sorted(found.items())]


def release_builds(
    page: str,
    index_url: str,
    after: str,
    before: str,
    project: str = "torch",
    python: str | None = None,
    platform: str | None = None,
) -> list[str]:
    """Specs of the releases (and release candidates, pre-releases) listed on `page` strictly between two
    versions, oldest first; nightlies (.dev) left out. PyPI's own index needs no --index-url."""
    from packaging.version import InvalidVersion, Version

    try:
        low, high = Version(after), Version(before)
    except InvalidVersion as exc:
        raise CollectorError(f"--releases: {exc} (the --good and --bad builds must pin torch==VERSION)") from None
    found = set()
    for text in _wheel_versions(page, project, python, platform):
        try:
            v = Version(text)
        except InvalidVersion:
            continue
        if not v.is_devrelease and low < v < high:
            found.add(v)
    index = "" if index_url.rstrip("/") == PYPI else f" --index-url {index_url}"
    return [f"{'--pre ' if v.is_prerelease else ''}{project}=={v}{index}" for v in sorted(found)]


def fetch_page(index_url: str, project: str = "torch", timeout: float = 60.0) -> str:
    """The project's simple page under the index (<index>/<project>/), as text."""
    import httpx

    url = index_url.rstrip("/") + f"/{project}/"
    try:
        answer = httpx.get(url, timeout=timeout, follow_redirects=True)
        answer.raise_for_status()
    except httpx.HTTPError as exc:
        raise CollectorError(f"--index-url {index_url}: cannot list {url}: {exc}") from None
    return answer.text
