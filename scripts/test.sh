#!/usr/bin/env bash
# Runs every test: builds aotrt, runs the GoogleTest unit and conformance
# suites (ctest), the same suites under AddressSanitizer and
# UndefinedBehaviorSanitizer, and the end-to-end zoo (export with torch 2.13,
# run with build/aotrt, compare with eager).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

echo "== build"
scripts/build.sh

echo "== unit and conformance tests"
ctest --test-dir build --output-on-failure -j"$(nproc)"

echo "== sanitizers (address, undefined, leaks)"
scripts/sanitize.sh

echo "== end-to-end zoo on the CPU"
export AOTRT_BIN="$PWD/build/aotrt"
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" python3 -m pytest tests/e2e -v -rA

echo "== all tests passed in $(( $(date +%s) - start )) s"
