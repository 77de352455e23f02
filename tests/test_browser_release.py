"""The release answer in Chromium (issue 35): `streamlit run app.py` on tests/release_walk.py's single-process
store, where none of the planted slowdowns can be tested. Regressions names each on its card, shows the command
that decides them, and its Markdown download carries them; the counts say untested, never unchanged. A store of
one build says on Overview what a second build would show (AppTest: no browser needed for one message)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from db.store.engine import open_store
from tests import release_walk as w
from tests.test_browser_compare import CHROMIUM, CHROMIUM_ARGS, PAGE_S, ROOT, served_store
from tests.test_release_answer import LINEAR_NAME, SDPA_NAME

IDLE = "() => !document.querySelector(\"[data-testid='stStatusWidget']\")"
QUERY = "baseline=torch%3D2.14.1&candidate=torch%3D2.15.0rc1"


@pytest.fixture
def walk_server(tmp_path):
    with served_store(tmp_path / "walk.duckdb", lambda engine: w.walk_store(engine, processes=1, runs=1)) as base:
        yield base


def test_regressions_names_every_untested_slowdown_with_its_command_and_export(walk_server):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1400})
            page.goto(f"{walk_server}/regressions?{QUERY}", timeout=PAGE_S * 1000)
            page.get_by_text("Decide the cases that are worse but not confirmed").first.wait_for(timeout=PAGE_S * 1000)
            page.wait_for_function(IDLE, timeout=PAGE_S * 1000)
            page.get_by_text("Detail: one card per machine", exact=False).first.click()  # the per-group cards
            page.wait_for_function(IDLE, timeout=PAGE_S * 1000)
            for title, name in (
                ("mbp-m4pro · float16 · eager", SDPA_NAME),
                ("mbp-m4pro · bfloat16 · eager", LINEAR_NAME),
                ("studio-m3u · bfloat16 · eager", LINEAR_NAME),
            ):
                found = page.locator("[data-testid='stVerticalBlock']", has_text=title).last
                # the card's lines render in turn: on a loaded box its list came after the page went idle
                expect(found).to_contain_text(f"unconfirmed: {name}", timeout=PAGE_S * 1000)
                card = found.inner_text()
                assert "no confirmed regression (1 unconfirmed" in card and f"unconfirmed: {name}" in card, card
                assert " unchanged" not in card and "untested (nothing to test on)" in card, card
            code = page.locator("[data-testid='stCode']").first.inner_text()
            assert "mpsbench confirm --baseline torch=2.14.1 --candidate torch=2.15.0rc1" in code
            assert page.locator("[data-testid='stAlertContentError']").count() == 0
            with page.expect_download(timeout=PAGE_S * 1000) as got:
                page.get_by_role("button", name="Markdown").click()
            markdown = Path(got.value.path()).read_text()
            assert (
                "Doubtful, not regressions (3 cases" in markdown and markdown.count("phase=decode") == 2
            )  # named on its machine's answer, then in the list
        finally:
            browser.close()


def test_overview_of_one_build_says_what_a_second_build_would_show(tmp_path, monkeypatch):
    path = tmp_path / "one.duckdb"
    engine = open_store(path)
    from db.ingest.core import ingest_bundle

    for bundle in w.walk_bundles(processes=2, runs=1):
        if bundle.build.torch_version == "2.14.1":
            ingest_bundle(engine, bundle.model_dump_json().encode())
    engine.dispose()
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    at = AppTest.from_file(str(ROOT / "pages" / "overview.py"), default_timeout=PAGE_S).run()
    said = [i.value for i in at.info]
    assert any(s.startswith("One build stored (2.14.1") and "mpsbench sweep" in s for s in said), said
    assert not at.exception
