#!/usr/bin/env bash
# The Python package on the CUDA machine: builds and installs it with -DAOTRT_CUDA=ON
# (pip install ., against the torch venv's cuBLAS/cuDNN wheels as scripts/gpu_e2e.sh
# does), then runs tests/python with the CUDA tests on (AOTRT_TEST_CUDA=1): every CPU test
# too, and tests/python/test_cuda.py (torch.cuda tensors in and out through DLPack, numpy
# into a CUDA model, CUDA graph mode, lifetime, threads).
#
# --from-build DIR (before the pytest arguments) saves the second CUDA build where device
# time is short: it adds the extension to the CUDA build DIR the other GPU scripts made
# (scripts/gpu_env.sh's configure, plus -DAOTRT_PYTHON=ON: only the extension and its stubs
# are compiled), stages the package with the wheel's own install rules (cmake --install
# --component python, and python/aotrt's files, as scikit-build-core's wheel.packages) into
# DIR/python-package, and tests that.
#
# The machine has no network: nanobind 3.1.0 and scikit-build-core 1.1.2, which
# pyproject.toml pins, come from .whl/ when python3 has other versions (the H200 image has
# scikit-build-core 1.1.0). Fill it where PyPI is reachable:
#   pip download --no-deps -d .whl nanobind==3.1.0 scikit-build-core==1.1.2
# and carry .whl/ along. The zoo's CPU exports run AOTRT_E2E_JOBS (default 8) processes.
# --tests PATH (after --from-build, if any) runs another test folder with that package instead
# of tests/python, e.g. tests/generate (its CUDA tests export for cuda and run aotrt's reference
# loop against transformers' generate).
# Usage: scripts/python_gpu.sh [--from-build DIR] [--tests PATH] [pytest arguments, e.g. -k cuda]
# Logs go to $OUT when it is set (python_gpu.log), else build-python-gpu/.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO_ROOT=$PWD
BUILD_DIR=build-python-gpu
FROM_BUILD=""
if [ "${1:-}" = "--from-build" ]; then FROM_BUILD=${2:?--from-build needs a build dir}; shift 2; fi
TESTS=tests/python
if [ "${1:-}" = "--tests" ]; then TESTS=${2:?--tests needs a test folder}; shift 2; fi
LOG_DIR=${OUT:-$BUILD_DIR}
mkdir -p "$BUILD_DIR" "$LOG_DIR"
# shellcheck source=gpu_env.sh
source scripts/gpu_env.sh
aotrt_gpu_runtime_env

# pyproject.toml pins its build requirements (minimum-version = build-system.requires), and
# the H200 image's own scikit-build-core is older (1.1.0): the pinned ones go into a folder of
# the build dir, first on PYTHONPATH, unless python3 already has exactly those versions.
aotrt_gpu_python_build_deps "$BUILD_DIR"
if [ -n "$FROM_BUILD" ]; then
  STAGE="$REPO_ROOT/$FROM_BUILD/python-package"
  aotrt_gpu_cmake_args "$FROM_BUILD" -DAOTRT_PYTHON=ON
  echo "== cmake ${CMAKE_ARGS[*]} && ninja _aotrt _aotrt_stub; staged into $STAGE"
  rm -rf "$STAGE"
  { cmake "${CMAKE_ARGS[@]}" && ninja -C "$FROM_BUILD" _aotrt _aotrt_stub &&
    cmake --install "$FROM_BUILD" --component python --prefix "$STAGE" &&
    cp python/aotrt/*.py python/aotrt/py.typed "$STAGE/aotrt/"; } \
    >"$LOG_DIR/python_gpu_build.log" 2>&1 || { tail -n 30 "$LOG_DIR/python_gpu_build.log"; exit 1; }
  export PYTHONPATH="$STAGE${PYTHONPATH:+:$PYTHONPATH}"
else
  CONFIG=(-C build-dir="$BUILD_DIR/wheel" -C cmake.define.AOTRT_CUDA=ON)
  [ -n "$NVCC" ] && CONFIG+=(-C cmake.define.CMAKE_CUDA_COMPILER="$NVCC")
  [ -n "$CUDA_WHEELS_ROOT" ] && CONFIG+=(-C cmake.define.AOTRT_CUDA_WHEELS_ROOT="$CUDA_WHEELS_ROOT")
  echo "== pip install . ${CONFIG[*]}"
  CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) python3 -m pip install -q --no-build-isolation --no-deps \
    --force-reinstall "${CONFIG[@]}" . 2>&1 | tee "$LOG_DIR/python_gpu_build.log"
fi
# The CUDA tests' references are exact fp32 (TF32 off in eager): aotrt's cuDNN convolutions then
# run without TF32 too, as every GPU script runs them (Note [TF32] in src/cuda/handles.h). With
# TF32 on (aotrt's default, as PyTorch's) pointwise_c2f differed by 1.8e-4 on the H200.
export AOTRT_CUDNN_ALLOW_TF32=0
echo "== pytest $TESTS (AOTRT_TEST_CUDA=1, AOTRT_CUDNN_ALLOW_TF32=0)"
# Not with python/ on PYTHONPATH: the source tree's python/aotrt/ would shadow the install.
AOTRT_TEST_CUDA=1 AOTRT_E2E_JOBS=${AOTRT_E2E_JOBS:-8} python3 -m pytest "$TESTS" -v -rA "$@" 2>&1 | tee "$LOG_DIR/python_gpu.log"
