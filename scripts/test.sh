#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run every check: ruff, the import contracts, mypy, the
# TypeScript type check, import-cycle check and unit tests, and pytest (loaders, widget kernel side, notebooks, Binder env, real-browser tests).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's Chromium for the real-browser tests (no browser download works on these machines).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-liberation >/dev/null
fi

bash scripts/setup.sh
# torch makes the live-profiling paths (%%profview, the PyTorch notebook) run for real.
.venv/bin/python -m pip install -q torch==2.13.0 || echo "torch==2.13.0 not installable here: torch paths will be skipped (visibly)"

.venv/bin/ruff check jupyter_profview tests benchmarks
.venv/bin/lint-imports   # the architecture: [tool.importlinter] contracts in pyproject.toml
.venv/bin/mypy
(cd js && npm run typecheck && npm run cycles && npm test)   # cycles: madge --circular on js/src
(cd labextension && npm run typecheck)
# the API reference site (mkdocs.yml, docs/site_src -> build/site); never -q: it hides the
# warnings --strict counts (a broken cross-reference), and the build then passes
.venv/bin/mkdocs build --strict
.venv/bin/python -m pytest -q "$@"
