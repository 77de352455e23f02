"""User text (tags, messages, names, comments) made safe for an element that renders Markdown: shown as typed."""

from __future__ import annotations

JOINER = "\u2060"  # WORD JOINER: splits an autolink literal, shows as nothing (plain)
_ALWAYS = set("\\`*[]<>!#|~$&@")  # links, images, HTML, code, emphasis, tables, math, entities, e-mail autolinks


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
