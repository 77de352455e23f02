"""User text never becomes a link or markup on a page (Streamlit AppTest): a chip name on Overview's verdict
cards and a selector typed into Compare's URL reach Markdown-rendering elements only through pages.parts.plain."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

from db.ingest.core import ingest_bundle
from tests.dashboard_bundles import known_bundles, raw
from tests.page_store import open_page, page_store

HOSTILE = "[M2](https://evil.example/login)"
LIVE = re.compile(r"(?<!\\)\]\(|https?://|www\.")  # a Markdown link, or a bare URL GFM would autolink


def _markdown_texts(at: AppTest) -> list[str]:
    """The source of every element Streamlit renders as Markdown."""
    found = []
    for kind in ("markdown", "caption", "subheader", "title", "header", "error", "warning", "info", "success"):
        found += [str(e.value) for e in getattr(at, kind)]
    return found


def _hostile_chip(engine) -> None:
    for bundle in known_bundles():
        machine = bundle.machine.model_copy(update={"chip": HOSTILE})
        ingest_bundle(engine, raw(bundle.model_copy(update={"machine": machine})), "test")


def test_a_chip_name_on_the_overview_verdict_is_text(tmp_path, monkeypatch):
    page_store(tmp_path, monkeypatch, _hostile_chip)
    at = open_page("overview.py")
    assert not at.exception
    shown = _markdown_texts(at)
    assert any("evil" in t for t in shown), shown  # the card title is there …
    assert not [t for t in shown if "evil" in t and LIVE.search(t)], shown  # … and never a live link


def test_a_selector_in_the_compare_link_is_text(tmp_path, monkeypatch):
    page_store(tmp_path, monkeypatch, _hostile_chip)
    at = open_page("compare.py", {"baseline": HOSTILE, "candidate": "torch=2.15.0rc1"})
    assert not at.exception
    shown = _markdown_texts(at)
    assert any("evil" in t for t in shown), shown
    assert not [t for t in shown if "evil" in t and LIVE.search(t)], shown
