#!/usr/bin/env bash
# Set up reportgen in ./.venv on a fresh machine (needs Python >= 3.10 and access to PyPI).
#   bash scripts/setup.sh          install reportgen itself (a regular, non-editable install)
#   bash scripts/setup.sh --test   editable install with the test tools, plus Chromium for the browser tests
#   bash scripts/setup.sh --probe  only say which Python would be used
# One line per step on stderr; on a terminal pip shows its own progress, elsewhere (CI logs) it is quiet.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "setup: $*" >&2; }

python_bin="${PYTHON:-}"
if [ -z "$python_bin" ]; then
  for candidate in python3.12 python3.11 python3.10 python3; do
    # probed quietly: a pyenv shim for a version that is not installed prints "command not found"
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1; then
      python_bin="$candidate"; break
    fi
  done
fi
[ -n "$python_bin" ] || { say "Python >= 3.10 is required (none of python3.12, python3.11, python3.10, python3 is)"; exit 2; }
say "Python $("$python_bin" -c 'import platform; print(platform.python_version())' 2>/dev/null) ($python_bin)"
[ "${1:-}" = "--probe" ] && exit 0

if [ -t 2 ]; then quiet=(); else quiet=(--quiet); fi
pip_install() {
  # this machine's pip configuration may name missing local indexes: those warnings are noise here
  .venv/bin/python -m pip install "${quiet[@]}" "$@" 2> >(grep -v '^WARNING: Location' >&2)
}

if [ -x .venv/bin/python ]; then say "virtual environment .venv (existing)"; else
  say "virtual environment .venv"; "$python_bin" -m venv .venv
fi
say "pip: upgrading"
pip_install --upgrade pip || { say "upgrading pip failed"; exit 2; }

if [ "${1:-}" = "--test" ]; then
  say "installing reportgen (editable) with the test tools (about a minute)"
  pip_install -e '.[test]' || { say "installation failed"; exit 2; }
  .venv/bin/python -c 'import reportgen, playwright, pytest' || { say "installation failed"; exit 2; }
  # The browser tests drive the system Chromium (Debian/Ubuntu package); install it when missing.
  if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    say "Chromium: found"
  else
    if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; else sudo="none"; fi
    if [ "$sudo" != "none" ] && command -v apt-get >/dev/null 2>&1; then
      say "Chromium: installing with apt-get"
      $sudo apt-get update -qq >/dev/null
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
    else
      say "install Chromium yourself (or set REPORTGEN_CHROMIUM) to run the browser tests"
    fi
  fi
else
  say "installing reportgen (about a minute)"
  pip_install . || { say "installation failed"; exit 2; }
  .venv/bin/reportgen --version >/dev/null || { say "installation failed"; exit 2; }
fi
say "ready ($(.venv/bin/reportgen --version))"
