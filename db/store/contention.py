"""The contention a stored result carries (bundle.contention): what a bundle states, or for a record from a
collector before bundle schema 3, the share its "CPU contention: other processes used N %" warning states, once
for each of its processes (the old collector measured the whole case in each process and kept one warning per
distinct share: which process it was is lost, so every process counts as contended with the largest).

One SQL expression over a results row's `contention`, `processes` and `warnings_json`: the ingest stores it
(db.ingest.core) and the migration to store v9 fills stored rows with it (db.store.migrate). UNTOUCHED is
the condition that none of a result's processes ran contended: the A/A pairs take only such results
(db.store.aa_pairs), so a busy hour does not become a machine's run-to-run noise."""
from __future__ import annotations

from bundle.contention import OLD_WARNING, THRESHOLD

# a warning is a JSON string in warnings_json: it starts after a quote
_SHARES = f"""regexp_extract_all(warnings_json, '"{OLD_WARNING}', 1)"""
STORED_SQL = f"""CASE WHEN len(contention) = 0 AND len({_SHARES}) > 0 THEN
  list_transform(range(greatest(len(processes), 1)),
                 lambda i: least(1.0, list_max(list_transform({_SHARES}, lambda s: s::DOUBLE)) / 100.0))
  ELSE contention END"""

UNTOUCHED = "coalesce(list_max({t}.contention), 0) <= " + repr(THRESHOLD)  # {t}: the results table's alias
