#!/usr/bin/env bash
# Weights outside the package and user inputs on the CUDA machine, in one command: runs
# tests/e2e/test_weights.py for cpu and cuda (a package exported with
# package_constants_in_so=False on each device, safetensors sets A and B, outputs against
# eager, WeightsReal.* swap/threads/in-place cases of build-gpu/aotrt_unit_tests).
#
# Usage: scripts/gpu_weights.sh [BUILD_DIR]   (default build-gpu, as scripts/gpu_e2e.sh makes:
#        scripts/gpu_e2e.sh --model linear_bias builds it). Needs torch (CUDA) and safetensors
#        (the H200 image has both: transformers depends on safetensors). Log: $OUT/weights.log
#        when OUT is set, else BUILD_DIR/logs/weights.log.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=gpu_env.sh
source scripts/gpu_env.sh
aotrt_gpu_pytest_against gpu_weights "${1:-build-gpu}" || exit 1
AOTRT_WEIGHTS_DEVICES=cpu,cuda AOTRT_BIN="$PWD/$BUILD_DIR/aotrt" \
  AOTRT_UNIT_TESTS="$PWD/$BUILD_DIR/aotrt_unit_tests" AOTRT_CUDNN_ALLOW_TF32=0 \
  PYTHONPATH="$PWD/python" timeout 900 python3 -m pytest -v -s -p no:cacheprovider \
  tests/e2e/test_weights.py >"$LOG_DIR/weights.log" 2>&1
rc=$?
grep -E "max abs diff|runs on 4 threads|passed|failed|FAILED" "$LOG_DIR/weights.log" | tail -n 30
exit $rc
