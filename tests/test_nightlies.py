"""collector/sweep/nightlies.py: the nightlies a PEP 503 simple page lists between two dates, parsed offline from a
page shaped as https://download.pytorch.org/whl/nightly/torch/ serves it."""

from __future__ import annotations

from datetime import date

import pytest

from collector.errors import CollectorError
from collector.sweep.nightlies import nightly_builds, parse_day
from collector.sweep.spec import parse_spec

INDEX = "https://download.pytorch.org/whl/nightly/cpu"


def _page(files: list[str]) -> str:
    rows = [f'    <a href="/whl/nightly/cpu/{f.replace("+", "%2B")}#sha256={"0" * 64}">{f}</a><br/>' for f in files]
    return (
        "<!DOCTYPE html>\n<html>\n  <body>\n    <h1>Links for torch</h1>\n" + "\n".join(rows) + "\n  </body>\n</html>\n"
    )


FILES = [
    "torch-2.15.0-cp312-none-macosx_11_0_arm64.whl",  # a release: not a nightly
    "torch-2.16.0.dev20261129-cp312-none-macosx_11_0_arm64.whl",  # before --from
    "torch-2.16.0.dev20261130-cp312-none-macosx_11_0_arm64.whl",
    "torch-2.16.0.dev20261130%2Bcpu-cp312-cp312-manylinux_2_28_x86_64.whl",  # same date, Linux: one build per date
    "torch-2.16.0.dev20261201-cp311-none-macosx_11_0_arm64.whl",  # another Python only: not offered
    "torch-2.16.0.dev20261202%2Bcpu-cp312-cp312-manylinux_2_28_x86_64.whl",
    "torch-2.16.0.dev20261202-cp312-none-macosx_11_0_arm64.whl",
    "torchvision-0.31.0.dev20261202-cp312-cp312-macosx_11_0_arm64.whl",  # another project
    "torch-2.16.0.dev20261203-cp312-none-macosx_11_0_arm64.whl",  # after --to
]


def test_the_nightlies_between_two_dates_one_per_date_for_this_python_and_platform():
    found = nightly_builds(
        _page(FILES), INDEX, date(2026, 11, 30), date(2026, 12, 2), python="cp312", platform="macosx arm64"
    )
    assert [(n.version, n.day.isoformat()) for n in found] == [
        ("2.16.0.dev20261130", "2026-11-30"),
        ("2.16.0.dev20261202", "2026-12-02"),
    ]
    assert found[0].spec == f"--pre torch==2.16.0.dev20261130 --index-url {INDEX}"
    spec = parse_spec(found[0].spec)  # what `sweep --build` takes
    assert spec.requirements == ("torch==2.16.0.dev20261130",) and spec.prerelease and spec.index_url == INDEX


def test_without_a_platform_any_wheel_for_this_python_counts_and_local_variants_are_dropped():
    found = nightly_builds(_page(FILES), INDEX, date(2026, 12, 2), date(2026, 12, 2), python="cp312")
    assert [n.version for n in found] == ["2.16.0.dev20261202"]  # "+cpu" left out of the pin: pip matches it
    assert nightly_builds(_page(FILES), INDEX, date(2026, 12, 1), date(2026, 12, 1), python="cp312") == []


def test_bad_dates_are_refused_naming_the_option():
    with pytest.raises(CollectorError, match=r"--from '2026-13-01': must be a date YYYY-MM-DD"):
        parse_day("2026-13-01", "--from")
    with pytest.raises(CollectorError, match=r"--to 2026-11-01: before --from 2026-12-01"):
        nightly_builds(_page(FILES), INDEX, date(2026, 12, 1), date(2026, 11, 1))
