#!/usr/bin/env bash
# Install the project with its test extras (and the system tools the tests use), lint (ruff) and type-check
# (mypy) the tree, then run the suite. This is the README's test command and what CI runs:
# `bash tools/test.sh [pytest args]` (configuration of all three in pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet -e '.[test]'
if ! command -v gnugo >/dev/null 2>&1; then
    # GNU Go is the real referee/opponent in the Go tests (Debian package `gnugo`).
    if command -v apt-get >/dev/null 2>&1; then
        SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
        $SUDO apt-get install -y -qq gnugo >/dev/null 2>&1 || { $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq gnugo >/dev/null; } \
            || echo "warning: could not install gnugo; Go tests that need it will fail" >&2
    fi
fi
python3 -m ruff check .
python3 -m ruff format --check .
python3 -m mypy
exec python3 -m pytest "$@"
