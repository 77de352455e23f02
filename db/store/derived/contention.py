"""The contention a stored result carries (bundle.contention): what a bundle states, or for a record from a
collector before bundle schema 3, the share its "CPU contention: other processes used N %" warning states, once
for each of its processes (the old collector measured the whole case in each process and kept one warning per
distinct share: which process it was is lost, so every process counts as contended with the largest).

One SQL expression over a results row's `contention`, `processes` and `warnings_json`: the ingest stores it
(db.ingest.core) and the migration to store v9 fills stored rows with it (db.store.migrate). EVIDENCE is
bundle.contention.enough_clean over a stored result's shares, in SQL: the A/A pairs take only such results
(db.store.derived.aa_pairs), so a busy hour is not a machine's run-to-run noise, while a run that a burst left slower
for a while (its processes clean, its level shifted: seen on this project's box) is, as it should be."""

from __future__ import annotations

from bundle.contention import OLD_WARNING, THRESHOLD, enough_clean_sql
from db.stats.lists import QUARTILES, list_quantile_sql

# a warning is a JSON string in warnings_json: it starts after a quote
_SHARES = f"""regexp_extract_all(warnings_json, '"{OLD_WARNING}', 1)"""
STORED_SQL = f"""CASE WHEN len(contention) = 0 AND len({_SHARES}) > 0 THEN
  list_transform(range(greatest(len(processes), 1)),
                 lambda i: least(1.0, list_max(list_transform({_SHARES}, lambda s: s::DOUBLE)) / 100.0))
  ELSE contention END"""

# {t}: the results table's alias. clean = total − hot; no shares: clean
_HOT = "len(list_filter(coalesce({t}.contention, []), lambda s: s > " + repr(THRESHOLD) + "))"
_TOTAL = "greatest(coalesce(len({t}.contention), 0), 1)"  # NULL (a row written by hand): not measured
EVIDENCE = enough_clean_sql(f"{_TOTAL} - {_HOT}", _TOTAL)

# a stored result's median over its clean processes' samples (its stored median where none ran contended): what
# an A/A pair compares. Each process's flag repeated over its samples (a result of one process: its one share)
_CLEAN = "NOT coalesce({t}.contention[i] > " + repr(THRESHOLD) + ", false)"
_MASK = (
    "flatten(list_transform(range(1, greatest(coalesce(len({t}.processes), 0), 1) + 1), lambda i: list_resize(["
    + _CLEAN
    + "], coalesce({t}.processes[i], len({t}.samples)), "
    + _CLEAN
    + ")))"
)
CLEAN_MEDIAN = (
    "CASE WHEN coalesce(list_max({t}.contention), 0) <= " + repr(THRESHOLD) + " THEN {t}.median "
    "ELSE " + list_quantile_sql("list_where({t}.samples, " + _MASK + ")", QUARTILES["median"]) + " END"
)
