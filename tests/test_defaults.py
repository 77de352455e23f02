"""The default comparison: the release question (latest stable vs the newest rc after it); a nightly only where no
rc is newer than the stable, else a second, labelled comparison."""
from db.views.defaults import default_pair, preview_pair


def test_latest_stable_against_the_newest_preview_after_it():
    builds = ["2.13.0", "2.14.1", "2.15.0rc1", "2.15.0", "2.16.0.dev20261101", "2.16.0.dev20261120"]
    channels = ["stable", "stable", "rc", "stable", "nightly", "nightly"]
    assert default_pair(builds, channels) == ("2.15.0", "2.16.0.dev20261120")


def test_the_release_question_wins_over_a_newer_nightly_which_is_the_labelled_second_comparison():
    builds = ["2.14.1", "2.15.0rc1", "2.16.0.dev20261120"]
    channels = ["release", "rc", "nightly"]
    assert default_pair(builds, channels) == ("2.14.1", "2.15.0rc1")
    assert preview_pair(builds, channels) == ("2.14.1", "2.16.0.dev20261120")
    assert default_pair(["2.14.1", "2.16.0.dev1"], ["release", "nightly"]) == ("2.14.1", "2.16.0.dev1")
    assert preview_pair(["2.14.1", "2.16.0.dev1"], ["release", "nightly"]) is None  # it is the default already
    assert preview_pair(["2.14.1", "2.15.0rc1"], ["release", "rc"]) is None and preview_pair([], []) is None


def test_no_preview_after_the_stable_takes_the_newest_later_build_or_the_newest_other():
    assert default_pair(["a", "b", "c"], ["stable", "local", "unknown"]) == ("a", "c")
    assert default_pair(["a", "b"], ["rc", "stable"]) == ("b", "a")  # nothing after the stable: the other one
    assert default_pair(["a", "b"], ["nightly", "nightly"]) == ("a", "b")  # no stable: oldest vs newest


def test_one_build_or_none():
    assert default_pair(["a"], ["stable"]) == ("a", "a")
    assert default_pair([], []) == ("", "")


def test_release_counts_as_stable_and_compare_sides_come_from_the_selectors():
    import pandas as pd

    from db.views.defaults import default_sides, side_label

    assert default_pair(["2.14.1", "2.15.0rc1"], ["release", "rc"]) == ("2.14.1", "2.15.0rc1")
    selectors = pd.DataFrame({"selector": ["torch=2.14.1", "torch=2.15.0rc1", "torch=2.16.0.dev1", "tag:role=x"],
                              "kind": ["build", "build", "build", "tag"],
                              "label": ["torch 2.14.1 (release)", "torch 2.15.0rc1 (rc)", "torch 2.16.0.dev1 (local)",
                                        "tag role = x"],
                              "n_runs": [4, 1, 2, 3], "channel": ["release", "rc", "local", ""]})
    assert default_sides(selectors) == ("torch=2.14.1", "torch=2.15.0rc1")  # never a tag, never first vs last
    assert side_label(selectors, "torch=2.15.0rc1") == "torch 2.15.0rc1 (rc) · 1 run"
    assert side_label(selectors, "runs:abc") == "runs:abc"
