"""User text in an error box in a real browser (Chromium, `streamlit run app.py`, the server fixture of
tests/test_browser_compare.py): Streamlit renders GitHub-flavoured Markdown, which turns a bare URL into a link
(autolink literals) where CommonMark would not; pages.parts.plain must leave no link for it to make. The
AppTest (tests/test_user_text_markup.py) reads only the Markdown source, so it could not see this."""

from __future__ import annotations

from urllib.parse import quote

from pages.parts.plain import JOINER
from tests.test_browser_compare import CHROMIUM, CHROMIUM_ARGS, PAGE_S

HOSTILE = [
    "[login](https://evil.example/login) https://evil.example/a www.evil.example/b",  # each within the
    "mail@evil.example <https://evil.example/d> WWW.evil.example/e",
]  # error's first 100 characters


def test_a_url_typed_into_the_compare_link_is_no_link_in_the_error_box(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            for hostile in HOSTILE:
                page.goto(
                    f"{server}/compare?baseline={quote(hostile)}&candidate=torch%3D2.15.0rc1", timeout=PAGE_S * 1000
                )
                box = page.locator("[data-testid='stAlert']", has_text="evil").first
                box.wait_for(timeout=PAGE_S * 1000)
                shown = box.inner_text().replace(JOINER, "")
                assert hostile in shown, shown  # the text is there, as typed …
                links = box.locator("a")  # the box's own text (the sidebar's review links carry it URL-encoded)
                assert links.count() == 0, [
                    links.nth(i).get_attribute("href") for i in range(links.count())
                ]  # … no link
        finally:
            browser.close()
