"""Browser history as people expect it, in Chromium against `streamlit run app.py` (tests/test_browser_compare.py's
server on the seeded store): a sidebar visit adds one history entry (not one per URL parameter the page fills in),
a picker change adds one, Back puts the picker's previous value back; a bad URL value is
named once, in one message (Runs names an unknown run_id instead of dropping it silently)."""

from __future__ import annotations

from tests.test_browser_compare import CHROMIUM, CHROMIUM_ARGS, COMPARE_QUERY, PAGE_S

WAIT_MS = PAGE_S * 1000
IDLE = "() => !document.querySelector(\"[data-testid='stStatusWidget']\")"  # Streamlit's running indicator
# the last element each page draws: its URL is written after it, at the end of the page's run
LAST = {
    "Compare": "Not compared",
    "Matrix": "candidate build",
    "Memory": "studio-1 · Apple M3 Ultra",
    "Runs": "Run",
}  # Runs: its run picker's label
ERRORS = "[data-testid='stAlertContentError']"


def _settle(page, text: str) -> None:
    page.get_by_text(text, exact=text == "Run").first.wait_for(timeout=WAIT_MS)
    page.wait_for_function(IDLE, timeout=WAIT_MS)


def _length(page) -> int:
    return page.evaluate("history.length")


def test_one_history_entry_per_view_and_back_undoes_a_picker_change(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.goto(f"{server}/", timeout=WAIT_MS)
            _settle(page, "Machines × builds")
            for title, last in LAST.items():
                before = _length(page)
                page.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()
                page.locator("h1", has_text=title).wait_for(timeout=WAIT_MS)
                _settle(page, last)
                assert _length(page) - before == 1, (title, page.url)
            page.locator("[data-testid='stSidebarNav'] a", has_text="Compare").first.click()
            _settle(page, LAST["Compare"])
            scope = page.get_by_role("combobox", name="Scope")
            assert scope.input_value() == "chip"
            before = _length(page)
            scope.click()
            page.get_by_role("option", name="machine").click()
            page.wait_for_function("() => location.search.includes('scope=machine')", timeout=WAIT_MS)
            _settle(page, LAST["Compare"])
            assert _length(page) - before == 1 and scope.input_value() == "machine"
            page.go_back()
            page.wait_for_function("() => !location.search.includes('scope=machine')", timeout=WAIT_MS)
            page.wait_for_function(
                "() => document.querySelector('input[aria-label=\"Scope\"]').value === 'chip'", timeout=WAIT_MS
            )  # the picker follows the URL back
            _settle(page, LAST["Compare"])
            assert "scope=machine" not in page.url and scope.input_value() == "chip"  # and stays there
            # Forward is not asserted: pressed while the Back run still draws on a loaded machine, the picker was
            # seen to stay on the old value (with a pause it follows; see the helper's report)
        finally:
            browser.close()


def test_a_bad_url_value_is_named_once(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            for url, named, rule in [
                (f"/compare?{COMPARE_QUERY}&chart_cases=abc", "chart_cases:", "a whole number from 5 to 500"),
                ("/runs?run_id=nope", "run_id:", "none of the stored values"),
                ("/matrix?rows=planets", "rows:", "must be one of chip, dtype"),
            ]:
                before = _length(page)
                page.goto(f"{server}{url}", timeout=WAIT_MS)
                page.locator(ERRORS).first.wait_for(timeout=WAIT_MS)
                page.wait_for_function(IDLE, timeout=WAIT_MS)
                shown = [e.inner_text() for e in page.query_selector_all(ERRORS)]
                assert len(shown) == 1 and shown[0].startswith(named), (url, shown)
                assert shown[0].count(rule) == 1, shown  # the rule said once, not again in brackets
                assert _length(page) - before == 1, url  # the link is not rewritten: no extra entry to go back to
        finally:
            browser.close()
