#!/usr/bin/env bash
# The Python package on the CUDA machine: builds and installs it with -DAOTRT_CUDA=ON
# (pip install ., against the torch venv's cuBLAS/cuDNN wheels as scripts/gpu_e2e.sh
# does), then runs tests/python with the CUDA tests on (AOTRT_TEST_CUDA=1): every CPU test
# too, and tests/python/test_cuda.py (torch.cuda tensors in and out through DLPack, numpy
# into a CUDA model, CUDA graph mode, lifetime, threads).
#
# The machine has no network: nanobind and scikit-build-core (with its dependencies) come
# from .whl/ when pip cannot find them installed. Fill it where PyPI is reachable:
#   pip download --no-deps -d .whl nanobind==3.1.0 scikit-build-core==1.1.2 pathspec packaging \
#     tomli exceptiongroup typing-extensions   # the last three: for a python older than 3.11
# and carry .whl/ along. The zoo's CPU exports run AOTRT_E2E_JOBS (default 8) processes.
# Usage: scripts/python_gpu.sh [pytest arguments, e.g. -k cuda for the CUDA tests alone]
# Logs go to $OUT when it is set (python_gpu.log), else build-python-gpu/.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=build-python-gpu
LOG_DIR=${OUT:-$BUILD_DIR}
mkdir -p "$BUILD_DIR" "$LOG_DIR"
# shellcheck source=gpu_env.sh
source scripts/gpu_env.sh
aotrt_gpu_runtime_env

if ! python3 -c "import nanobind, scikit_build_core" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl nanobind==3.1.0 scikit-build-core==1.1.2
fi
CONFIG=(-C build-dir="$BUILD_DIR/wheel" -C cmake.define.AOTRT_CUDA=ON)
[ -n "$NVCC" ] && CONFIG+=(-C cmake.define.CMAKE_CUDA_COMPILER="$NVCC")
[ -n "$CUDA_WHEELS_ROOT" ] && CONFIG+=(-C cmake.define.AOTRT_CUDA_WHEELS_ROOT="$CUDA_WHEELS_ROOT")
echo "== pip install . ${CONFIG[*]}"
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) python3 -m pip install -q --no-build-isolation --no-deps \
  --force-reinstall "${CONFIG[@]}" . 2>&1 | tee "$LOG_DIR/python_gpu_build.log"
echo "== pytest tests/python (AOTRT_TEST_CUDA=1)"
# Not with python/ on PYTHONPATH: the source tree's python/aotrt/ would shadow the install.
AOTRT_TEST_CUDA=1 AOTRT_E2E_JOBS=${AOTRT_E2E_JOBS:-8} python3 -m pytest tests/python -v -rA "$@" 2>&1 | tee "$LOG_DIR/python_gpu.log"
