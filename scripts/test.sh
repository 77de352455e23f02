#!/usr/bin/env bash
# Run the whole test suite (sets up .venv with the dev requirements first). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev
. .venv/bin/activate
exec python -m pytest -q -p no:cacheprovider "$@" tests
