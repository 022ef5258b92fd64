#!/usr/bin/env bash
# Run the whole test suite, including the real-model tests (setting up .venv first if
# needed). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev,llm
exec .venv/bin/python -m pytest --llm "$@"
