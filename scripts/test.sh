#!/usr/bin/env bash
# Runs every test: builds aotrt, compiles and links the CUDA backend too
# (build-cuda/: library, CLI, unit tests; run on a GPU machine by
# scripts/gpu_ops_check.sh, as there is no GPU here), runs the GoogleTest unit and conformance
# suites (ctest), the same suites under AddressSanitizer and
# UndefinedBehaviorSanitizer, the concurrency tests under ThreadSanitizer, a
# short fuzzing run (replaying fuzz/corpus/), and the end-to-end tests (export
# with torch 2.13, run with build/aotrt, compare with eager; the robustness
# cases on real packages). The robustness cases are recorded as they run and
# rendered into build/robustness.md and compared with docs/robustness.md
# (scripts/robustness_table.py).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
steps=()
step() { steps+=("$1: $(( $(date +%s) - $2 )) s"); }

export AOTRT_ROBUSTNESS_LOG="$PWD/build/robustness.jsonl"
mkdir -p build
rm -f "$AOTRT_ROBUSTNESS_LOG"

echo "== build"
t=$(date +%s); scripts/build.sh; step build "$t"

echo "== CUDA build (compiled and linked, not run: no GPU here)"
# Against the CUDA math libraries that scripts/install_deps.sh unpacked.
t=$(date +%s)
AOTRT_BUILD_DIR=build-cuda scripts/build.sh -DAOTRT_CUDA=ON \
  -DAOTRT_CUDA_WHEELS_ROOT="${AOTRT_CUDA_WHEELS:-/opt/aotrt-cuda-wheels}"
step cuda-build "$t"

echo "== unit and conformance tests"
t=$(date +%s); ctest --test-dir build --output-on-failure -j"$(nproc)"; step ctest "$t"

echo "== sanitizers (address, undefined, leaks)"
t=$(date +%s); scripts/sanitize.sh; step asan+ubsan "$t"

echo "== thread sanitizer (concurrency tests)"
t=$(date +%s); AOTRT_TSAN_DIR=build-tsan scripts/tsan.sh; step tsan "$t"

echo "== fuzzing (short: corpus replay, then 60 s per target)"
t=$(date +%s); AOTRT_FUZZ_DIR=build-fuzz scripts/fuzz.sh --short; step fuzz "$t"

echo "== end-to-end tests on the CPU"
t=$(date +%s)
export AOTRT_BIN="$PWD/build/aotrt"
export AOTRT_TSAN_UNIT_TESTS="$PWD/build-tsan/aotrt_unit_tests"
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" python3 -m pytest tests/e2e -v -rA
step e2e "$t"

echo "== docs/robustness.md lists every case that ran"
# The table is regenerated from this run's records and the H200's (committed:
# docs/results/robustness_h200.jsonl, from scripts/gpu_e2e.sh --robust) into
# build/robustness.md. The committed docs/robustness.md must list every case
# this run tried, with the same outcome (messages may differ: temporary paths,
# timings); regenerate it with --write docs/robustness.md when it does not.
cp docs/robustness.md build/robustness.md
python3 scripts/robustness_table.py "$AOTRT_ROBUSTNESS_LOG" docs/results/robustness_h200.jsonl \
  --write build/robustness.md
python3 scripts/robustness_table.py "$AOTRT_ROBUSTNESS_LOG" --check docs/robustness.md


printf '%s\n' "${steps[@]}"
echo "== all tests passed in $(( $(date +%s) - start )) s"
