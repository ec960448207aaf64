#!/usr/bin/env bash
# Set up graphview in ./.venv on a fresh machine (safe to re-run; fast when nothing changed).
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# torch first and pinned: a CPU wheel of 2.13.0 is what we test against; an unpinned torch
# would pull a multi-GB CUDA build. pyproject.toml declares torch>=2.2 for other machines.
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check torch==2.13.0
fi
.venv/bin/pip install --quiet --disable-pip-version-check -e ".[test]"
