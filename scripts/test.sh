#!/usr/bin/env bash
# Runs the whole test suite from a clean clone: installs the package (building the Rust core
# with maturin) and its test dependencies, runs the linters (rustfmt, clippy, ruff), then
# the Rust tests and the Python tests.
set -euo pipefail
cd "$(dirname "$0")/.."
# Tools the tests check fatpipe's output with: tshark and tcpdump read its packet captures,
# chromium renders its HTML reports; setpriv (util-linux) drops root's privileges to test
# fatpipe emulate's message without them; tc (iproute2) rate-limits the veth path of the
# probe tests; clang compiles fatpipe's BPF congestion controls (bpf/) for the emulator's
# tests and for the BPF objects the simulator runs. Installed from Debian's packages when
# missing.
missing=()
command -v tshark >/dev/null || missing+=(tshark)
command -v tcpdump >/dev/null || missing+=(tcpdump)
command -v chromium >/dev/null || missing+=(chromium)
command -v setpriv >/dev/null || missing+=(util-linux)
command -v tc >/dev/null || missing+=(iproute2)
command -v clang >/dev/null || missing+=(clang)
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
python3 -m pip install --quiet --upgrade pip
python3 -m pip install --quiet '.[test]'
# Lints first: they take seconds and fail fast. Rules: rustfmt.toml, clippy's defaults with
# warnings as errors, and pyproject.toml's [tool.ruff].
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --release --quiet -- -D warnings
python3 -m ruff check python tests
cargo test --release --quiet
# Run from the tests folder so `import fatpipe` finds the installed package, not the sources.
python3 -m pytest -q tests
