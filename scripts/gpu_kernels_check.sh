#!/usr/bin/env bash
# Issue 29's kernels on a GPU machine in one command (about 8 minutes with a cold build):
# builds only what they need into build-gpu/ (libaotrt, aotrt_kernel_tests - the unit tests
# of the integer matmul and attention families - and aotrt_quant_bench), then runs
#   1. aotrt_kernel_tests: CudaInt4Kernels, CudaInt8Kernels, CudaIntMm, CudaDecodeAttention,
#      CudaAttention and the two families' op rows on cuda and cpu      -> kernels_unit.log
#   2. aotrt_quant_bench: GPU time and GB/s of every kernel (--sweep: every split and tile
#      of the int4 kernels), beside the exact kernels and the previous attention path
#                                                                        -> quant_bench.md
#   3. bench/quant_gpu.py: aotrt against ATen on the same torch tensors (bit for bit, or
#      within the stated bounds), and ATen's GPU times joined with the bench's
#                                                                        -> quant_vs_aten.md
# into $OUT (else build-gpu/kernels), printing each step's status and the tables' key lines.
# Exit status 0 only if the build and every check passed.
#
# Usage: scripts/gpu_kernels_check.sh [--skip-build] [--no-sweep]
set -uo pipefail
cd "$(dirname "$0")/.."
SKIP_BUILD=0
SWEEP=--sweep
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-build) SKIP_BUILD=1; shift ;;
    --no-sweep) SWEEP=; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_kernels_check: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
BUILD_DIR=build-gpu
LOG_DIR=${OUT:-$PWD/$BUILD_DIR/kernels}
mkdir -p "$LOG_DIR"
export PYTHONUNBUFFERED=1

# shellcheck source=gpu_env.sh
source scripts/gpu_env.sh
aotrt_gpu_runtime_env
T0=$(date +%s)
if [ "$SKIP_BUILD" = 0 ]; then
  echo "== build: aotrt, aotrt_kernel_tests, aotrt_quant_bench"
  if ! aotrt_gpu_build "$BUILD_DIR" "$LOG_DIR/build.log" aotrt aotrt_kernel_tests aotrt_quant_bench; then
    echo "gpu_kernels_check: the build FAILED (see $LOG_DIR/build.log)" >&2
    exit 1
  fi
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader || true
RC=0

echo "== 1. unit tests ($(( $(date +%s) - T0 )) s)"
(cd "$BUILD_DIR" && timeout 150 ./aotrt_kernel_tests --gtest_color=no) >"$LOG_DIR/kernels_unit.log" 2>&1
UNIT=$?
grep -E '^\[==========\] .* ran|^\[  (PASSED|FAILED|SKIPPED) ' "$LOG_DIR/kernels_unit.log" | tail -n 40
if grep -qE '^\[  SKIPPED \]' "$LOG_DIR/kernels_unit.log"; then
  echo "gpu_kernels_check: tests were skipped (no device?)" >&2
  UNIT=1
fi
echo "unit tests: exit $UNIT"
[ "$UNIT" = 0 ] || RC=1

echo "== 2. aotrt_quant_bench $SWEEP ($(( $(date +%s) - T0 )) s)"
timeout 120 "$BUILD_DIR/aotrt_quant_bench" $SWEEP >"$LOG_DIR/quant_bench.md" 2>&1
BENCH=$?
grep -E '^#|(auto|gemv|decode) \||decode kernel \||previous path|native|cuBLASLt|GEMV' "$LOG_DIR/quant_bench.md" | head -n 120
echo "bench: exit $BENCH"
[ "$BENCH" = 0 ] || RC=1

echo "== 3. against ATen: bench/quant_gpu.py ($(( $(date +%s) - T0 )) s)"
timeout 150 python3 bench/quant_gpu.py --lib "$BUILD_DIR/libaotrt.so" --bench "$LOG_DIR/quant_bench.md" \
  >"$LOG_DIR/quant_vs_aten.md" 2>&1
TORCH=$?
grep -E '^(FAIL|#)|^\| |check' "$LOG_DIR/quant_vs_aten.md" | head -n 60
echo "against ATen: exit $TORCH"
[ "$TORCH" = 0 ] || RC=1

echo "== done in $(( $(date +%s) - T0 )) s: exit $RC; logs in $LOG_DIR"
exit $RC
