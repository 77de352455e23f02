#!/usr/bin/env bash
# Run the whole test suite (sets up .venv with the dev requirements first), then the DuckLake tests in .venv-lake
# (duckdb 1.5.5, the only release with DuckLake extension wheels: scripts/setup_lake.sh). Extra arguments go to
# the first pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev
. .venv/bin/activate  # its tools (lint-imports, the mpsbench script) on PATH for the tests
python -m pytest -q -p no:cacheprovider "$@" tests
scripts/setup_lake.sh
.venv-lake/bin/python -m pytest -q -p no:cacheprovider -k lake tests/test_store_lake.py tests/test_lake_backup.py tests/test_lake_replicas.py tests/test_benchmarks.py
