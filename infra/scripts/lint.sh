#!/usr/bin/env bash
# Lint: ruff's rules, ruff's formatting and mypy --strict, as configured in pyproject.toml
# (installs what it needs first: the venv with the dev extra, which pins ruff, mypy and stubs).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash infra/scripts/bootstrap.sh
# Every code path: the package's three and the tests (tests/data, fixture data, is excluded in pyproject.toml).
paths=(evidence tasks flows tests)
.venv/bin/ruff check "${paths[@]}"
.venv/bin/ruff format --check "${paths[@]}"
# mypy's own files setting (evidence, tasks, flows; the latter two with pyproject's overrides)
.venv/bin/python -m mypy
