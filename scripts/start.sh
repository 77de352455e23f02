#!/usr/bin/env bash
# The main job: set up, collect a quick run on this machine's device, ingest it into the embedded DuckDB, serve
# the dashboard on localhost. Environment: MPSBENCH_DB (default data/mpsbench.duckdb), PORT (default 8501),
# MPSBENCH_DEVICE (auto), MPSBENCH_PROFILE (quick), MPSBENCH_SKIP_COLLECT=1 to only serve.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
. .venv/bin/activate
export MPSBENCH_DB=${MPSBENCH_DB:-data/mpsbench.duckdb}
port=${PORT:-8501}
if [ "${MPSBENCH_SKIP_COLLECT:-0}" != 1 ]; then
  mpsbench run --profile "${MPSBENCH_PROFILE:-quick}" --device "${MPSBENCH_DEVICE:-auto}" --out runs
  mpsbench ingest "$(ls -t runs/*.json | head -n 1)"
fi
echo "dashboard: http://127.0.0.1:$port  (Ctrl-C stops it; database: $MPSBENCH_DB)"
exec mpsbench serve --port "$port"
