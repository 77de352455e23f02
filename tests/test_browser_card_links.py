"""Issue 44: a verdict card's case links in Chromium, on the seeded store (benchmarks/stores/seed.py: linear k_v 1.10× slower,
softmax's PSNR 40 dB lower on the M2). A link opens its page in the same tab and Back returns to the card (a
Markdown link opened a new tab, Back had nothing to return to); the correctness link opens the case itself. Only a
browser has tabs and a Back button: the links' targets are checked under AppTest (tests/test_smaller_44.py)."""

from __future__ import annotations

import pytest

from tests.test_browser_compare import CHROMIUM, CHROMIUM_ARGS, COMPARE_QUERY, PAGE_S, serving
from tests.test_browser_state import _quiet

LINK = "[data-testid='stPageLink-NavLink']"
WAIT_MS = PAGE_S * 1000


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serving(tmp_path_factory.mktemp("card-links")) as base:
        yield base


def _compare(page, server: str) -> None:
    page.goto(f"{server}/compare?{COMPARE_QUERY}", timeout=WAIT_MS)
    page.locator(LINK, has_text="regressed:").first.wait_for(timeout=WAIT_MS)
    _quiet(page, "Compare")  # its run over, the address it keeps written


@pytest.mark.parametrize("target,heading", [("trends", "Trends"), ("correctness", "Correctness")])
def test_a_card_link_opens_in_this_tab_and_back_returns_to_the_card(server, target, heading):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1440, "height": 1400})
            page = context.new_page()
            _compare(page, server)
            start = page.url
            link = page.locator(f"{LINK}[href*='{target}?']", has_text="regressed:").first
            link.click()
            page.wait_for_function(f"() => location.pathname.endsWith('/{target}')", timeout=WAIT_MS)
            page.locator("h1", has_text=heading).wait_for(timeout=WAIT_MS)
            assert len(context.pages) == 1  # the same tab
            if target == "correctness":  # the case itself, not the page's first one
                page.get_by_text("One case: softmax · rows=1 vocab=128256 · fp32").wait_for(timeout=WAIT_MS)
                assert "case_key=" in page.url and "metric=psnr_vs_cpu" in page.url
            _quiet(
                page, heading
            )  # Back during a run can land before the page kept its state (tests/test_browser_state)
            page.go_back()
            page.wait_for_function("() => location.pathname.endsWith('/compare')", timeout=WAIT_MS)
            page.locator(LINK, has_text="regressed:").first.wait_for(timeout=WAIT_MS)  # the card again
            assert page.url == start
        finally:
            browser.close()
