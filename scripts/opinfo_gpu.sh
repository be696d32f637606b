#!/usr/bin/env bash
# The OpInfo sweep (tests/opinfo/sweep.py) on the CUDA machine: builds aotrt with
# -DAOTRT_CUDA=ON into build-gpu/ (as scripts/gpu_e2e.sh does) unless --skip-build, then
# sweeps op_db for cuda. The image lacks expecttest (op_db needs it): its pure-Python wheel
# travels in .whl/ (carry it) and is installed into /tmp/site first.
#
# Usage: scripts/opinfo_gpu.sh [--dtypes float32,...] [--workers N] [--ops a,b | --slice ci|dtypes|all]
#                              [--skip-build] [--device cuda|cpu] [--time-limit SECONDS]
#   --slice S       which ops (tests/opinfo/sweep.py --slice; `dtypes` is the set swept in the
#                   dtypes other than float32)
#   --time-limit S  stop the sweep after S seconds (SIGTERM): the cases that finished are written,
#                   and the table says it was stopped (device calls are time-boxed)
# Writes results.json, table.md (every dtype swept so far on this machine) and sweep.log into
# $OUT/opinfo-<device> (else build-gpu/logs/opinfo-<device>).
# Packages are cached in build-gpu/opinfo-cache-<device>, which a warm machine keeps between
# calls, so a call per dtype (float32 first) reuses the earlier calls' work.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
DTYPES=float32
WORKERS=7
DEVICE=cuda
SKIP_BUILD=0
TIME_LIMIT=0
OPS_ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dtypes) DTYPES=${2:?}; shift 2 ;;
    --workers) WORKERS=${2:?}; shift 2 ;;
    --ops) OPS_ARGS=(--ops "${2:?}"); shift 2 ;;
    --slice) OPS_ARGS=(--slice "${2:?}"); shift 2 ;;
    --device) DEVICE=${2:?}; shift 2 ;;
    --skip-build) SKIP_BUILD=1; shift ;;
    --time-limit) TIME_LIMIT=${2:?}; shift 2 ;;
    *) echo "opinfo_gpu: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
BUILD_DIR=build-gpu
LOG_DIR=${OUT:-$REPO/$BUILD_DIR/logs}/opinfo-$DEVICE
mkdir -p "$LOG_DIR"

if ! python3 -c "import expecttest" 2>/dev/null; then
  ls .whl/expecttest-*.whl >/dev/null 2>&1 || { echo "opinfo_gpu: no expecttest here and no .whl/expecttest-*.whl (carry .whl)" >&2; exit 2; }
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/expecttest-*.whl || exit 2
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi

# shellcheck source=gpu_env.sh
source scripts/gpu_env.sh
aotrt_gpu_runtime_env
if [ "$SKIP_BUILD" = 0 ]; then
  aotrt_gpu_build "$BUILD_DIR" "$LOG_DIR/build.log" aotrt_cli || { echo "opinfo_gpu: build failed" >&2; exit 1; }
fi

# Results accumulate in build-gpu/opinfo-<device> across calls (one table, a few dtypes per
# call) and are copied to $OUT.
export PYTHONUNBUFFERED=1
LIMIT=()
[ "$TIME_LIMIT" != 0 ] && LIMIT=(timeout -s TERM "$TIME_LIMIT")
"${LIMIT[@]}" python3 -m tests.opinfo.sweep --device "$DEVICE" --dtypes "$DTYPES" --workers "$WORKERS" \
  "${OPS_ARGS[@]}" --aotrt "$BUILD_DIR/aotrt" --cache "$BUILD_DIR/opinfo-cache-$DEVICE" \
  --out "$BUILD_DIR/opinfo-$DEVICE" 2>&1 | grep -v -e "Warning" -e "proxy executor as fallback" | tee "$LOG_DIR/sweep.log"
rc=${PIPESTATUS[0]}
cp "$BUILD_DIR/opinfo-$DEVICE/results.json" "$BUILD_DIR/opinfo-$DEVICE/table.md" "$LOG_DIR/" 2>/dev/null
exit "$rc"
