"""The fast ingest path: DuckDB parses the results array (db.ingest.results_text), db.ingest.rules checks it set-wise.

Only the header (everything but `results`) goes through pydantic. Every result arrives typed, with whether its
JSON types fit (view _typed); then the row rules, the distinct params and warnings (judged once each in
Python), the derived summaries and the stated summaries' agreement run as set-based SQL.
Rows that break a rule come back as Suspects: db.ingest.core asks pydantic about just those rows, for the exact
refusal. Any other doubt (the array not last, DuckDB refusing the text, a null that may hide) returns None and
the caller runs the reference path, which refuses exactly or accepts what only pydantic's lax mode allows.
"""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from bundle.schema import Bundle
from db.ingest import rules
from db.ingest import results_text


@dataclass(frozen=True)
class Suspects:
    """Results that broke a rule: the first SUSPECTS of them by index (db.ingest.core asks pydantic about these)."""
    indices: list[int]
    more: bool  # others broke a rule too


SUSPECTS = 100


def stage(raw_conn, data: bytes) -> tuple[Bundle, int] | Suspects | None:
    """Stage the bundle's rows as temp table _final on raw_conn: (header, n_results); Suspects: rows that broke
    a rule; None: the reference path decides."""
    parts = results_text.split(data)
    if parts is None:
        return None
    header, array = parts
    try:
        bundle = Bundle.model_validate(header)
    except ValueError:
        return None
    return _checked(raw_conn, bundle) if results_text.parse(raw_conn, array) else None


def _checked(raw_conn, bundle: Bundle) -> tuple[Bundle, int] | Suspects:
    """(header, n_results) when every row passes every row and summary rule, staged as _final."""
    raw_conn.register("_unit_arrow", pa.table(dict(zip(("metric", "given", "factor", "canon"),
                                                       zip(*rules.unit_rows())))))
    raw_conn.execute("CREATE TEMP TABLE _units AS SELECT * FROM _unit_arrow")
    raw_conn.unregister("_unit_arrow")
    count, broken = raw_conn.execute(rules.ROW_RULES_SQL).fetchall()[0]
    _distinct_table(raw_conn, "_params", "params", ("text", "key", "params_json", "ok"), rules.params_row)
    _distinct_table(raw_conn, "_warnings", "warnings", ("text", "warnings_json", "ok"), rules.warnings_row)
    raw_conn.execute(rules.DERIVE_SQL.format(run=bundle.run_id, rows=rules.ROWS_SQL))
    staged, disagree = raw_conn.execute(rules.FINAL_SQL).fetchall()[0]
    # a row whose params, warnings or case_key broke a rule dropped out of _final's joins
    if not broken and staged == count and not disagree:
        return bundle, count
    found = [i for (i,) in raw_conn.execute(rules.SUSPECTS_SQL, [SUSPECTS + 1]).fetchall()]
    return Suspects(found[:SUSPECTS], len(found) > SUSPECTS)


def _distinct_table(raw_conn, name: str, column: str, names: tuple, fn) -> None:
    """Judge each distinct JSON text once in Python (params and warnings repeat across rows)."""
    texts = [r[0] for r in raw_conn.execute(f"SELECT DISTINCT {column} FROM _typed").fetchall()]
    rows = [fn(t) for t in texts] or [tuple([None] * len(names))]
    raw_conn.register("_distinct_arrow", pa.table(dict(zip(names, map(list, zip(*rows))))))
    raw_conn.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM _distinct_arrow")
    raw_conn.unregister("_distinct_arrow")


def drop_staging(raw_conn) -> None:
    results_text.drop(raw_conn)
    for t in ("_units", "_params", "_warnings", "_rows", "_final"):  # _rows: the reference path's
        raw_conn.execute(f"DROP TABLE IF EXISTS {t}")
