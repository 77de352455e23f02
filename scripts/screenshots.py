"""Look at every page as a user would, and time it: `mpsbench serve` on a fresh seeded store (benchmarks/stores/seed.py: two
builds on three Macs of two chips, plus later builds for trends), bound to 127.0.0.1; each page opened in headless
Chromium at 1440×900 (--width: another window width; 1280 and 1920 are the other common ones) and saved as
OUTDIR/<page>.png (the first screen, what a person sees without scrolling) and OUTDIR/<page>-tall.png (2700 px
tall, the rest), with any error or exception text the page shows printed beside it.

Per page it prints two load times from the navigation's start: first content (the page's title drawn) and settled
(Streamlit's running indicator gone and every chart drawn, unchanged for QUIET_S). Times depend on the machine's
load: the script prints `uptime` beside them. --json writes them as JSON too.

    python -m scripts.screenshots OUTDIR [--json FILE] [--width PX]   (from the repository root: it seeds with
    benchmarks/stores/seed.py)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.stores.seed import BASELINE, CANDIDATE, seed_store
from db.store.engine import open_store
from pages.navigation import PAGES

ROOT = Path(__file__).resolve().parent.parent

CHROMIUM = "/usr/bin/chromium"
SIDES = f"?baseline={BASELINE}&candidate={CANDIDATE}"  # the question: 2.15.0rc1 against 2.14.1
QUERY = {"compare": SIDES, "regressions": SIDES, "runs": "?build=2.14.1&run_id=5eed" + "0" * 28}
PROBLEMS = "[data-testid='stException'], [data-testid='stAlertContentError']"
VIEWPORT, TALL = {"width": 1440, "height": 900}, {"width": 1440, "height": 2700}
PAGE_S, QUIET_S = 120.0, 1.0
# busy while Streamlit runs the script (status widget) or a chart has not drawn its canvas/svg yet
BUSY_JS = """() => !!document.querySelector("[data-testid='stStatusWidget']")
  || document.querySelectorAll("[data-testid='stSpinner']").length > 0
  || [...document.querySelectorAll("[data-testid='stVegaLiteChart']")].some(c => !c.querySelector('canvas, svg'))"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _settle(page, start: float) -> float:
    """Seconds from `start` to the moment the page went quiet and stayed quiet for QUIET_S."""
    quiet_since = None
    while time.monotonic() - start < PAGE_S:
        if page.evaluate(BUSY_JS):
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= QUIET_S:
            return quiet_since - start
        page.wait_for_timeout(50)
    return float("nan")


def _open(page, url: str) -> tuple[float, float]:
    start = time.monotonic()
    page.goto(url, timeout=PAGE_S * 1000)
    page.wait_for_selector("h1", timeout=PAGE_S * 1000)
    first = time.monotonic() - start
    return first, _settle(page, start)


def main(out: Path, json_path: Path | None, width: int = VIEWPORT["width"]) -> int:
    from playwright.sync_api import sync_playwright

    viewport, tall = {**VIEWPORT, "width": width}, {**TALL, "width": width}
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="mpsbench-shots-"))
    path = work / "seeded.duckdb"
    engine = open_store(path)
    seed_store(engine)
    engine.dispose()
    port = _port()
    mpsbench = Path(sys.executable).with_name("mpsbench")
    server = subprocess.Popen(
        [str(mpsbench), "serve", "--port", str(port), "--address", "127.0.0.1"],
        env={**os.environ, "MPSBENCH_DB": str(path)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base, bad, timings = f"http://127.0.0.1:{port}", 0, []
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/api/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            page = browser.new_page(viewport=viewport)
            _open(page, f"{base}/")  # warm the server's caches once; each page is then timed as a user opens it
            for _, title, url_path in PAGES:
                url = f"{base}/{url_path}{QUERY.get(url_path, '')}"  # /overview redirects to /, the default page
                page.set_viewport_size(viewport)
                first, settled = _open(page, url)
                problems = [e.inner_text()[:300] for e in page.query_selector_all(PROBLEMS)]
                page.screenshot(path=str(out / f"{url_path}.png"))
                page.set_viewport_size(tall)
                page.wait_for_timeout(1500)  # the page re-lays itself out for the taller window
                page.screenshot(path=str(out / f"{url_path}-tall.png"))
                timings.append({"page": title, "first_content_s": round(first, 2), "settled_s": round(settled, 2)})
                print(
                    f"{title:12} first content {first:5.2f} s  settled {settled:5.2f} s  {'; '.join(problems) or 'ok'}",
                    flush=True,
                )
                bad += bool(problems) and url_path != "correctness"  # the seeded M2 is faster but wrong
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # our own process group, started above
        server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)")
    if json_path:
        json_path.write_text(json.dumps({"pages": timings, "loadavg": load, "cpus": os.cpu_count()}, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default="screenshots", type=Path)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--width", type=int, default=VIEWPORT["width"], help="window width in px (default 1440)")
    args = parser.parse_args()
    sys.exit(main(args.out, args.json, args.width))
