"""Every page table's column labels (db/views/columns.py; pages.parts.table): a human label with its unit for a
raw key, percentages rounded with "%", a missing value written "—" — issue 35's raw keys (baseline_value,
started_at, nightly_date "None", figure_status, noise_bound_percent 100.986 without %)."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from db.views.columns import FRACTION, PERCENT, TEXT, TIME, Column, column


@pytest.mark.parametrize(
    "key,expected",
    [
        ("baseline_value", Column("baseline value")),
        ("started_at", Column("started (UTC)", TIME)),
        ("nightly_date", Column("nightly date")),
        ("figure_status", Column("figure status")),
        ("noise_bound_percent", Column("noise bound (%)", PERCENT)),
        ("worse_by", Column("worse by (%)", FRACTION)),
        ("memory_GiB", Column("memory (GiB)")),
        ("peak_GiB", Column("peak (GiB)")),
        ("load_percent", Column("load (%)", PERCENT)),
        ("op_time_µs", Column("op time (µs)")),
        ("checked_at", Column("checked (UTC)", TIME)),
        ("case", Column("case")),
        ("p_value", Column("p-value")),
        ("n_cases", Column("cases")),
        (7, Column("7")),
    ],
)
def test_a_raw_key_gets_its_human_label_and_kind(key, expected):
    assert column(key) == expected


def test_no_label_of_a_page_column_keeps_an_underscore():
    # every column the pages show on the walk, seeded and known stores (listed when this was written)
    keys = (
        "baseline_figure baseline_iqr baseline_margin baseline_median baseline_message baseline_n baseline_runs "
        "baseline_status baseline_value baseline_verdict candidate_passed case_key change_point change_unit "
        "ci_high ci_low claimed_cases device_type failed_figures failed_metrics figure_measured figure_status "
        "first_run git_hash gpu_cores last_run machine_name memory_GiB n_better n_cases n_results n_samples "
        "n_unchanged n_worse nightly_date noise_bound_percent op_time_µs oriented_ratio os_version p_value "
        "pairs_pending previous_build previous_µs retracted_at retracted_by retraction_reason run_id runs_per_side "
        "se_unit speedup_vs_previous spread_percent started_at torch_version uploaded_by worse_by"
    ).split()
    assert [k for k in keys if "_" in column(k).label] == []
    assert column("x").kind == TEXT


APP = """
import numpy as np, pandas as pd
from pages.parts.table import table
table(pd.DataFrame({"baseline_value": [1.5, None], "noise_bound_percent": [100.986, np.nan],
                    "nightly_date": [None, "2026-12-01"], "worse_by": [0.18, 0.05]}))
"""


def test_the_page_table_labels_formats_and_writes_missing_values_as_a_dash(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(APP)
    at = AppTest.from_file(str(script), default_timeout=60).run()
    assert not at.exception
    shown = at.dataframe[0]
    assert shown.proto.placeholder == "—"  # Streamlit's "None" for a missing value
    config = __import__("json").loads(shown.proto.columns)
    assert config["baseline_value"]["label"] == "baseline value"
    assert config["noise_bound_percent"] == {
        "label": "noise bound (%)",
        "type_config": {"type": "number", "format": "%.1f %%"},
    }
    assert config["worse_by"]["type_config"]["format"] == "percent"  # a fraction shown as a percentage
    assert config["nightly_date"]["label"] == "nightly date"
    pd.testing.assert_series_equal(shown.value["baseline_value"], pd.Series([1.5, None], name="baseline_value"))
