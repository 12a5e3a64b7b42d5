#!/usr/bin/env bash
# Run the whole test suite (installs what it needs first: the venv, and Debian's chromium
# for the report's browser test when apt is available).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash infra/scripts/bootstrap.sh
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && apt-get install -y -qq chromium fonts-noto-color-emoji >/dev/null) || echo "chromium not installed: the browser test will be skipped"
fi
export PREFECT_SERVER_ANALYTICS_ENABLED=false
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
