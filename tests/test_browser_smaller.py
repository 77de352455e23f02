"""Issue 35's smaller items in Chromium at 1280, 1440 and 1920 px, on tests/release_walk.py's store with its extras
(memory peaks per Mac, an NVIDIA run of a CUDA build that sorts first): the Matrix opens on a comparison that exists
and labels every cell and its legend; Trends' dtype and compile menus are wide enough to read; the M3 Ultra's
live-tensor bars are drawn on their own axis, not squashed by its 270 GiB driver total; Compare's chart says its
order and stays short; a card's memory win is green. (Table headers and "—": tests/test_table_columns.py.)"""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from tests import release_walk as w
from tests.test_browser_compare import CHROMIUM, CHROMIUM_ARGS, PAGE_S, served_store
from tests.test_browser_release import IDLE, QUERY

WIDTHS = (1280, 1440, 1920)
SVG = "[data-testid='stVegaLiteChart'] svg"


@pytest.fixture(scope="module")
def extras_server(tmp_path_factory):
    path = tmp_path_factory.mktemp("smaller") / "walk.duckdb"
    with served_store(path, lambda engine: w.walk_extras_store(engine, processes=1, runs=1)) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@contextmanager
def _opened(browser, base: str, path: str, width: int):
    """A page of `path` at `width` px, its first chart drawn and Streamlit idle; closed after."""
    page = browser.new_page(viewport={"width": width, "height": 1400})
    try:
        page.goto(f"{base}/{path}", timeout=PAGE_S * 1000)
        page.locator(SVG).first.wait_for(timeout=PAGE_S * 1000)
        page.wait_for_function(IDLE, timeout=PAGE_S * 1000)
        yield page
    finally:
        page.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_matrix_opens_on_a_comparison_that_exists_every_cell_labelled(extras_server, browser, width):
    with _opened(browser, extras_server, "matrix", width) as page:
        assert "Nothing compared" not in page.inner_text("body")
        drawn = page.locator(SVG).first.inner_html()
        # the CUDA build's column: "not run" on both Macs (a blank cell once); the legend's readable steps
        assert drawn.count(">not run<") == 2, drawn[:400]
        assert ">1×<" in drawn and "baseline 2.14.1" in drawn
        assert "Grey cells: not run" in page.inner_text("body")


@pytest.mark.parametrize("width", WIDTHS)
def test_trends_dtype_and_compile_menus_are_wide_enough_to_read(extras_server, browser, width):
    with _opened(browser, extras_server, "trends", width) as page:
        for label, value in (("dtype", "bfloat16"), ("Compile", "eager")):  # the walk's first case: decode memory
            menu = page.locator(f"[data-testid='stSelectbox'] input[aria-label='{label}']").first
            assert menu.input_value() == value
            assert menu.bounding_box()["width"] >= 150, (label, menu.bounding_box())  # 56 px read "fl", "e"
            # the whole value is shown: the text is no wider than its box
            assert menu.evaluate("e => e.scrollWidth <= e.clientWidth"), label


@pytest.mark.parametrize("width", WIDTHS)
def test_memory_bars_are_drawn_on_their_own_figures_axis(extras_server, browser, width):
    with _opened(browser, extras_server, "memory", width) as page:
        studio = page.locator("[data-testid='stVegaLiteChart']").nth(1)  # panels by machine: mbp-m4pro, studio-m3u
        bar = studio.locator(
            "svg [aria-roledescription='bar'][aria-label*='live tensors peak']"
            "[aria-label*='side: baseline'][aria-label*='6.000']"
        ).first
        # 6 GiB on the live tensors' own axis (0–6) fills its 150-px column; on a shared 270 GiB axis it was 3 px
        assert bar.bounding_box()["width"] > 100, bar.bounding_box()


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_chart_says_its_order_stays_short_and_a_memory_win_is_green(extras_server, browser, width):
    with _opened(browser, extras_server, f"compare?{QUERY}&scope=chip", width) as page:
        text = page.inner_text("body")
        assert "sorted worst (top) to best (bottom)" in text and "largest changes first" not in text
        # the ratio chart (21 bars of 2–3-line labels, ~1,030 px) scrolls inside a box 900 px high
        chart = page.locator("[data-testid='stVegaLiteChart']").first
        shown = chart.evaluate(
            "e => { let p = e.parentElement; while (p && !['auto', 'scroll'].includes("
            "getComputedStyle(p).overflowY)) p = p.parentElement; return p && p.clientHeight }"
        )
        assert chart.bounding_box()["height"] > 900 and shown is not None and shown <= 900, shown
        win = page.locator("[data-testid='stMarkdownContainer'] span", has_text="1 smaller").first
        assert "rgb(" in win.evaluate("e => getComputedStyle(e).color")
        red, green, blue = (int(x) for x in win.evaluate("e => getComputedStyle(e).color")[4:-1].split(","))
        assert green > red and green > blue, (red, green, blue)  # green, as "1 faster" is
