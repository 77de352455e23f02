"""The Compare page's ratio chart in Chromium at the common window widths (1280, 1440, 1920 px): every bar lies
inside the plot, every case keeps its label (none dropped, none cut at the chart's left edge, none reaching into
the plot) and the axis title fits the chart. Boxes are read from Vega's SVG marks (Streamlit renders the chart as
SVG; each bar carries aria-roledescription="bar"); the plot is the root frame's background, Vega's data
rectangle. MPSBENCH_SHOTS=DIR saves the chart at each width as DIR/compare-chart-<width>.png."""

from __future__ import annotations

import os
from pathlib import Path

from tests.test_browser_compare import CHROMIUM, CHROMIUM_ARGS, COMPARE_QUERY, PAGE_S

WIDTHS = (1280, 1440, 1920)
CHART = "[data-testid='stVegaLiteChart']"
SLACK_PX = 1.5  # anti-aliased edges and the bars' half-pixel offsets
MEASURE = """chart => {
  const svg = chart.querySelector('svg'), box = e => e.getBoundingClientRect();
  const plot = box(svg.querySelector('.role-frame.root > g > path.background'));
  const yAxis = [...svg.querySelectorAll('.role-axis')].find(a => (a.getAttribute('aria-label') || '').startsWith('Y-axis'));
  const xAxis = [...svg.querySelectorAll('.role-axis')].find(a => (a.getAttribute('aria-label') || '').startsWith('X-axis'));
  const rect = r => ({left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height});
  return {svg: rect(box(svg)), chart: rect(box(chart)), plot: rect(plot),
          bars: [...svg.querySelectorAll('.role-mark [aria-roledescription=bar]')].map(e => rect(box(e))),
          labels: [...yAxis.querySelectorAll('.role-axis-label text')].filter(t => t.textContent.trim()).map(t => rect(box(t))),
          title: [...xAxis.querySelectorAll('.role-axis-title text')].map(t => rect(box(t)))};
}"""


def _inside(inner: dict, outer: dict) -> bool:
    return (
        inner["left"] >= outer["left"] - SLACK_PX
        and inner["right"] <= outer["right"] + SLACK_PX
        and inner["top"] >= outer["top"] - SLACK_PX
        and inner["bottom"] <= outer["bottom"] + SLACK_PX
    )


def test_the_ratio_chart_draws_inside_its_plot_at_every_common_width(server):
    from playwright.sync_api import sync_playwright

    shots = os.environ.get("MPSBENCH_SHOTS")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            for width in WIDTHS:
                page = browser.new_page(viewport={"width": width, "height": 1000})
                page.goto(f"{server}/compare?{COMPARE_QUERY}", timeout=PAGE_S * 1000)
                page.wait_for_selector(f"{CHART} svg [aria-roledescription='bar']", timeout=PAGE_S * 1000)
                chart = page.locator(CHART).first
                got = chart.evaluate(MEASURE)
                bars, labels, plot = got["bars"], got["labels"], got["plot"]
                assert len(bars) >= 10, (width, len(bars))  # the seed's ratio cases
                assert plot["width"] >= 0.4 * got["svg"]["width"], (width, plot, got["svg"])  # room for the bars
                outside = [b for b in bars if not _inside(b, plot)]
                assert not outside, (width, plot, outside[:3])
                assert len(labels) >= len(bars), (width, len(labels), len(bars))  # no label dropped
                assert all(t["left"] >= got["svg"]["left"] - SLACK_PX and t["right"] <= plot["left"] for t in labels)
                tops = sorted(t["top"] for t in labels)
                assert got["title"] and all(_inside(t, got["svg"]) for t in got["title"]), (width, got["title"])
                assert got["svg"]["right"] <= got["chart"]["right"] + SLACK_PX  # the chart fits its column
                assert tops == sorted(set(tops))  # one label block per row, none drawn over another
                if shots:
                    Path(shots).mkdir(parents=True, exist_ok=True)
                    chart.screenshot(path=str(Path(shots) / f"compare-chart-{width}.png"))
                page.close()
        finally:
            browser.close()
