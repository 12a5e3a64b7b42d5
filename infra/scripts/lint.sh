#!/usr/bin/env bash
# Lint: ruff's rules, ruff's formatting and mypy --strict, as configured in pyproject.toml
# (installs what it needs first: the venv with the dev extra, which pins ruff, mypy and stubs).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash infra/scripts/bootstrap.sh
# The paths that pass today; tests/ joins once it is formatted and fixed.
paths=(evidence tasks flows)
.venv/bin/ruff check "${paths[@]}"
.venv/bin/ruff format --check "${paths[@]}"
# mypy's own files setting (evidence, tasks, flows; the latter two with pyproject's overrides)
.venv/bin/python -m mypy
