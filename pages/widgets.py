"""Page plumbing: the one cached engine, data-version-keyed result caching, safe errors, empty state, and the
URL-bound picker and text field (a pasted link reproduces the view).

Strings from bundles (tags, messages, names) are rendered through st.dataframe / st.text / st.code only:
they are data, never Markdown or HTML.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, Iterable

import pandas as pd
import streamlit as st
from sqlalchemy import Engine
from streamlit.errors import StreamlitAPIException

from db.errors import StoreError
from db.memory import on_idle
from db.query.read import read_data_version
from db.store.faults import as_store_error
from db.views.columns import FRACTION, PERCENT, TIME, column

log = logging.getLogger("mpsbench.pages")
EMPTY_HINT = (
    "No runs yet: run `mpsbench run …` on a machine (it pushes its bundle here), or upload a bundle on the Upload page."
)


@st.cache_resource(show_spinner=False)
def _engine(db_path: str) -> Engine:
    from db.store.engine import shared_store  # one engine per process (DuckDB has one writer)

    return shared_store()


def engine() -> Engine:
    """The process's store engine, keyed on MPSBENCH_DB so a test with another file gets its own."""
    return _engine(os.environ.get("MPSBENCH_DB", ""))


# a page's views, pickled per (view, arguments, data version), for its reruns (a widget's change): a Memory view of
# a 10 M-result store pickles to 25 MB, a Correctness view to 10 MB, so a few, for two minutes, and none past an
# idle spell (db.memory): 256 of them for good grew a long-running server by hundreds of MB an hour
PAGE_CACHE_ENTRIES, PAGE_CACHE_TTL_S = 16, 120


@st.cache_data(show_spinner=False, max_entries=PAGE_CACHE_ENTRIES, ttl=PAGE_CACHE_TTL_S)
def _cached(name: str, version: Any, args: tuple, _query: Callable) -> Any:
    return _query(engine(), *args)


on_idle(_cached.clear)


def load(query: Callable, *args: Any) -> Any:
    """query(engine, *args), cached until the store's data version changes (a new run was ingested)."""
    name = f"{query.__module__}.{query.__qualname__}:{os.environ.get('MPSBENCH_DB', '')}"
    return _cached(name, read_data_version(engine()), args, query)


JOINER = "\u2060"  # WORD JOINER: splits an autolink literal, shows as nothing (plain)
_ALWAYS = set("\\`*[]<>!#|~$&@")  # links, images, HTML, code, emphasis, tables, math, entities, e-mail autolinks


def upload_limit() -> tuple[int, int, str]:
    """The server's one bundle limit (MPSBENCH_MAX_UPLOAD_MB, default 64, in MiB: db.ingest.limits, as the API
    reads it) as (bytes, the file picker's whole MB, the words for it). The picker counts 1 MB as 1,000,000 bytes
    (1,048,576 on Windows) and Streamlit's upload route as 1,048,576: its MB is rounded up, so neither refuses a
    bundle the API takes (a 65,257,167-byte bundle was refused at "64.0MB" and stored by the API); the page
    itself refuses above the exact limit, as the API does. `mpsbench serve` and a bare `streamlit run app.py`
    set server.maxUploadSize from here (app.apply_upload_limit), one source of the default."""
    import math

    from db.ingest.limits import max_upload_bytes

    limit = max_upload_bytes()
    return limit, max(1, math.ceil(limit / 10**6)), f"{limit / 2**20:.4g} MiB ({limit:,} bytes)"


def plain(text: object) -> str:
    """Text for a Markdown-rendering element (st.error, st.info, st.caption…) shown as typed: the marks that make
    links (also bare http:// and www. autolinks), images, HTML, code, emphasis, :colour[…] and $math$ are
    backslash-escaped (CommonMark shows an escaped mark as itself); words such as op_time stay readable in the
    element's source, since an underscore inside a word is never emphasis. Streamlit renders GitHub-flavoured
    Markdown, whose autolink literals (`https://…`, `www.…`) are found in the parsed text, after escapes and
    character references are read: `https\\://` and `www&#46;` still became links in Chromium. So a WORD JOINER
    (U+2060, invisible, no width) is put inside each, and before an e-mail address's "@": `https:⁠//`, `www⁠.`,
    `mail⁠@…` read the same and are no address to find."""
    text, out = str(text), []
    for i, c in enumerate(text):
        before, after = text[i - 1 : i], text[i + 1 : i + 2]
        if c == ":" and text.startswith("//", i + 1):
            out.append(":" + JOINER)
            continue
        if c == "." and text[max(0, i - 3) : i].lower() == "www":
            out.append(JOINER + ".")
            continue
        if c == "@":  # an e-mail autolink literal (mail@evil.example became a mailto: link)
            out.append(JOINER)
        if c in _ALWAYS or (c == "_" and not (before.isalnum() and after.isalnum())):
            out.append("\\")
        out.append(c)
    return "".join(out)


def guarded(render: Callable[[], None]) -> None:
    """Run a page body (navigation.py runs every page under it too): a store error is shown once as st.error (as plain text); a
    store fault (disk full, locked, damaged) names itself and the store is reopened on the next run
    (db.store.faults); anything else is a short message, its traceback logged on the server, never shown (it
    names server paths). st.stop/st.rerun pass through (BaseException, not Exception)."""
    try:
        render()
    except StoreError as exc:
        st.error(plain(exc))
    except Exception as exc:  # noqa: BLE001 - the page boundary: no traceback reaches the browser
        page_failed(exc)


def page_failed(exc: Exception) -> None:
    """A page's unexpected exception as one short st.error: a store fault (the store reopened on the next run) or
    a server out of memory, threads or file handles names itself (db.store.faults), anything else is logged here
    with its traceback and shown without it."""
    fault = as_store_error(exc)
    if fault is not None:
        st.error(plain(fault))
        return
    log.error("page failed", exc_info=exc)
    st.error("This page failed on the server (the error is logged there). Reload, or try another page.")


def stop_if_empty(frame: pd.DataFrame, what: str = "runs") -> None:
    if frame.empty:
        st.info(EMPTY_HINT if what == "runs" else f"No {what} stored yet.")
        stop()


def stop() -> None:
    """st.stop() after writing this run's URL: once a stop is requested, Streamlit drops every later message
    (navigation.py's flush_params included), so the browser kept the old URL while the server held the new one
    and a later page inherited it."""
    sidebar_review()
    flush_params()
    st.stop()


_REVIEW = "_review"  # session state: the review (baseline, candidate, scope) the last page with one showed
REVIEW_PAGES = (("compare.py", "Compare"), ("regressions.py", "Regressions"))


def shown_review(**sides: str) -> None:
    """Record the review this page shows (called after its pickers), for the sidebar's links: a default review
    (the URL names neither side) only while none was picked, so a visit by the menu keeps the review picked."""
    explicit = url_param("baseline") is not None or url_param("candidate") is not None
    if sides.get("baseline") and sides.get("candidate") and (explicit or _REVIEW not in st.session_state):
        st.session_state.setdefault(_REVIEW, {}).update({k: v for k, v in sides.items() if v})


def sidebar_review() -> None:
    """Links under the sidebar's menu that carry the review last shown to Compare and Regressions (the menu's own
    links open each page's default review). navigation.py draws them after every page run."""
    review = st.session_state.get(_REVIEW)
    if not review:
        return
    scope = f" · {review['scope']} scope" if review.get("scope") else ""
    with st.sidebar:
        st.caption(plain(f"This review: {review['baseline']} → {review['candidate']}{scope}"))
        for file, title in REVIEW_PAGES:
            try:
                st.page_link(file, label=f"{title} of this review", query_params=review)
            except StreamlitAPIException:  # a page run on its own (no navigation: AppTest) has no pages to link
                return


DEFAULT_REVIEW = (
    "Showing the default review, the latest stable build against the newest rc (else nightly) after "
    'it: pick others above, or open a review picked elsewhere from the sidebar\'s "of this review" '
    "links."
)


def say_if_default_review() -> None:
    """A caption when the URL names neither side: the page shows the default, not the review picked elsewhere."""
    if url_param("baseline") is None and url_param("candidate") is None:
        st.caption(DEFAULT_REVIEW)


def picker(
    label: str,
    key: str,
    options: Iterable[Any],
    default: str | None = None,
    *,
    page: str = "qp",
    clean: Callable[[str], str] | None = None,
    format_func: Callable[[str], str] | None = None,
) -> str:
    """A selectbox whose choice lives in st.query_params[key] (set_param: the URL holds what was chosen).

    default None: an optional filter — "(any)" first, then the distinct options sorted; choosing "(any)" removes
    the parameter; a URL value that is none of them is named once (st.error) and dropped. default a string: a
    required choice — the URL's value (else `default`) is chosen, kept even when it is not among `options` (a
    link made on another store). `clean` maps a value read from the URL (e.g. a Compare link's "torch=2.15.0"
    to the Matrix's "2.15.0"). The widget key is `page`_`key`, so pages sharing a parameter name (baseline,
    metric) keep their own widget state. `format_func` shows a value in the menu (e.g. a case's name for its
    JSON key); the URL keeps the value. Back and Forward (or an edited URL) move the menu to the URL's value."""
    asked = url_param(key)
    current = clean(asked) if clean and asked is not None else asked
    if default is None:
        choices = [""] + sorted({str(o) for o in options if o is not None and not pd.isna(o)})
        unknown = bool(current) and current not in choices
        if unknown:  # named once; the link keeps it (rewriting it would add a history entry Back returns to)
            st.error(
                plain(
                    f"{key}: {current[:80]!r} is none of the stored values here, so it is left out (showing any {key})"
                )
            )
        shown = format_func or str
        chosen = st.selectbox(
            label,
            choices,
            key=follow_url(page, key, "" if unknown else current or "", choices),
            format_func=lambda v: shown(v) if v else "(any)",
        )
        if unknown and not chosen:
            return chosen
    else:
        current = default if current is None else current
        options = list(options)
        choices = options if current in options else [current] + options
        widget = follow_url(page, key, current, choices)
        chosen = st.selectbox(label, choices, key=widget, format_func=format_func or str)
        if clean and asked is not None and asked != chosen and current == chosen:
            # the link's own spelling of this choice (torch=2.14.1 for "2.14.1 (stable)") stays in the address:
            # rewriting it was a history entry of its own, and Back landed on the link, which rewrote it again
            set_param(key, asked, default or "")
            st.session_state[_SYNCED][widget] = chosen  # what the address means, so the menu is not reset
            return chosen
    set_param(key, chosen, default or "")
    return chosen


def text_param(label: str, key: str, default: str = "", *, page: str = "qp") -> str:
    """A text field whose value lives in st.query_params[key] (absent: `default`; set_param writes it back)."""
    asked = url_param(key)
    value = st.text_input(label, key=follow_url(page, key, default if asked is None else asked))
    set_param(key, value, default)
    return value


_SYNCED = "_url_synced"  # session state: widget key -> the value the URL held when the widget last followed it


def follow_url(page: str, key: str, url_value: Any, choices: list[Any] | None = None) -> str:
    """The widget key `page`_`key`, its state set from the URL on its first run and whenever the URL changed
    under it (Back, Forward, an edited link), so the menu shows what the URL says; else the person's choice
    stands. The state is set before the widget exists, so the widget takes no default of its own."""
    widget = f"{page}_{key}"
    synced = st.session_state.setdefault(_SYNCED, {})
    moved = widget in synced and str(synced[widget]) != str(url_value)
    if (widget not in st.session_state or moved) and (choices is None or url_value in choices):
        st.session_state[widget] = url_value
    synced[widget] = url_value
    st.session_state.setdefault(_BOUND, {})[key] = widget  # set_param records what it leaves in the URL
    return widget


_BOUND = "_url_bound"  # session state: URL key -> the widget that showed it last
_PENDING = "_url_pending"  # session state: the URL this run is building (flush_params writes it once)


def set_param(key: str, value: str, default: str = "") -> None:
    """The URL's `key` after this run: a value equal to the page's default is left out unless the URL already
    names it (a fresh visit adds no history entry; a link's explicit choice stays explicit). Written once per
    run by flush_params: every write would be a browser history entry of its own."""
    pending = st.session_state.setdefault(_PENDING, st.query_params.to_dict())
    if (value or default) and (value != default or key in pending):  # a cleared field with a default stays ""
        pending[key] = value
    else:
        pending.pop(key, None)
    widget = st.session_state.get(_BOUND, {}).get(key)
    if widget is not None:  # what the URL will say (an omitted default reads back as the default)
        st.session_state[_SYNCED][widget] = value


def url_param(key: str) -> str | None:
    """`key` of the URL as this run has set it so far (set_param), else as the browser sent it; None if absent."""
    pending = st.session_state.get(_PENDING)
    return pending.get(key) if pending is not None else st.query_params.get(key)


def drop_params() -> None:
    """Forget this run's URL (flush_params then writes nothing)."""
    st.session_state.pop(_PENDING, None)


_WRITTEN = "_url_written"  # session state: the URL as the last run left it


def url_moved() -> bool:
    """True when the browser's URL is not the one the last run left (Back, Forward, an edited link, another page):
    a page that keeps choices of its own (Trends) then takes the URL's."""
    return st.query_params.to_dict() != st.session_state.get(_WRITTEN)


def flush_params() -> None:
    """Write this run's URL (set_param) in one change, and only if it changed: one history entry per view, so
    Back undoes one choice. navigation.py calls it after every page run."""
    pending = st.session_state.pop(_PENDING, None)
    if pending is not None and pending != st.query_params.to_dict():
        st.query_params.from_dict(pending)
    st.session_state[_WRITTEN] = st.query_params.to_dict()


MISSING = "—"  # a missing value in a table (Streamlit writes "None")
_FORMATS = {PERCENT: "%.1f %%", FRACTION: "percent"}  # a percentage rounded with "%"; a fraction as one


def table(frame: pd.DataFrame, column_config: dict | None = None, **kwargs: Any) -> Any:
    """st.dataframe with every column's human label (db.views.columns: units named, no raw key), percentages
    rounded with "%", times labelled UTC, a missing value written "—"; the page's own `column_config` entries win.
    The data is unchanged (a selection, the JSON twins and AppTest read the keys)."""
    config: dict[str, Any] = {}
    for name in frame.columns:
        label, kind = column(name)
        if kind in _FORMATS and pd.api.types.is_numeric_dtype(frame[name]):
            config[name] = st.column_config.NumberColumn(label, format=_FORMATS[kind])
        elif kind == TIME and pd.api.types.is_datetime64_any_dtype(frame[name]):
            config[name] = st.column_config.DatetimeColumn(label, format="YYYY-MM-DD HH:mm:ss")
        else:
            config[name] = label
    config.update(column_config or {})
    return st.dataframe(frame, column_config=config, placeholder=MISSING, **{"hide_index": True, **kwargs})
