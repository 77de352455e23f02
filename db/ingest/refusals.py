"""A bundle refused in words: pydantic's validation errors as Problems naming the field (results[3].samples), a
body that is not UTF-8 JSON told what it is, and the results the set-based checks found suspect validated one by
one, so the refusal says what pydantic would (db.ingest.core calls these)."""

from __future__ import annotations

import json

import pydantic_core
from pydantic import ValidationError

from bundle.schema import Bundle, Result
from db.errors import Problem, StoreError
from db.ingest import results_text


def field_path(loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _loc(error: dict) -> tuple:
    named = (error.get("ctx") or {}).get("field")  # bundle.schema._field_error: a model check owned by one field
    return (*error["loc"], named) if named else error["loc"]


def problems(exc: ValidationError, prefix: tuple = ()) -> list[Problem]:
    return [
        Problem(field_path((*prefix, *_loc(e))) or "bundle", e["msg"].removeprefix("Value error, "))
        for e in exc.errors()
    ]


def not_json(data: bytes, why: str) -> StoreError:
    where = _surrogate_path(data)
    return StoreError(
        400,
        f"body is not valid JSON: {why}",
        [Problem(where, "a lone UTF-16 surrogate (\\ud800-\\udfff escape) is not a character")]
        if where
        else [Problem("body", why)],
    )


def _surrogate_path(data: bytes) -> str | None:
    """Where a lone surrogate sits (Python's parser takes them; the schema's does not)."""

    def walk(v, loc):
        if isinstance(v, str):
            return loc if any(0xD800 <= ord(c) <= 0xDFFF for c in v) else None
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
        for k, x in items:
            found = walk(k, loc) if isinstance(k, str) else None
            found = found or walk(x, (*loc, k))
            if found is not None:
                return found
        return None

    try:
        found = walk(json.loads(data), ())
    except (ValueError, RecursionError):
        return None
    return None if found is None else field_path(found) or "bundle"


def _refusal(exc: ValidationError, data: bytes) -> StoreError:
    syntax = [e for e in exc.errors() if e["type"] == "json_invalid"]
    if syntax:
        return not_json(data, syntax[0]["ctx"]["error"])
    if any(e["type"] == "model_type" and not e["loc"] for e in exc.errors()):
        return StoreError(400, "body is not a JSON object (a bundle is one object)")
    return StoreError(422, "invalid bundle", problems(exc))


def validate(data: bytes, model=Bundle, prefix: tuple = ()):
    try:
        return model.model_validate_json(data, strict=True)
    except ValidationError as exc:
        error = _refusal(exc, data)
        if prefix and error.status == 422:
            error = StoreError(422, "invalid bundle", problems(exc, prefix))
        elif prefix:  # not JSON inside one result (nesting past the parser's depth limit, a lone surrogate)
            error = StoreError(
                error.status, error.message, [Problem(field_path(prefix), p.rule) for p in error.problems]
            )
        raise error from None


def body_bytes(raw) -> bytes | bytearray:
    """The body as bytes (a dict is written as JSON: non-ASCII escaped, so a lone surrogate stays visible). A
    bytearray is read as it is: a large PyTorch OSS file's bundle (db.ingest.records) is not copied again."""
    if isinstance(raw, dict):
        return json.dumps(raw).encode()
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    return raw if isinstance(raw, bytearray) else bytes(raw)


def require_utf8(data: bytes) -> None:
    """Called once a reader has refused the body as JSON. Both readers (pydantic's for the header, DuckDB's for
    the results) refuse bytes that are not UTF-8, so a valid body is never decoded twice (0.36 s per 600 MB);
    a refused one is told what it is."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        why = f"bundles are UTF-8 JSON (UTF-16/32 are refused): {exc.reason} at byte {exc.start}"
        raise StoreError(400, "body is not UTF-8", [Problem("body", why)]) from None


def results_last(data: bytes) -> bytes:
    """The same document with `results` as its last key (as the collector writes it), parsed strictly."""
    try:
        doc = pydantic_core.from_json(data, allow_inf_nan=False)
    except ValueError as exc:
        raise not_json(data, str(exc)) from None
    if not isinstance(doc, dict):
        raise StoreError(400, "body is not a JSON object (a bundle is one object)")
    results = doc.pop("results", [])
    head = json.dumps(doc)[:-1].encode() + (b", " if doc else b"")
    return head + b'"results": ' + json.dumps(results).encode() + b"}"


def refuse_suspects(array, indices: list[int], more: bool) -> None:
    """Refuse the suspects with pydantic's words (each validated alone)."""
    problems = []
    for i, row in sorted(results_text.objects(array, indices).items()):
        try:
            validate(row.encode(), Result, ("results", i))
            problems.append(
                Problem(
                    f"results[{i}]",
                    "refused by the store's set-based check though bundle.schema "
                    "accepts it (a bug in db.ingest.schema_checks: please report it)",
                )
            )
        except StoreError as err:
            if err.status == 400:  # not JSON as the schema reads it: the whole body is refused as such
                raise
            problems += err.problems
    if more:
        problems.append(
            Problem(
                "results",
                f"only the first {len(indices)} results that broke a rule were checked "
                "one by one; later ones may be invalid too",
            )
        )
    raise StoreError(422, "invalid bundle", problems)
