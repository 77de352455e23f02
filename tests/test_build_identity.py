"""Build identity (bundle.builds): channel inference from real version strings, install indexes and the user's
--channel; labels with git hashes; sort order; old bundles' "stable" still valid."""

from __future__ import annotations

import pytest

from bundle.builds import build_label, build_selector, build_sort_key, index_channel, infer_channel, parse_version
from bundle.schema import Build, Channel

# real-looking torch.version.git_version values (40 hex digits)
RC_HASH = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"
FINAL_HASH = "9f8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6"
NIGHTLY_CPU = "https://download.pytorch.org/whl/nightly/cpu"
TEST_CPU = "https://download.pytorch.org/whl/test/cpu"


@pytest.mark.parametrize(
    "version,channel,date,variant,git",
    [
        ("2.15.0rc1", "rc", None, None, None),
        ("2.16.0.dev20261201+cpu", "nightly", "2026-12-01", "+cpu", None),
        ("2.16.0.dev20261020", "nightly", "2026-10-20", None, None),
        ("2.13.0+cpu", None, None, "+cpu", None),  # RC or final: the version alone cannot say
        ("2.14.1", None, None, None, None),
        ("2.13.0+cu128", None, None, "+cu128", None),
        ("2.15.0rc1+cu128", "rc", None, "+cu128", None),
        ("2.16.0a0+git1a2b3c4", "local", None, "+git1a2b3c4", "1a2b3c4"),
        ("not-a-version", "unknown", None, None, None),
    ],
)
def test_version_alone(version, channel, date, variant, git):
    info = parse_version(version)
    assert (info.channel, info.nightly_date, info.local_variant, info.git_hash) == (channel, date, variant, git)


@pytest.mark.parametrize(
    "url,channel",
    [
        (NIGHTLY_CPU, "nightly"),
        ("https://download.pytorch.org/whl/nightly", "nightly"),
        (TEST_CPU, "rc"),
        ("https://download.pytorch.org/whl/test", "rc"),
        ("https://download.pytorch.org/whl/cpu", "release"),
        ("https://pypi.org/simple", "release"),
        (None, None),
    ],
)
def test_index_channel(url, channel):
    assert index_channel(url) == channel


def test_channel_precedence_version_then_index_then_user():
    # the 2.13.0 RC on the test channel reported the final's string: only its index says rc
    assert infer_channel("2.13.0+cpu", TEST_CPU) == "rc"
    assert infer_channel("2.13.0+cpu", "https://download.pytorch.org/whl/cpu") == "release"
    assert infer_channel("2.13.0+cpu") == "release"  # recorded as a release string, not guessed "stable"
    assert infer_channel("2.13.0+cpu", None, "rc") == "rc"  # the user's word when nothing else says
    assert infer_channel("2.13.0+cpu", TEST_CPU, "release") == "rc"  # the index outranks the user
    assert infer_channel("2.16.0.dev20261201+cpu", TEST_CPU, "rc") == "nightly"  # the version outranks both
    assert infer_channel("2.15.0rc1", "https://pypi.org/simple") == "rc"


def test_labels_and_selectors_carry_the_hash():
    assert build_label("2.15.0", "rc", RC_HASH) == "2.15.0 (rc, 1a2b3c4)"
    assert build_label("2.15.0", "release", FINAL_HASH) == "2.15.0 (release, 9f8e7d6)"
    assert build_label("2.14.1", "stable", None) == "2.14.1 (stable)"
    assert (
        build_label("2.16.0a0+git1a2b3c4", "local", "1a2b3c4", debug=True)
        == "2.16.0a0+git1a2b3c4 (local, 1a2b3c4, debug)"
    )
    assert build_selector("2.15.0", RC_HASH) == "build=2.15.0@1a2b3c4"
    assert build_selector("2.14.1", None) == "build=2.14.1"


def test_sort_order():
    builds = [
        ("2.15.0", None, "release", FINAL_HASH),
        ("2.10.0", None, "release", None),
        ("2.16.0.dev20261201+cpu", "2026-12-01", "nightly", None),
        ("2.15.0", None, "rc", RC_HASH),
        ("2.16.0.dev20261120+cpu", "2026-11-20", "nightly", None),
        ("2.9.1", None, "stable", None),
        ("2.15.0rc1", None, "rc", None),
        ("weird", None, "unknown", None),
    ]
    ordered = [(v, c) for v, _, c, _ in sorted(builds, key=lambda b: build_sort_key(*b))]
    assert ordered == [
        ("2.9.1", "stable"),
        ("2.10.0", "release"),
        ("2.15.0rc1", "rc"),
        ("2.15.0", "rc"),
        ("2.15.0", "release"),
        ("2.16.0.dev20261120+cpu", "nightly"),
        ("2.16.0.dev20261201+cpu", "nightly"),
        ("weird", "unknown"),
    ]


def test_old_stable_bundles_still_read_and_new_field_is_optional():
    old = {"torch_version": "2.14.1", "channel": "stable", "python_version": "3.11.7", "collector_version": "0.1.0"}
    build = Build.model_validate(old)
    assert build.channel is Channel.stable and build.install_source is None
    new = Build.model_validate({**old, "channel": "release", "install_source": TEST_CPU})
    assert new.channel is Channel.release and new.install_source == TEST_CPU


def test_current_build_takes_index_and_declared_channel():
    import torch

    from collector.fingerprint.build import current_build

    plain = parse_version(torch.__version__).channel is None  # this machine's torch is 2.13.0+cpu
    if not plain:
        pytest.skip(f"the installed torch {torch.__version__} names its own channel")
    assert current_build("0.1.0").channel is Channel.release
    assert current_build("0.1.0", install_source=TEST_CPU).channel is Channel.rc
    assert current_build("0.1.0", install_source=TEST_CPU).install_source == TEST_CPU
    assert current_build("0.1.0", channel="rc").channel is Channel.rc
    assert (
        current_build("0.1.0", install_source="python=/opt/x/bin/python", channel="nightly").channel is Channel.nightly
    )
