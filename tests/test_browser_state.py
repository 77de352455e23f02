"""State that survives, in Chromium against `streamlit run app.py` on the seeded store (one server for the module):
a pick on a page that stops early (Regressions signed out: the triage form asks to sign in) reaches the URL, does
not leak into the next page (nor does a run that another click replaced), and Back returns to it in one press; the
sidebar carries the review picked; a typed token survives a reload as the sign-in link does."""

from __future__ import annotations

import time

import pytest

from tests.test_browser_compare import CHROMIUM, CHROMIUM_ARGS, TOKEN, serving
from tests.test_browser_history import IDLE, WAIT_MS

RC_REVIEW = "baseline=torch%3D2.14.1&candidate=torch%3D2.15.0rc1"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serving(tmp_path_factory.mktemp("state")) as base:
        yield base


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _settled(page, heading: str) -> None:
    page.locator("h1", has_text=heading).wait_for(timeout=WAIT_MS)
    page.wait_for_function(IDLE, timeout=WAIT_MS)


# Streamlit shows its running indicator a moment after a run starts: idle for a whole second means the page's run
# (and the clean-up of the widgets it did not draw) is over, not yet to begin
QUIET = """() => {
  const now = performance.now();
  if (document.querySelector("[data-testid='stStatusWidget']")) { window.__quietSince = now; return false; }
  return now - (window.__quietSince ?? now) > 1000;
}"""


def _quiet(page, heading: str) -> None:
    _settled(page, heading)
    page.evaluate("window.__quietSince = performance.now()")
    page.wait_for_function(QUIET, timeout=WAIT_MS)


def _cookie(page, name: str) -> list[dict]:
    """The browser's cookie `name` once it is set, or [] after WAIT_MS: the page says "Signed in" before the typed
    token's ticket has come back as the cookie (HttpOnly: no script sees it), so the test waits for that state,
    polling the browser's own cookie jar, not for a time."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while not (found := [c for c in page.context.cookies() if c["name"] == name]) and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    return found


def _pick(page, label: str, option: str) -> None:
    page.get_by_role("combobox", name=label).click()
    page.get_by_role("option", name=option, exact=True).click()


def test_a_pick_on_a_stopped_page_reaches_the_url_and_stays_there(server, browser):
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.goto(f"{server}/regressions?{RC_REVIEW}", timeout=WAIT_MS)
    page.get_by_text("Sign in to triage a regression").wait_for(timeout=WAIT_MS)  # the page stops there
    _settled(page, "Regressions")
    before = page.evaluate("history.length")
    _pick(page, "Scope", "chip")
    page.wait_for_function("() => location.search.includes('scope=chip')", timeout=WAIT_MS)
    _quiet(page, "Regressions")
    assert page.evaluate("history.length") == before + 1
    page.locator("[data-testid='stSidebarNav'] a", has_text="Memory").first.click()
    _settled(page, "Memory")
    page.get_by_text("studio-1 · Apple M3 Ultra").first.wait_for(timeout=WAIT_MS)
    _quiet(page, "Memory")  # Back while Memory's run still goes could land before Regressions' state is kept
    assert page.url == f"{server}/memory"  # nothing of Regressions' review leaked into it
    assert page.evaluate("history.length") == before + 2
    page.go_back()  # one press
    _settled(page, "Regressions")
    page.wait_for_function(
        "() => document.querySelector('input[aria-label=\"Scope\"]')?.value === 'chip'", timeout=WAIT_MS
    )
    assert page.url == f"{server}/regressions?{RC_REVIEW}&scope=chip"
    page.close()


def test_the_sidebar_carries_the_review_picked_and_a_menu_visit_says_it_shows_the_default(server, browser):
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.goto(f"{server}/compare?{RC_REVIEW}", timeout=WAIT_MS)
    _settled(page, "Compare")
    page.get_by_role("combobox", name="Candidate").click()
    page.get_by_role("option", name="2.16.0.dev20261202", exact=False).first.click()
    page.wait_for_function("() => location.search.includes('dev20261202')", timeout=WAIT_MS)
    _settled(page, "Compare")
    before = page.evaluate("history.length")
    page.get_by_role("link", name="Regressions of this review").click()
    _settled(page, "Regressions")
    assert page.url == f"{server}/regressions?baseline=torch%3D2.14.1&candidate=torch%3D2.16.0.dev20261202&scope=chip"
    assert page.get_by_role("combobox", name="Candidate").input_value().startswith("torch 2.16.0.dev20261202")
    assert page.evaluate("history.length") == before + 1
    assert "Showing the default review" not in page.inner_text("body")
    page.locator("[data-testid='stSidebarNav'] a", has_text="Noise").first.click()
    _quiet(page, "Noise")  # a click while the Noise run still goes would find Regressions' menus as they were
    page.locator("[data-testid='stSidebarNav'] a", has_text="Regressions").first.click()
    _settled(page, "Regressions")
    page.get_by_text("Showing the default review").wait_for(timeout=WAIT_MS)  # the menu's link: said so
    assert "dev20261202" in page.get_by_role("link", name="Compare of this review").get_attribute("href")
    page.close()


def test_a_typed_token_survives_a_reload_and_leaves_nothing_in_the_address(server, browser):
    page = browser.new_page()
    sent = []
    page.on("request", lambda r: sent.append(r.url))
    page.goto(f"{server}/signin", timeout=WAIT_MS)
    page.get_by_label("Token", exact=False).fill(TOKEN)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("Signed in as browser").wait_for(timeout=WAIT_MS)
    page.wait_for_function("() => location.search === ''", timeout=WAIT_MS)
    page.wait_for_function(IDLE, timeout=WAIT_MS)
    assert _cookie(page, "mpsbench_session")  # the ticket's cookie, set
    page.reload(timeout=WAIT_MS)
    page.get_by_text("Signed in as browser").wait_for(timeout=WAIT_MS)
    assert page.url == f"{server}/signin" and page.evaluate("history.length") == 2  # the ticket's entry replaced
    assert not [url for url in sent if TOKEN in url]
    page.context.clear_cookies()
    page.close()


def test_a_refused_triage_link_keeps_the_comment_and_link(server, browser):
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.goto(f"{server}/regressions?{RC_REVIEW}&token={TOKEN}", timeout=WAIT_MS)  # signed in by the link
    comment = page.get_by_label("Comment")
    comment.wait_for(timeout=WAIT_MS)
    page.wait_for_function(IDLE, timeout=WAIT_MS)
    comment.fill("bisected to #123")
    page.get_by_label("Link (http(s)://…)").fill("not a url")
    page.get_by_role("button", name="Save triage").click()
    page.get_by_text("link: must be empty or an http").first.wait_for(timeout=WAIT_MS)
    page.wait_for_function(IDLE, timeout=WAIT_MS)
    assert comment.input_value() == "bisected to #123"
    assert page.get_by_label("Link (http(s)://…)").input_value() == "not a url"
    page.context.clear_cookies()
    page.close()
