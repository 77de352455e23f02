"""collector.journal.lines, the one journal writer: the bytes each journal has always had, one fsynced line per
record, appended after what is there."""

from __future__ import annotations

from collector.journal.lines import append_line

RECORD = {"type": "run", "name": "Grüße", "n": [1, 2.5], "none": None}


def test_compact_lines_keep_utf8_and_no_spaces(tmp_path):
    path = tmp_path / "x.journal.jsonl"
    append_line(path, RECORD)
    append_line(path, {"type": "case"})
    assert path.read_bytes() == '{"type":"run","name":"Grüße","n":[1,2.5],"none":null}\n{"type":"case"}\n'.encode()


def test_confirm_s_lines_keep_json_dumps_defaults(tmp_path):
    path = tmp_path / "x.confirm.jsonl"
    append_line(path, RECORD, compact=False)
    assert path.read_bytes() == b'{"type": "run", "name": "Gr\\u00fc\\u00dfe", "n": [1, 2.5], "none": null}\n'
