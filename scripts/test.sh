#!/usr/bin/env bash
# Runs the whole test suite from a clean clone: installs the package (building the Rust core
# with maturin) and its test dependencies, then the Rust tests and the Python tests.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --upgrade pip
python3 -m pip install --quiet '.[test]'
cargo test --release --quiet
# Run from the tests folder so `import fatpipe` finds the installed package, not the sources.
python3 -m pytest -q tests
