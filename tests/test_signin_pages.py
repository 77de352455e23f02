"""The pages write only after sign-in (Streamlit AppTest): Upload and the triage form refuse a session without a
write token, the triage author is the signed-in name, the Upload page holds to the server's size limit, and
error boxes show user text as text."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from sqlalchemy import text
from streamlit.testing.v1 import AppTest

from benchmarks.stores.seed import seed_store
from db.store.engine import open_store
from pages.parts.plain import JOINER, plain
from tests.dashboard_bundles import known_bundle, raw
from tests.page_store import SCRIPT, TIMEOUT_S, page_store
from tests.page_store import open_page as _page

ENV = (
    "MPSBENCH_UPLOAD_TOKENS",
    "MPSBENCH_UPLOAD_TOKENS_FILE",
    "MPSBENCH_ADMIN_TOKENS",
    "MPSBENCH_READ_TOKENS",
    "MPSBENCH_MAX_UPLOAD_MB",
)


def _store(tmp_path, monkeypatch, fill=lambda engine: None) -> Path:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "ci-mac-1=tok-ci,alice=tok-alice")
    monkeypatch.setenv("MPSBENCH_READ_TOKENS", "")
    return page_store(tmp_path, monkeypatch, fill, "pages.duckdb")


def _rows(path: Path, sql: str) -> list:
    engine = open_store(path)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(sql)).fetchall()]
    finally:
        engine.dispose()


def _good() -> bytes:
    return raw(known_bundle(0, "2.14.1", "stable", 10.0, 60.0, True))


def test_upload_without_sign_in_offers_no_uploader_and_a_wrong_token_changes_nothing(tmp_path, monkeypatch):
    path = _store(tmp_path, monkeypatch)
    at = _page("upload.py")
    assert not at.exception and len(at.file_uploader) == 0
    assert any("Sign in to upload" in w.value for w in at.warning)
    at.text_input[0].input("tok-wrong")
    at.button[0].click()
    at.run()
    assert len(at.file_uploader) == 0 and any("not known" in e.value for e in at.error)
    at.text_input[0].input("tok-alice")
    at.button[0].click()
    at.run()
    assert len(at.file_uploader) == 1 and any("Signed in as alice" in t.value for t in at.markdown)
    assert _rows(path, "SELECT count(*) FROM runs") == [(0,)]  # nothing stored by any of that
    at.file_uploader[0].set_value([("good.json", _good(), "application/json")])
    at.run()
    assert at.dataframe[0].value.iloc[0]["outcome"] == "new"
    assert _rows(path, "SELECT uploaded_by FROM runs") == [("alice",)]


def test_a_link_with_the_token_signs_in_and_leaves_the_address_bar(tmp_path, monkeypatch):
    _store(tmp_path, monkeypatch)
    at = _page("upload.py", {"token": "tok-ci"})
    assert len(at.file_uploader) == 1 and "token" not in at.query_params
    assert any("Signed in as ci-mac-1" in t.value for t in at.markdown)


def test_the_upload_page_states_and_keeps_the_servers_size_limit(tmp_path, monkeypatch):
    path = _store(tmp_path, monkeypatch)
    good = _good()
    monkeypatch.setenv("MPSBENCH_MAX_UPLOAD_MB", repr((len(good) - 1) / 2**20))  # one byte too small
    at = _page("upload.py", token="tok-alice")
    assert any(f"({len(good) - 1:,} bytes) each" in t.value for t in at.markdown)
    at.file_uploader[0].set_value([("big.json", good, "application/json")])
    outcome = at.run().dataframe[0].value.iloc[0]
    assert outcome["outcome"] == "refused" and "above the server's limit" in outcome["detail"]
    assert _rows(path, "SELECT count(*) FROM runs") == [(0,)]


@pytest.mark.parametrize(
    ("mb", "words", "picker_mb"), [(None, "64 MiB (67,108,864 bytes)", 68), ("100", "100 MiB (104,857,600 bytes)", 105)]
)
def test_the_file_picker_takes_every_bundle_the_api_takes_and_both_state_one_limit(
    tmp_path, monkeypatch, mb, words, picker_mb
):
    """The picker counts 1 MB as 1,000,000 bytes: at 64 it refused a 65,257,167-byte bundle the API stored (its
    limit is 64 MiB = 67,108,864 bytes). Its MB is now rounded up from the API's limit, and a bare `streamlit run
    app.py` gets the same number as `mpsbench serve` (not Streamlit's 200)."""
    from streamlit import config

    import app

    _store(tmp_path, monkeypatch)
    if mb is None:
        monkeypatch.delenv("MPSBENCH_MAX_UPLOAD_MB", raising=False)
    else:
        monkeypatch.setenv("MPSBENCH_MAX_UPLOAD_MB", mb)
    at = _page("upload.py", token="tok-alice")
    picker = at.file_uploader[0].proto.max_upload_size_mb
    assert picker == picker_mb and picker * 10**6 >= int(float(mb or 64) * 2**20) >= 65_257_167
    assert any(f"at most {words} each" in t.value for t in at.markdown)
    saved = config.get_option("server.maxUploadSize")
    try:
        app.apply_upload_limit()  # what app.py does on import, under serve and a bare streamlit run alike
        assert config.get_option("server.maxUploadSize") == picker_mb  # Streamlit's route counts MiB: ≥ the limit
    finally:
        config.set_option("server.maxUploadSize", saved)


SIDES = {"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"}


def test_triage_needs_sign_in_and_its_author_is_the_signed_in_name(tmp_path, monkeypatch):
    path = _store(tmp_path, monkeypatch, seed_store)
    anonymous = _page("regressions.py", SIDES)
    assert not anonymous.exception and len(anonymous.dataframe) >= 1  # the review itself stays readable
    assert "Save triage" not in [b.label for b in anonymous.button]
    assert any("Sign in to triage" in w.value for w in anonymous.warning)
    at = _page("regressions.py", SIDES, token="tok-alice")
    assert [t.label for t in at.text_input if "Author" in t.label] == []  # no free-text author
    picked = next(s for s in at.selectbox if s.label == "Regression")
    first = picked.options[0]  # the option as shown
    assert "{" not in first and at.dataframe[1].value.iloc[0]["case"] in first  # the table's name, not the key JSON
    at.text_area[0].input("seen on two machines")
    next(b for b in at.button if b.label == "Save triage").click()
    at.run()
    assert not at.exception
    assert _rows(path, "SELECT author, comment FROM review_notes") == [("alice", "seen on two machines")]
    assert at.text_area[0].value == "seen on two machines"  # saved: the form shows the saved note (issue 44)


def test_a_refused_triage_link_is_named_and_the_comment_and_link_stay(tmp_path, monkeypatch):
    path = _store(tmp_path, monkeypatch, seed_store)
    at = _page("regressions.py", SIDES, token="tok-alice")
    at.text_area[0].input("bisected to #123")
    next(t for t in at.text_input if t.label.startswith("Link")).input("not a url")
    next(b for b in at.button if b.label == "Save triage").click()
    at.run()
    assert not at.exception and any("link: must be empty or an http" in e.value for e in at.error)
    assert at.text_area[0].value == "bisected to #123"
    assert next(t for t in at.text_input if t.label.startswith("Link")).value == "not a url"
    assert _rows(path, "SELECT count(*) FROM review_notes") == [(0,)]


def test_with_read_tokens_a_session_sees_only_the_sign_in_page(tmp_path, monkeypatch):
    _store(tmp_path, monkeypatch, seed_store)
    monkeypatch.setenv("MPSBENCH_READ_TOKENS", "dash=tok-read")
    at = AppTest.from_file(SCRIPT, default_timeout=TIMEOUT_S).run()
    assert [t.value for t in at.title] == ["Sign in"] and not at.dataframe
    with pytest.raises(ValueError, match="Known pages: .*signin.py'\\]"):
        at.switch_page("overview.py")  # not even registered: a deep link gets the sign-in page only
    at.text_input[0].input("tok-read")
    at.button[0].click()
    at.run()
    assert any("Signed in as dash (read only)" in t.value for t in at.text)
    at.switch_page("overview.py")
    at.query_params.clear()  # as a browser's page change does
    assert "Overview" in [t.value for t in at.run().title]  # signed in as a reader: the dashboard opens
    up = _page("upload.py", token="tok-read")
    assert len(up.file_uploader) == 0 and any("may read only" in w.value for w in up.warning)


@pytest.mark.parametrize(
    "hostile",
    [
        "[Reset your password](https://evil.example/login)",
        "see https://evil.example/x now",
        "www.evil.example",
        "mail ops@evil.example",
        "![x](https://evil.example/p.png)",
        "<a href='https://evil.example'>x</a>",
        "**bold** _em_ `code` ~~strike~~ $x^2$",
        ":red[alert] \\[escaped\\]",
        "op_time: 5 < 6 & 7 > 2",
    ],
)
def test_plain_text_renders_as_typed_without_links(hostile):
    shown = MarkdownIt("commonmark").render(plain(hostile))
    assert "<a " not in shown and "<img" not in shown and "<strong>" not in shown and "<em>" not in shown
    assert "<code>" not in shown
    assert "https://" not in plain(hostile) and "www." not in plain(hostile)  # no GFM autolink literal either
    as_text = html.unescape(re.sub(r"<[^>]+>", "", shown)).strip()
    assert as_text.replace(JOINER, "") == hostile  # what the reader sees is exactly what was typed (the joiner
    # that splits an autolink literal has no width: tests/test_browser_plain.py checks it in Chromium)


def test_a_store_error_box_carrying_a_link_shows_it_as_text(tmp_path, monkeypatch):
    _store(tmp_path, monkeypatch, seed_store)
    bad = "[click](https://evil.example)"
    at = _page("compare.py", {"baseline": bad, "candidate": "torch=2.15.0rc1"})
    errors = [e.value for e in at.error]
    assert errors and all("](https://" not in e and "https://" not in e for e in errors), errors
    assert any("\\[click\\]" in e for e in errors)
