#!/usr/bin/env bash
# Builds the unit tests with ThreadSanitizer in a build folder of their own and
# runs the concurrency tests under it (the robustness tests that run models
# from several threads, the concurrency cases of the conformance suite and
# the handle registry's); any report stops the run with a non-zero exit.
#
#   scripts/tsan.sh                         # build-tsan/, the default filter
#   AOTRT_TSAN_DIR=dir scripts/tsan.sh --gtest_filter='RobustConcurrency.*'
#   AOTRT_ROBUST_PACKAGE=... scripts/tsan.sh   # also RobustReal.* on a real package
#
# Arguments go to aotrt_unit_tests. Suppressions (scripts/tsan.supp) cover
# only libraries that are not built with TSan and synchronise in ways it
# cannot see: see the comments there.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python_env.sh  # the project's .venv (scripts/install_deps.sh)
start=$(date +%s)
BUILD_DIR="${AOTRT_TSAN_DIR:-build-tsan}"
JOBS="${AOTRT_JOBS:-$(nproc)}"
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)

cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DAOTRT_SANITIZE=thread >/dev/null
cmake --build "$BUILD_DIR" --target aotrt_unit_tests -j"$JOBS"
built=$(date +%s)

FILTER='Robust*Concurrency*:*RobustLifecycleModels.ModelThreadLocals*:RobustReal.EightThreads*:ShimBoundary.LastErrorIsPerThread:CoreHandles.ConcurrentRegistrationAndDeletion:CoreStorage.ReferencesReleasedFromManyThreadsFreeOnce:CpuConv.ConcurrentCallsAgree:ShimGradMode.OffByDefaultAndPerThread'
ARGS=("$@")
if [ "${#ARGS[@]}" -eq 0 ]; then ARGS=(--gtest_filter="$FILTER"); fi
# halt_on_error: the first report fails the run; second_deadlock_stack: full
# stacks for lock-order reports.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
"$BUILD_DIR/aotrt_unit_tests" "${ARGS[@]}" --gtest_output=json:"$BUILD_DIR/tsan_tests.json"
ran=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for s in d["testsuites"] for t in s["testsuite"] if t.get("result")=="COMPLETED"))' "$BUILD_DIR/tsan_tests.json")
if [ -n "${AOTRT_ROBUSTNESS_LOG:-}" ]; then
  python3 -c 'import json,sys; print(json.dumps(dict(area="concurrency", case=sys.argv[1], outcome="no data race reported", message=sys.argv[2], source="script")))' \
    "ThreadSanitizer over the concurrency tests (scripts/tsan.sh, $ran tests)" \
    "suppressed, as uninstrumented libraries: $(grep -E '^race:' scripts/tsan.supp | cut -d: -f2 | tr '\n' ' ')" >>"$AOTRT_ROBUSTNESS_LOG"
fi
echo "tsan.sh: built in $(( built - start )) s, ran $ran tests in $(( $(date +%s) - built )) s"
