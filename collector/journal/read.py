"""Journals read back, checked once: a run's (collector.journal.run_journal), a sweep's (collector.sweep.journal), confirm's
(mpsbench.workflows.confirm) and bisect's (mpsbench.workflows.bisect_steps). Every one is JSON lines, appended and fsynced a line at a
time (collector.journal.lines); `read_journal` reads them (a last line torn by a kill mid-write dropped) and checks each record against the
fields its kind's reader uses, so a file that is JSON but not that kind of journal (no `options`, `options` a
string, a record missing a key, a number written as text) is one CollectorError naming the file, the line and the
field ("runs/sweep-x.sweep.jsonl line 3: options: must be an object"), never a KeyError deep in a resume.

A kind's fields are a `Spec`: field name -> `Field` (JSON types, or a pydantic model, with its fields and items);
a record of a type no spec names is kept unchecked (its reader skips it). A field a reader reads with .get() is
optional here; one it indexes is required."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from collector.errors import CollectorError


@dataclass(frozen=True)
class Field:
    types: tuple[type, ...]
    rule: str  # what the value must be, said when it is not
    required: bool = True
    null: bool = False  # null is allowed too
    fields: Mapping[str, Field] | None = None  # an object's own fields
    items: Field | None = None  # each item of a list
    model: type[BaseModel] | None = None  # a value the bundle format defines (the machine, the build)
    pattern: str | None = None  # text that must match (fullmatch)
    choices: tuple[str, ...] = ()
    closed: bool = False  # an object with no other keys (its reader passes them all on: Slot(**slot))


Spec = Mapping[str, Field]
# a record type's spec, or a function choosing one by the record (a failed build has other fields than a ready one)
Kinds = Mapping[str, "Spec | Callable[[dict[str, Any]], Spec]"]

TEXT = Field((str,), "must be text")
WHOLE = Field((int,), "must be a whole number")
NUMBER = Field((int, float), "must be a number")
FLAG = Field((bool,), "must be true or false")
ANY_OBJECT = Field((dict,), "must be an object")
PRESENT = Field((object,), "must be there", null=True)  # read as it is (printed), whatever its type


def optional(f: Field, null: bool = True) -> Field:
    """A field the reader reads with .get(): absent is fine, and (null=True) so is null."""
    return replace(f, required=False, null=null, rule=f.rule + (" or null" if null else ""))


def nullable(f: Field) -> Field:
    return replace(f, null=True, rule=f.rule + " or null")


def obj(closed: bool = False, **fields: Field) -> Field:
    return Field((dict,), "must be an object", fields=fields, closed=closed)


def list_of(item: Field) -> Field:
    return Field((list,), "must be a list", items=item)


def model(cls: type[BaseModel]) -> Field:
    return Field((dict,), "must be an object", model=cls)


def one_of(*choices: str) -> Field:
    return Field((str,), f"must be one of {', '.join(choices)}", choices=choices)


def text_like(pattern: str, example: str) -> Field:
    return Field((str,), f"must be text like {example}", pattern=pattern)


class _Bad(Exception):
    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")


def _check(value: Any, f: Field, name: str) -> None:
    if value is None and f.null:
        return
    if not isinstance(value, f.types) or (isinstance(value, bool) and bool not in f.types):
        raise _Bad(name, f.rule)  # bool is an int to Python, never a number in a journal
    if f.choices and value not in f.choices or f.pattern and not re.fullmatch(f.pattern, value):
        raise _Bad(name, f.rule)
    if f.model is not None:
        try:
            f.model.model_validate(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise _Bad(f"{name}.{where}" if where else name, first["msg"]) from None
    if f.fields is not None:
        _check_fields(value, f.fields, f"{name}.")
        other = [k for k in value if k not in f.fields] if f.closed else []
        if other:
            raise _Bad(f"{name}.{other[0]}", f"is not a field here (only {', '.join(f.fields)})")
    if f.items is not None:
        for i, item in enumerate(value):
            _check(item, f.items, f"{name}[{i}]")


def _check_fields(record: Mapping[str, Any], spec: Spec, prefix: str = "") -> None:
    for key, f in spec.items():
        if key not in record:
            if f.required:
                raise _Bad(f"{prefix}{key}", "is missing")
            continue
        _check(record[key], f, f"{prefix}{key}")


def read_journal(path: Path, what: str, first: str, kinds: Kinds, repair: bool = True) -> list[dict[str, Any]]:
    """The journal's records, each checked against its type's spec in `kinds`; `first`: the header's type, which
    the first record must have. `what` names the kind in errors ("sweep journal")."""
    lines = read_lines(path, what, repair)
    if not lines or lines[0][1].get("type") != first:
        line = lines[0][0] if lines else 1
        raise CollectorError(f"{path} line {line}: type: must be {first!r} (the file is not a {what})")
    for line, record in lines:
        kind = record.get("type")
        spec = kinds.get(kind) if isinstance(kind, str) else None
        if spec is None:
            continue
        try:
            _check_fields(record, spec(record) if callable(spec) else spec)
        except _Bad as bad:
            raise CollectorError(f"{path} line {line}: {bad}") from None
    return [record for _, record in lines]


def read_lines(path: Path, what: str, repair: bool = True) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) for each JSON record, one a line: a last line torn by a kill mid-write is dropped
    and, with `repair`, cut off the file, so the next append starts on a clean line. A bad line before the last
    is damage, not a torn write: a CollectorError naming the file and the line."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CollectorError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    lines = raw.split(b"\n")
    records, good_bytes = [], 0
    for i, line in enumerate(lines):
        if line.strip():
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("not an object")
            except (ValueError, RecursionError):  # a UnicodeDecodeError too; nesting past Python's parser
                if i == len(lines) - 1 or not any(x.strip() for x in lines[i + 1 :]):
                    break  # torn by a kill mid-write: that write never finished
                raise CollectorError(f"{what} {path} line {i + 1} is not a JSON record: the file is damaged") from None
            records.append((i + 1, record))
        good_bytes += len(line) + 1
    if repair and good_bytes < len(raw):
        with path.open("r+b") as f:
            f.truncate(good_bytes)
    return records
