"""Look at every page as a user would: `mpsbench serve` on a fresh seeded store (tests/seed.py), bound to
127.0.0.1, each page opened in headless Chromium and saved as a PNG (a tall window: the page scrolls inside it), with any error or exception text
the page shows printed beside its name.

    python -m tests.screenshots OUTDIR
"""
from __future__ import annotations

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

from db.store.engine import open_store
from pages.navigation import PAGES
from tests.seed import BASELINE, CANDIDATE, seed_store

CHROMIUM = "/usr/bin/chromium"
QUERY = {"compare": f"?baseline={BASELINE}&candidate={CANDIDATE}", "regressions": f"?baseline={BASELINE}&candidate={CANDIDATE}",
         "runs": "?build=2.14.1&run_id=5eed" + "0" * 28, "memory": "?split_tag=role"}
PROBLEMS = "[data-testid='stException'], [data-testid='stAlertContentError']"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(out: Path) -> int:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="mpsbench-shots-"))
    path = work / "seeded.duckdb"
    engine = open_store(path)
    seed_store(engine)
    engine.dispose()
    port = _port()
    mpsbench = Path(sys.executable).with_name("mpsbench")
    server = subprocess.Popen([str(mpsbench), "serve", "--port", str(port), "--address", "127.0.0.1"], env={**os.environ, "MPSBENCH_DB": str(path)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    base, bad = f"http://127.0.0.1:{port}", 0
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/api/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 2400})
            for _, title, url_path in PAGES:
                where = "" if url_path == "overview" else url_path  # the default page lives at "/" only
                page.goto(f"{base}/{where}{QUERY.get(url_path, '')}")
                page.wait_for_selector("h1", timeout=120_000)
                page.wait_for_timeout(8000)  # widgets, charts and tables draw after the title
                problems = [e.inner_text()[:300] for e in page.query_selector_all(PROBLEMS)]
                page.screenshot(path=str(out / f"{url_path}.png"), full_page=True)
                print(f"{title:12} {'; '.join(problems) or 'ok'}")
                bad += bool(problems) and url_path != "correctness"  # the seeded M2 is faster but wrong
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "screenshots")))
