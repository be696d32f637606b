#!/usr/bin/env bash
# The CUDA backend's tests on a GPU machine (the H200), in one command: builds aotrt with
# -DAOTRT_CUDA=ON into build-gpu/ (against the torch venv's nvidia-* wheels and the Debian
# packages in .debs/, as scripts/gpu_e2e.sh does: scripts/gpu_env.sh), then runs the unit tests:
# every device-generic row of the op families (tests/unit/ops/) on cuda as well as cpu, the CUDA
# op kernels' own tests and the rest of tests/unit/cuda/. CI only compiles and links these
# (scripts/test.sh, build-cuda/): this is where they run.
# Exit status 0 only if the build and every selected test passed.
#
# Usage: scripts/gpu_ops_check.sh [--build-dir DIR] [--skip-build] [--filter GTEST_FILTER]
#   --filter F    gtest filter (default: every test)
# Writes build.log and unit.log into $OUT when it is set, else into BUILD_DIR/logs.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=build-gpu
SKIP_BUILD=0
FILTER='*'
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) BUILD_DIR=${2:?--build-dir needs a folder}; shift 2 ;;
    --skip-build) SKIP_BUILD=1; shift ;;
    --filter) FILTER=${2:?--filter needs a gtest filter}; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_ops_check: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
LOG_DIR=${OUT:-$PWD/$BUILD_DIR/logs}
mkdir -p "$LOG_DIR"

# shellcheck source=gpu_env.sh
source scripts/gpu_env.sh
aotrt_gpu_runtime_env
aotrt_gpu_cmake_args "$BUILD_DIR"
if [ "$SKIP_BUILD" = 0 ]; then
  echo "== build: cmake ${CMAKE_ARGS[*]}"
  T=$(date +%s)
  if ! { cmake "${CMAKE_ARGS[@]}" && ninja -C "$BUILD_DIR" -j"$(nproc)" -k 0; } >"$LOG_DIR/build.log" 2>&1; then
    tail -n 40 "$LOG_DIR/build.log"
    echo "gpu_ops_check: the build FAILED (see $LOG_DIR/build.log)" >&2
    exit 1
  fi
  echo "== build: ok ($(( $(date +%s) - T )) s)"
fi
if ! python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null &&
   ! command -v nvidia-smi >/dev/null; then
  echo "gpu_ops_check: no GPU here: the CUDA tests cannot run" >&2
  exit 2
fi
echo "== unit tests: $BUILD_DIR/aotrt_unit_tests --gtest_filter='$FILTER'"
T=$(date +%s)
(cd "$BUILD_DIR" && timeout 600 ./aotrt_unit_tests --gtest_color=no --gtest_filter="$FILTER") \
  >"$LOG_DIR/unit.log" 2>&1
RC=$?
grep -E '^\[==========\] .* ran|^\[  (PASSED|FAILED|SKIPPED) ' "$LOG_DIR/unit.log" | tail -n 60
# A CUDA row that skipped (no device seen) is not a pass.
if grep -qE '^\[  SKIPPED \].*/cuda' "$LOG_DIR/unit.log"; then
  echo "gpu_ops_check: CUDA rows were skipped" >&2
  RC=1
fi
echo "== unit tests: exit $RC ($(( $(date +%s) - T )) s); log $LOG_DIR/unit.log"
exit $RC
