"""The run conditions on each side of a comparison that can bend its figures: battery power, Low Power Mode,
thermal pressure (the machine fingerprint's fields), said as notes beside the verdict, never hidden."""

from __future__ import annotations

from sqlalchemy import Engine

from db.query.read import read_frame
from db.query.selectors import Selector


def condition_notes(engine: Engine, selector: Selector, side: str) -> list[str]:
    """e.g. "baseline: 2 of 4 runs on battery power" — one note per condition found on the side's runs."""
    sql, params = selector.run_ids_sql()
    found = read_frame(
        engine,
        f"""SELECT count(*) AS runs,
        count(*) FILTER (WHERE power_source = 'battery') AS battery,
        count(*) FILTER (WHERE low_power_mode) AS low_power,
        count(*) FILTER (WHERE thermal_state IS NOT NULL AND thermal_state <> 'nominal') AS thermal
        FROM runs WHERE run_id IN ({sql})""",
        params,
    ).iloc[0]
    runs, notes = int(found["runs"]), []
    for column, words in (
        ("battery", "on battery power"),
        ("low_power", "in Low Power Mode"),
        ("thermal", "under thermal pressure (warning level or CPU limit at start)"),
    ):
        if int(found[column]):
            notes.append(f"{side}: {int(found[column])} of {runs} runs {words}: their figures may be slower")
    return notes
