"""One real-browser test: `mpsbench serve` on a seeded store (two chips, two builds: benchmarks/stores/seed.py), the
Compare page in Chromium (the verdict card of each chip with its counts, a regression drawn in the ratio chart, the
status-change panel), the upload API of the same process (token from MPSBENCH_UPLOAD_TOKENS), and a
bundle's HTML-looking machine name shown as text on its run's page."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from benchmarks.stores.seed import seed_store
from db.store.engine import open_store
from db.views.release.verdict_cards import counts_words
from tests.dashboard_bundles import MACHINE_NAME, known_bundle, raw

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
START_S, PAGE_S = 90.0, 60.0  # bounds for a loaded 2-core machine
TOKEN = "browser-test-token"
COMPARE_QUERY = "baseline=torch%3D2.14.1&candidate=torch%3D2.15.0rc1&scope=chip"  # the seed's builds, per chip
# benchmarks/stores/seed.py, per chip in bfloat16 eager: linear q 0.8× the time (faster), linear k_v 1.1× (slower: the one
# regression, 10 % > the 5 % threshold), linear o unchanged; grouped_mm falls back to the CPU on the candidate
CARDS = ["Apple M3 Ultra (80-core GPU) · bfloat16 · eager", "Apple M2 (10-core GPU) · bfloat16 · eager"]
CARD_LINES = [
    "1 case regressed",
    "1 regressed · ",
    "status changes: 1 now falls back to the CPU",
]  # Compare's own kind words; the counts are of cases (db.views.release.verdict_cards.counts_words: checked below)
DETAIL = "Detail: one card per chip"  # the per dtype · compile cards, below each chip's answer
# Vega's SVG marks carry their datum in aria-label: the regression's bar, coloured "worse"
REGRESSION_BAR = (
    "[data-testid='stVegaLiteChart'] svg [aria-roledescription='bar'][aria-label*='linear k_v']"
    "[aria-label*='direction: worse'][aria-label*='regression: true']"
)
DRAWN = "[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg"
STATUS = "2 newly supported"  # fp8 on each of the seed's two chips: unsupported → ok


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(base: str, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"streamlit exited early with {server.returncode}")
        try:
            if httpx.get(f"{base}/api/v1/health", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"the dashboard did not answer /api/v1/health within {START_S:.0f} s")


@contextmanager
def streamlit_server(path: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """`mpsbench serve` on the store at `path` (127.0.0.1, a free port), its base URL while it runs; the
    process group it started is stopped after."""
    port = _free_port()
    cmd = [sys.executable, "-m", "mpsbench", "serve", "--address", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env={**os.environ, "MPSBENCH_DB": str(path), **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(base, proc)
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # our own process group, started above
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


@contextmanager
def served_store(path: Path, fill, env: dict[str, str] | None = None) -> Iterator[str]:
    """A store at `path` filled by `fill(engine)`, served (streamlit_server); skipped without Chromium."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium); the real-browser test needs it")
    engine = open_store(path)
    fill(engine)
    engine.dispose()
    with streamlit_server(path, env) as base:
        yield base


@contextmanager
def serving(tmp: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """The seeded store (benchmarks/stores/seed.py) in `tmp`, served with the upload token TOKEN (and `env`)."""
    with served_store(
        tmp / "seeded.duckdb", seed_store, {"MPSBENCH_UPLOAD_TOKENS": f"browser={TOKEN}", **(env or {})}
    ) as base:
        yield base


def _upload(server: str, bundle, token: str) -> httpx.Response:
    return httpx.post(
        f"{server}/api/v1/runs",
        content=raw(bundle),
        timeout=30.0,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )


def test_compare_page_in_a_browser_and_upload_api(server):
    from playwright.sync_api import sync_playwright

    bundle = known_bundle(5, "2.16.0.dev20261201", "nightly", 9.0, 50.0, True)
    assert _upload(server, bundle, "wrong-token").status_code == 401  # the server really reads our token
    answer = _upload(server, bundle, TOKEN)
    assert answer.status_code == 201, answer.text
    assert answer.json()["run_id"] == bundle.run_id
    assert _upload(server, bundle, TOKEN).status_code == 200  # already present: idempotent
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(f"{server}/compare?{COMPARE_QUERY}", timeout=PAGE_S * 1000)
            page.wait_for_selector(DRAWN, timeout=PAGE_S * 1000)  # the ratio chart, drawn by Vega
            page.get_by_text(DETAIL, exact=False).first.click()  # the detail cards, folded under the answers
            page.get_by_text(STATUS, exact=False).first.wait_for(timeout=PAGE_S * 1000)
            for title in CARDS:
                card = page.locator("[data-testid='stVerticalBlock']", has_text=title).last  # the innermost: the card
                text = card.inner_text(timeout=PAGE_S * 1000)
                assert all(line in text for line in CARD_LINES), (title, text)
            # every card says what the API's summary says of its group: its counts, or why nothing was compared
            groups = httpx.get(f"{server}/api/v1/compare?{COMPARE_QUERY}", timeout=PAGE_S).json()["summary"]["groups"]
            assert 5 <= len(groups) <= 9  # all drawn (pages/parts/verdict.py SHOWN)
            for g in groups:
                title = f"{g['scope']} · {g['dtype']} · {g['compile']}"
                text = page.locator("[data-testid='stVerticalBlock']", has_text=title).last.inner_text(
                    timeout=PAGE_S * 1000
                )
                said = counts_words(g) if g["compared"] else g["verdict"]
                assert g["verdict"] in text and said in text, (title, said, text)
            assert page.locator(REGRESSION_BAR).count() == 2  # k_v on each chip
            body = page.inner_text("body")
            assert "Per family geomean" in body and "Status changes" in body and "baseline torch=2.14.1" in body
            page.goto(f"{server}/runs?run_id={bundle.run_id}", timeout=PAGE_S * 1000)
            page.get_by_text("Run provenance").wait_for(timeout=PAGE_S * 1000)
            in_code = (
                "() => [...document.querySelectorAll('[data-testid=stCode]')]"
                f".some(e => e.innerText.includes({json.dumps(MACHINE_NAME)}))"
            )
            page.wait_for_function(in_code, timeout=PAGE_S * 1000)  # the provenance shows "mac <b>studio</b>"
            assert page.locator("b", has_text="studio").count() == 0  # and never turned into markup
            page.goto(f"{server}/overview", timeout=PAGE_S * 1000)  # the default page, by its own name
            page.get_by_text("Machines × builds").wait_for(timeout=PAGE_S * 1000)
            assert page.url == f"{server}/" and "Page not found" not in page.inner_text("body")
        finally:
            browser.close()
