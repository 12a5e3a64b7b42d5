#!/usr/bin/env bash
# Run evidence-stage on the bundled example job (local storage, Prefect's ephemeral server).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash infra/scripts/bootstrap.sh
export PREFECT_SERVER_ANALYTICS_ENABLED=false PREFECT_LOGGING_LEVEL="${PREFECT_LOGGING_LEVEL:-WARNING}" PREFECT_SERVER_LOGGING_LEVEL="${PREFECT_SERVER_LOGGING_LEVEL:-CRITICAL}"
exec .venv/bin/evidence-stage run \
  --rollouts tests/data/example_job/rollouts.jsonl \
  --capture-dir tests/data/example_job/model-calls \
  --output out "$@"
