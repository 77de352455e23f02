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
    assert default_pair(["a", "b"], ["rc", "stable"]) == ("a", "b")  # nothing after the stable: older → newer
    assert default_pair(["a", "b"], ["nightly", "nightly"]) == ("a", "b")  # no stable: oldest vs newest


def test_nothing_after_the_newest_release_reviews_the_release_before_it_against_it():
    # issue 44: two releases (the older one run twice) read 2.15.0 → 2.14.1, a win as "2 regressions"
    assert default_pair(["2.14.1", "2.15.0"], ["release", "release"]) == ("2.14.1", "2.15.0")
    builds = ["2.13.0", "2.14.1", "2.15.0rc1", "2.15.0"]
    assert default_pair(builds, ["stable", "stable", "rc", "stable"]) == ("2.14.1", "2.15.0")  # the stable before it
    assert default_pair(["2.15.0rc1", "2.15.0"], ["rc", "release"]) == ("2.15.0rc1", "2.15.0")  # else the build before
    assert preview_pair(["2.14.1", "2.15.0"], ["release", "release"]) is None


def test_one_build_or_none():
    assert default_pair(["a"], ["stable"]) == ("a", "a")
    assert default_pair([], []) == ("", "")


def test_release_counts_as_stable_and_compare_sides_come_from_the_selectors():
    import pandas as pd

    from db.views.defaults import default_sides, side_labels

    assert default_pair(["2.14.1", "2.15.0rc1"], ["release", "rc"]) == ("2.14.1", "2.15.0rc1")
    selectors = pd.DataFrame(
        {
            "selector": ["torch=2.14.1", "torch=2.15.0rc1", "torch=2.16.0.dev1", "tag:role=x"],
            "kind": ["build", "build", "build", "tag"],
            "label": ["torch 2.14.1 (release)", "torch 2.15.0rc1 (rc)", "torch 2.16.0.dev1 (local)", "tag role = x"],
            "n_runs": [4, 1, 2, 3],
            "channel": ["release", "rc", "local", ""],
        }
    )
    assert default_sides(selectors) == ("torch=2.14.1", "torch=2.15.0rc1")  # never a tag, never first vs last
    assert side_labels(selectors)("torch=2.15.0rc1") == "torch 2.15.0rc1 (rc) · 1 run"
    assert side_labels(selectors)("torch=2.14.1") == "torch 2.14.1 (release) · 4 runs"
    assert side_labels(selectors)("runs:abc") == "runs:abc"


def _three_builds(engine) -> None:
    from db.ingest.core import ingest_bundle
    from tests.bundles import make_bundle

    for version, channel in (("2.14.1", "stable"), ("2.15.0rc1", "rc"), ("2.16.0.dev20261120", "nightly")):
        ingest_bundle(
            engine,
            make_bundle(
                build={
                    "torch_version": version,
                    "channel": channel,
                    "python_version": "3.11.7",
                    "collector_version": "0.1.0",
                }
            ),
        )


def test_overview_asks_the_release_question_shows_the_nightly_apart_and_takes_the_url(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from db.store.engine import open_store
    from db.views.release.overview import overview
    from tests.page_store import SCRIPT, TIMEOUT_S, open_page, page_store

    engine = open_store(tmp_path / "twin.duckdb")
    _three_builds(engine)
    view = overview(engine, {})
    assert (view.verdict["baseline"], view.verdict["candidate"]) == ("torch=2.14.1", "torch=2.15.0rc1")
    assert (view.preview["baseline"], view.preview["candidate"]) == ("torch=2.14.1", "torch=2.16.0.dev20261120")
    asked = overview(engine, {"baseline": "torch=2.15.0rc1", "candidate": "torch=2.16.0.dev20261120"})
    assert (asked.verdict["baseline"], asked.verdict["candidate"]) == ("torch=2.15.0rc1", "torch=2.16.0.dev20261120")
    assert asked.preview is None  # a chosen comparison is the one shown
    assert overview(engine, {"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"}).preview == view.preview
    engine.dispose()

    page_store(tmp_path, monkeypatch, _three_builds)
    at = open_page("overview.py")
    assert not at.exception, [e.value for e in at.exception]
    subjects = [s.value for s in at.subheader if " against " in s.value]
    assert "2.15.0rc1" in subjects[0] and "2.14.1" in subjects[0]
    assert len(subjects) == 2 and "2.16.0" in subjects[1]  # the nightly: the second, labelled comparison
    assert any("Preview, a second comparison" in c.value for c in at.caption)
    at = AppTest.from_file(SCRIPT, default_timeout=TIMEOUT_S)  # a link opened fresh: Overview is the first page
    at.query_params["candidate"] = "torch=2.16.0.dev20261120"
    at.run()
    assert [s.value for s in at.subheader if " against " in s.value] == [subjects[1]]
