#!/usr/bin/env bash
# Large packages as torch writes them, on the CUDA machine (issue 28, item 1), in one command:
# tests/e2e/test_large_packages.py for cpu and cuda (torch's weight layouts on small models:
# the default, force_mmap_weights (weights appended to the .so, mapped from the .pt2),
# binary_blob, pickle_weights; a KV cache mutated in place) and the appended-weights cases of
# tests/e2e/test_robust_real.py, against build-gpu's aotrt. The Llama-3-8B-shaped model is
# bench/llm_large.py, a device call of its own.
#
# Usage: scripts/gpu_large.sh [BUILD_DIR]   (default build-gpu, as scripts/gpu_e2e.sh makes:
#        scripts/gpu_e2e.sh --model linear_bias builds it). Log: $OUT/large.log when OUT is
#        set, else BUILD_DIR/logs/large.log.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=gpu_env.sh
source scripts/gpu_env.sh
aotrt_gpu_pytest_against gpu_large "${1:-build-gpu}" || exit 1
AOTRT_LARGE_DEVICES=cpu,cuda AOTRT_BIN="$PWD/$BUILD_DIR/aotrt" \
  AOTRT_UNIT_TESTS="$PWD/$BUILD_DIR/aotrt_unit_tests" AOTRT_CUDNN_ALLOW_TF32=0 \
  PYTHONPATH="$PWD/python" timeout 540 python3 -m pytest -v -s -p no:cacheprovider \
  tests/e2e/test_large_packages.py "tests/e2e/test_robust_real.py::test_appended_weights_bad_packages" \
  >"$LOG_DIR/large.log" 2>&1
rc=$?
grep -E "max abs diff|weights layout|passed|failed|FAILED|Error" "$LOG_DIR/large.log" | tail -n 40
exit $rc
