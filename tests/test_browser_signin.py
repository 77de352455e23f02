"""The sign-in link in a real browser (Chromium, `streamlit run app.py`, the server fixture of
tests/test_browser_compare.py): the token leaves before the page loads (not in the address bar, the session
history or any Referer), the page is signed in, and a reload stays signed in (the session cookie)."""

from __future__ import annotations

from tests.test_browser_compare import CHROMIUM, CHROMIUM_ARGS, PAGE_S, TOKEN

SIGNED_IN = "Signed in as browser"


def test_the_sign_in_link_leaves_no_token_behind_and_survives_a_reload(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            sent = []  # every request the page made, with its Referer
            page.on("request", lambda r: sent.append((r.url, r.headers.get("referer") or "")))
            first = page.goto(f"{server}/upload?token={TOKEN}", timeout=PAGE_S * 1000)
            page.get_by_text(SIGNED_IN).wait_for(timeout=PAGE_S * 1000)
            assert first.headers["x-frame-options"] == "DENY"  # Streamlit's own page carries the headers
            assert first.headers["referrer-policy"] == "no-referrer"
            assert "frame-ancestors 'none'" in first.headers["content-security-policy"]
            assert page.url == f"{server}/upload"
            cookies = page.context.cookies()
            session = [c for c in cookies if c["name"] == "mpsbench_session"]
            assert session and session[0]["httpOnly"] and session[0]["sameSite"] == "Strict"
            assert TOKEN not in session[0]["value"] and page.evaluate("document.cookie").find(TOKEN) == -1
            page.reload(timeout=PAGE_S * 1000)
            page.get_by_text(SIGNED_IN).wait_for(timeout=PAGE_S * 1000)  # still signed in
            uploader = page.locator("[data-testid='stFileUploader']")
            uploader.first.wait_for(
                timeout=PAGE_S * 1000
            )  # drawn after the signed-in line: a loaded box shows it later
            assert uploader.count() == 1
            assert page.url == f"{server}/upload"
            leaked = [(url, ref) for url, ref in sent[1:] if TOKEN in url or TOKEN in ref]
            assert len(sent) > 5 and not leaked, leaked[:3]  # only the link itself carried it
            visited = []  # the session history, walked back to its start: the redirect replaced the link's entry
            for _ in range(page.evaluate("history.length")):
                visited.append(page.url)
                page.go_back(timeout=PAGE_S * 1000)
            assert visited and not [url for url in visited + [page.url] if TOKEN in url], visited
        finally:
            browser.close()
