#!/usr/bin/env bash
# Create .venv (Python 3.11+) and install the project into it (`pip install -e .`, with the test tools when asked).
# An installed torch is left alone: the collector measures whichever build the environment has.
# Usage: scripts/setup.sh [dev]
set -euo pipefail
cd "$(dirname "$0")/.."
extra=${1:-}
py=${PYTHON:-python3}
"$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "ERROR: Python 3.11+ needed ($py is $("$py" -V 2>&1))"; exit 1; }
[ -x .venv/bin/python ] || "$py" -m venv .venv
. .venv/bin/activate
stamp=.venv/.mpsbench-setup${extra:+-$extra}.sha256
want=$(cat requirements*.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setting up .venv (first time takes a few minutes)…"
  python -m pip install -q --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
  if ! python -c 'import torch' 2>/dev/null; then
    # shellcheck disable=SC2086  # MPSBENCH_TORCH may carry pip options (e.g. --index-url for nightlies)
    python -m pip install -q ${MPSBENCH_TORCH:-torch==2.13.0} 2>&1 | grep -v '^WARNING: Location' || true
  fi
  python -m pip install -q -e ".${extra:+[$extra]}" 2>&1 | grep -v '^WARNING: Location' || true
  python -c 'import torch, streamlit, duckdb, sqlmodel, altair, mpsbench.cli' || { echo "ERROR: install failed"; exit 1; }
  echo "$want" > "$stamp"
fi
