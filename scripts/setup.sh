#!/usr/bin/env bash
# Set up reportgen in ./.venv on a fresh machine (needs Python >= 3.10 and access to PyPI).
#   bash scripts/setup.sh          install reportgen itself (a regular, non-editable install)
#   bash scripts/setup.sh --test   editable install with the test tools, plus Chromium for the browser tests
set -euo pipefail
cd "$(dirname "$0")/.."

python_bin="${PYTHON:-}"
if [ -z "$python_bin" ]; then
  for candidate in python3.12 python3.11 python3.10 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
      python_bin="$candidate"; break
    fi
  done
fi
[ -n "$python_bin" ] || { echo "setup: Python >= 3.10 is required" >&2; exit 2; }

[ -x .venv/bin/python ] || "$python_bin" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true

if [ "${1:-}" = "--test" ]; then
  .venv/bin/python -m pip install --quiet -e '.[test]' 2>&1 | grep -v '^WARNING: Location' || true
  .venv/bin/python -c 'import reportgen, playwright, pytest' || { echo "setup: installation failed" >&2; exit 2; }
  # The browser tests drive the system Chromium (Debian/Ubuntu package); install it when missing.
  if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; else sudo="none"; fi
    if [ "$sudo" != "none" ] && command -v apt-get >/dev/null 2>&1; then
      $sudo apt-get update -qq >/dev/null
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
    else
      echo "setup: install Chromium yourself (or set REPORTGEN_CHROMIUM) to run the browser tests" >&2
    fi
  fi
else
  .venv/bin/python -m pip install --quiet . 2>&1 | grep -v '^WARNING: Location' || true
  .venv/bin/reportgen --version >/dev/null || { echo "setup: installation failed" >&2; exit 2; }
fi
echo "setup: ready ($(.venv/bin/reportgen --version))" >&2
