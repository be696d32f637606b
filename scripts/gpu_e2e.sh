#!/usr/bin/env bash
# aotrt end to end on the CUDA machine, in one command (2.5 min measured on 16 cores + 1 H200:
# a 106 s export of 25 models with 8 processes overlapping a 52 s build and the unit tests):
#   1. exports the whole zoo for cuda (CPU zoo models too) in the background, in parallel
#      (python3 -m aotrt_tools.e2e export; eager references are computed there, TF32 off);
#   2. meanwhile builds aotrt with -DAOTRT_CUDA=ON into build-gpu/, against the CUDA math
#      libraries of the torch venv's nvidia-* wheels and the Debian packages in .debs/
#      (unpacked by scripts/device_env.sh);
#   3. runs build-gpu/aotrt_unit_tests (the conformance suite included);
#   4. runs every exported model through build-gpu/aotrt run, compares with eager and
#      prints a markdown table (model, dtype, max abs diff, tolerance, pass/fail, export s).
# One failing model does not stop the others. Exit status 0 only if the build, the unit
# tests and every model passed.
#
# Usage: scripts/gpu_e2e.sh [--jobs N] [--model NAME]... [--build-dir DIR] [--skip-build]
#                           [--skip-unit] [--robust] [--noise] [--dry-run]
#   --jobs N      parallel export processes (default 8)
#   --model NAME  only this zoo model (repeatable; default: every model meant for cuda)
#   --skip-build  reuse an existing build dir; --skip-unit: don't run the unit tests
#   --robust      afterwards, the robustness cases on real packages for cpu and cuda
#                 (tests/e2e/test_robust_real.py: 1,000 loads, 8 threads with a stream each,
#                 bad inputs, allocation cap, an allocation failing mid-run, the environment
#                 left alone) and the differential op tests (tests/e2e/test_diff_ops.py) on
#                 both devices, recorded into robust_cuda.jsonl
#   --noise       afterwards, print the tolerance yardsticks (python3 -m aotrt_tools.zoo --noise)
#   --dry-run     print what would run (wheel roots, cmake arguments, models) and stop
# Writes build.log, export.log, unit.log, gpu_e2e.md (and robust.log, robust_cuda.jsonl,
# noise.log) into $OUT when it is
# set, else into BUILD_DIR/logs. Needs python3 with torch (CUDA), cmake, ninja, nvcc; no network.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

JOBS=8
BUILD_DIR=build-gpu
SKIP_BUILD=0
SKIP_UNIT=0
NOISE=0
ROBUST=0
DRY_RUN=0
MODEL_ARGS=()
usage() { sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) JOBS=${2:?--jobs needs a number}; shift 2 ;;
    --model) MODEL_ARGS+=(--model "${2:?--model needs a name}"); shift 2 ;;
    --build-dir) BUILD_DIR=${2:?--build-dir needs a folder}; shift 2 ;;
    --skip-build) SKIP_BUILD=1; shift ;;
    --skip-unit) SKIP_UNIT=1; shift ;;
    --noise) NOISE=1; shift ;;
    --robust) ROBUST=1; shift ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu_e2e: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
case "$JOBS" in ''|*[!0-9]*|0) echo "gpu_e2e: --jobs wants a positive integer, got '$JOBS'" >&2; exit 2 ;; esac

LOG_DIR=${OUT:-$REPO/$BUILD_DIR/logs}
EXPORT_DIR=$REPO/$BUILD_DIR/zoo
T_START=$(date +%s)
STEPS=()   # "name|seconds|status" for the summary
now() { date +%s; }
record() { STEPS+=("$1|$2|$3"); echo "== $1: $3 ($2 s)"; }

# -- 0. python with a CUDA torch, and the wheels' cuBLAS/cuDNN --------------------------------
if [ "$DRY_RUN" = 0 ] && ! python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "gpu_e2e: python3's torch sees no CUDA device; this script is for the GPU machine" >&2
  exit 2
fi
# The torch venv's nvidia-* wheels (cuBLAS, cuDNN, cuFFT, cuRAND, cuSOLVER), nvcc (scripts/gpu_env.sh).
# shellcheck source=gpu_env.sh
source scripts/gpu_env.sh
echo "CUDA wheels: ${CUDA_WHEELS_ROOT:-no nvidia-* wheels with cuBLAS found (CMake uses the CUDA toolkit)}"
aotrt_gpu_cmake_args "$BUILD_DIR"
echo "build:  cmake ${CMAKE_ARGS[*]} && ninja -C $BUILD_DIR -j$(nproc)$([ "$SKIP_BUILD" = 1 ] && echo ' (skipped)')"
echo "unit:   $BUILD_DIR/aotrt_unit_tests$([ "$SKIP_UNIT" = 1 ] && echo ' (skipped)')"
echo "models (export order, $JOBS processes):"
PYTHONPATH="$REPO/python" python3 -c '
import sys
from aotrt_tools import e2e, zoo
for n in e2e.export_order("cuda", [a for a in sys.argv[1:] if a != "--model"] or None):
    e = zoo.entry(n)  # KeyError: an unknown name
    print(f"  {n:26s} {str(e.dtype)[6:]:9s} atol {e.atol:g} rtol {e.rtol:g}  options {e.options or {}}")
for n, why in zoo.UNAVAILABLE.items():
    print(f"  {n:26s} not registered here: {why}")
' "${MODEL_ARGS[@]}" || { echo "gpu_e2e: unknown --model (see the list above)" >&2; exit 2; }
echo "LD_LIBRARY_PATH for aotrt: $WHEEL_LIBS (+ .deps from scripts/device_env.sh)"
echo "logs: $LOG_DIR"
[ "$DRY_RUN" = 1 ] && exit 0
mkdir -p "$LOG_DIR" "$EXPORT_DIR"
rm -f "$EXPORT_DIR/exports.json" "$EXPORT_DIR/export.rc"

# -- 1. exports, in the background (the long pole; they overlap the build) -------------------
# Two inductor compile workers per export process keeps JOBS processes within the cores.
echo "== export: $JOBS processes, log $LOG_DIR/export.log"
T_EXPORT=$(now)
(
  export PYTHONPATH="$REPO/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
  export TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-2}
  python3 -m aotrt_tools.e2e export --device cuda --out "$EXPORT_DIR" --jobs "$JOBS" "${MODEL_ARGS[@]}" \
    >"$LOG_DIR/export.log" 2>&1
  echo $? >"$EXPORT_DIR/export.rc"
) &
EXPORT_PID=$!

# -- 2. build ---------------------------------------------------------------------------------
aotrt_gpu_runtime_env
BUILD_OK=1
if [ "$SKIP_BUILD" = 0 ]; then
  T=$(now)
  echo "== build: cmake ${CMAKE_ARGS[*]}"
  if cmake "${CMAKE_ARGS[@]}" >"$LOG_DIR/build.log" 2>&1 &&
     ninja -C "$BUILD_DIR" -j"$(nproc)" >>"$LOG_DIR/build.log" 2>&1; then
    record build "$(( $(now) - T ))" ok
  else
    BUILD_OK=0
    tail -n 40 "$LOG_DIR/build.log"
    record build "$(( $(now) - T ))" FAILED
  fi
fi
if [ ! -x "$BUILD_DIR/aotrt" ]; then
  BUILD_OK=0
  echo "gpu_e2e: no $BUILD_DIR/aotrt" >&2
fi

# -- 3. unit and conformance tests ------------------------------------------------------------
UNIT_OK=1
if [ "$SKIP_UNIT" = 0 ]; then
  T=$(now)
  if [ -x "$BUILD_DIR/aotrt_unit_tests" ]; then
    (cd "$BUILD_DIR" && timeout 300 ./aotrt_unit_tests --gtest_color=no) >"$LOG_DIR/unit.log" 2>&1
    rc=$?
    grep -E '^\[==========\] .* ran|^\[  (PASSED|FAILED|SKIPPED) ' "$LOG_DIR/unit.log" | tail -n 40
    if [ $rc -eq 0 ]; then record unit "$(( $(now) - T ))" ok
    else UNIT_OK=0; record unit "$(( $(now) - T ))" "FAILED (exit $rc, see unit.log)"; fi
  else
    UNIT_OK=0
    record unit 0 "FAILED (no $BUILD_DIR/aotrt_unit_tests)"
  fi
fi

# -- 4. run every model ---------------------------------------------------------------------
wait "$EXPORT_PID"
EXPORT_RC=$(cat "$EXPORT_DIR/export.rc" 2>/dev/null || echo 1)
grep -E '^exported |FAILED' "$LOG_DIR/export.log" | tail -n 30
record export "$(( $(now) - T_EXPORT ))" "$([ "$EXPORT_RC" = 0 ] && echo ok || echo "some FAILED (exit $EXPORT_RC, see export.log)")"

RUN_RC=1
if [ "$BUILD_OK" = 1 ] && [ -f "$EXPORT_DIR/exports.json" ]; then
  T=$(now)
  PYTHONPATH="$REPO/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 \
    python3 -m aotrt_tools.e2e run --device cuda --out "$EXPORT_DIR" --aotrt "$BUILD_DIR/aotrt" \
    --md "$LOG_DIR/gpu_e2e.md" "${MODEL_ARGS[@]}"
  RUN_RC=$?
  record run "$(( $(now) - T ))" "$([ $RUN_RC = 0 ] && echo 'all passed' || echo 'some FAILED')"
else
  echo "# aotrt end-to-end on cuda: not run (build ok: $BUILD_OK, exports.json present: $([ -f "$EXPORT_DIR/exports.json" ] && echo yes || echo no))" \
    | tee "$LOG_DIR/gpu_e2e.md"
fi

ROBUST_RC=0
if [ "$ROBUST" = 1 ] && [ "$BUILD_OK" = 1 ]; then
  T=$(now)
  rm -f "$LOG_DIR/robust_cuda.jsonl"
  AOTRT_ROBUST_DEVICES=cpu,cuda AOTRT_BIN="$REPO/$BUILD_DIR/aotrt" \
    AOTRT_ROBUSTNESS_LOG="$LOG_DIR/robust_cuda.jsonl" PYTHONPATH="$REPO/python" \
    timeout 400 python3 -m pytest -q -p no:cacheprovider tests/e2e/test_robust_real.py >"$LOG_DIR/robust.log" 2>&1
  ROBUST_RC=$?
  # The differential op tests on both devices (CUDA tensors, aoti_torch_cuda_* entry points).
  AOTRT_DIFF_DEVICES=cpu,cuda AOTRT_BIN="$REPO/$BUILD_DIR/aotrt" \
    AOTRT_ROBUSTNESS_LOG="$LOG_DIR/robust_cuda.jsonl" PYTHONPATH="$REPO/python" \
    timeout 900 python3 -m pytest -q -p no:cacheprovider tests/e2e/test_diff_ops.py >>"$LOG_DIR/robust.log" 2>&1 \
    || ROBUST_RC=$?
  tail -n 15 "$LOG_DIR/robust.log"
  record robust "$(( $(now) - T ))" "$([ $ROBUST_RC = 0 ] && echo 'all passed' || echo "FAILED (exit $ROBUST_RC, see robust.log)")"
fi

if [ "$NOISE" = 1 ]; then
  T=$(now)
  PYTHONPATH="$REPO/python" python3 -m aotrt_tools.zoo --noise --device cuda "${MODEL_ARGS[@]}" 2>&1 \
    | tee "$LOG_DIR/noise.log"
  record noise "$(( $(now) - T ))" done
fi

# -- summary --------------------------------------------------------------------------------
{
  echo
  echo "## Steps ($(( $(now) - T_START )) s in all; export overlaps build and unit tests)"
  echo
  echo "| step | s | status |"
  echo "|---|---|---|"
  for s in "${STEPS[@]}"; do IFS='|' read -r n secs st <<<"$s"; echo "| $n | $secs | $st |"; done
} | tee -a "$LOG_DIR/gpu_e2e.md"
echo "logs: $LOG_DIR"
[ "$BUILD_OK" = 1 ] && [ "$UNIT_OK" = 1 ] && [ "$EXPORT_RC" = 0 ] && [ "$RUN_RC" = 0 ] && [ "$ROBUST_RC" = 0 ]
