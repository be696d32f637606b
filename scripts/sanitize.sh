#!/usr/bin/env bash
# Builds the unit and conformance tests with AddressSanitizer and
# UndefinedBehaviorSanitizer in a build folder of their own, and runs them
# with leak detection; any report stops the run with a non-zero exit.
#
#   scripts/sanitize.sh            # build-sanitize/, every test
#   AOTRT_SANITIZE_DIR=dir AOTRT_JOBS=2 scripts/sanitize.sh --gtest_filter='Conformance*'
#
# Arguments go to aotrt_unit_tests. The randomized model check runs 25000
# steps here unless AOTRT_RANDOM_STEPS says otherwise: instrumented, its
# 100000 steps (what the uninstrumented ctest run takes) cost 264 s of CI.
# allocator_may_return_null=1: the tests ask for impossible sizes on purpose
# and expect aotrt's out-of-memory error, not ASan's abort.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
BUILD_DIR="${AOTRT_SANITIZE_DIR:-build-sanitize}"
JOBS="${AOTRT_JOBS:-$(nproc)}"
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)

# -O1 with line tables only: instrumented -O2 -g builds take three times as
# long to compile, for a run that is a few seconds faster.
cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DAOTRT_SANITIZE=address,undefined >/dev/null
cmake --build "$BUILD_DIR" --target aotrt_unit_tests -j"$JOBS"
built=$(date +%s)

export AOTRT_RANDOM_STEPS="${AOTRT_RANDOM_STEPS:-25000}"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:allocator_may_return_null=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
"$BUILD_DIR/aotrt_unit_tests" "$@"
echo "sanitize.sh: built in $(( built - start )) s, ran in $(( $(date +%s) - built )) s"
