#!/usr/bin/env bash
# Create (or refresh) the project virtual environment .venv with the pinned dependencies.
# Idempotent: reinstalls only when pyproject.toml changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.evidence-stage-installed
want=$(cat pyproject.toml "$0" | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  # compat mode puts the repository on sys.path (a .pth line) instead of an import hook that
  # runs after sys.path: a folder named evidence/, tasks/ or flows/ in a process's working
  # directory (which `python -m` and `-c` put first) is then a namespace portion that loses to
  # the real package, in every process (CLI, attempt workers, served flow runs, Dask workers).
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]' --config-settings editable_mode=compat
  echo "$want" > "$stamp"
fi
