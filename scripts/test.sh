#!/usr/bin/env bash
# Run the whole test suite, including the real-model tests (setting up .venv first if
# needed): first ruff and the import layers contract (pyproject.toml), then pytest. Extra
# arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev,llm,scale
# The HTML report test opens the page in Debian's headless Chromium (never a downloaded
# browser). Install it when missing and we may; without it that test is skipped with the reason.
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's chromium for the HTML report test" >&2
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -q chromium >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; }; } \
    || echo "could not install chromium; the browser test will be skipped" >&2
fi
.venv/bin/ruff check evaluators tests benchmarks scripts
.venv/bin/lint-imports
exec .venv/bin/python -m pytest --llm "$@"
