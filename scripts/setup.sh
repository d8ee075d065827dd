#!/usr/bin/env bash
# Set up a development environment from a fresh checkout: a virtualenv in .venv with the
# package installed in editable mode (this builds the JS bundle with npm and the optional
# native scanner with cc) plus the test tools. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# The JS bundle is rebuilt whenever the editable install runs.
rm -f jupyter_profview/static/widget.js
# ... and the prebuilt JupyterLab extension (labextension/ -> jupyter_profview/labextension/)
rm -rf jupyter_profview/labextension
.venv/bin/python -m pip install -q -e ".[test,docs]"
# Dev tools (ruff, mypy, stubs): the PEP 735 group in pyproject.toml (pip >= 25.1, upgraded above)
.venv/bin/python -m pip install -q --group dev
echo "setup: OK ($(.venv/bin/python -c 'import jupyter_profview._native as n; print("native scanner", "on" if n.available() else "off")'))"
