#!/usr/bin/env bash
# Create .venv-lake: the project's .venv with duckdb 1.5.5 and the DuckLake + Postgres extension wheels in front
# of it (those wheels exist only for duckdb 1.5.5; the project otherwise runs duckdb 2.x). Everything else — the
# project, its other requirements — is read from .venv, so this is a ~30 MB layer, not a second install.
# Usage: scripts/setup_lake.sh   (after scripts/setup.sh); then `. .venv-lake/bin/activate` for a lake server
# (its bin/ holds an `mpsbench` of its own: .venv's script would run .venv's duckdb).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || { echo "ERROR: .venv missing: run scripts/setup.sh first"; exit 1; }
base=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
want="duckdb==1.5.5 duckdb-extension-ducklake==1.5.5 duckdb-extension-postgres-scanner==1.5.5 pytz"
stamp=.venv-lake/.mpsbench-lake.sha256
key=$(echo "$want $base" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$key" ]; then
  echo "setting up .venv-lake (duckdb 1.5.5 + DuckLake extensions over .venv)…"
  .venv/bin/python -m venv --clear .venv-lake
  own=$(.venv-lake/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  # after .venv-lake's own packages (so its duckdb wins), .venv's — with their .pth files (the editable install)
  echo "import site; site.addsitedir('$base')" > "$own/mpsbench-base.pth"
  # shellcheck disable=SC2086
  .venv-lake/bin/python -m pip install -q --no-deps $want 2>&1 | grep -v '^WARNING: Location' || true
  .venv-lake/bin/python -c 'import duckdb, duckdb_extension_ducklake, sqlmodel, db.store.lake; assert duckdb.__version__ == "1.5.5"' \
    || { echo "ERROR: .venv-lake install failed"; exit 1; }
  echo "$key" > "$stamp"
fi
if [ ! -x .venv-lake/bin/mpsbench ]; then
  printf '#!/bin/sh\nexec "%s/.venv-lake/bin/python" -m mpsbench "$@"\n' "$PWD" > .venv-lake/bin/mpsbench
  chmod +x .venv-lake/bin/mpsbench
fi
