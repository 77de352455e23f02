"""The URL as the page's state: a picker or a text field bound to a query parameter (a pasted link reproduces the
view), each run's URL written once (one browser history entry per view), and Back and Forward followed."""

from __future__ import annotations

from typing import Any, Callable, Iterable

import pandas as pd
import streamlit as st

from pages.parts.plain import plain


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
