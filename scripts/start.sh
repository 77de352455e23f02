#!/usr/bin/env bash
# The main job: set up, serve the dashboard on localhost at once, collect a quick run on this machine's device
# while it is up (the Overview shows the run's progress and what it waits for), and store it in the embedded
# DuckDB through the dashboard's own upload API (one writer). Environment: MPSBENCH_DB (default
# data/mpsbench.duckdb), PORT (default 8501), MPSBENCH_DEVICE (auto), MPSBENCH_PROFILE (quick),
# MPSBENCH_IDLE_WAIT (seconds a case waits for an idle machine, default 30), MPSBENCH_SKIP_COLLECT=1 to only serve.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
. .venv/bin/activate
export MPSBENCH_DB=${MPSBENCH_DB:-data/mpsbench.duckdb}
port=${PORT:-8501}
url="http://127.0.0.1:$port"
mkdir -p runs "$(dirname "$MPSBENCH_DB")"
export MPSBENCH_LIVE=${MPSBENCH_LIVE:-runs/live.json}  # the collecting run's status, shown on the Overview
rm -f "$MPSBENCH_LIVE"
mpsbench serve --port "$port" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
for _ in $(seq 1 120); do  # the server answers within seconds; the page is useful from then on
  python -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)" "$url/api/v1/health" \
    >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { echo "ERROR: the dashboard did not start (see above)"; exit 1; }
  sleep 0.5
done
echo "dashboard: $url  (Ctrl-C stops it; database: $MPSBENCH_DB)"
if [ "${MPSBENCH_SKIP_COLLECT:-0}" != 1 ]; then
  echo "collecting a ${MPSBENCH_PROFILE:-quick} run on this machine; the dashboard shows its progress"
  # the dashboard's generated local token (db.store.writers.tokens), unless the caller brought their own
  token=${MPSBENCH_TOKEN:-$(python -c 'from db.store.writers.tokens import local_token; print(local_token(create=False) or "")')}
  MPSBENCH_TOKEN=$token mpsbench run --profile "${MPSBENCH_PROFILE:-quick}" --device "${MPSBENCH_DEVICE:-auto}" \
    --out runs --idle-wait "${MPSBENCH_IDLE_WAIT:-30}" --status-file "$MPSBENCH_LIVE" --push "$url" ||
    echo "the run did not finish storing: its bundle stays in runs/ (mpsbench push runs/<run_id>.json)"
fi
wait "$server"
