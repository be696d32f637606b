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
  build-essential pkg-config cmake ninja-build \
  libzip-dev nlohmann-json3-dev libdnnl-dev libopenblas-dev libkissfft-dev \
  ocl-icd-opencl-dev \
  libgtest-dev libgmock-dev libcli11-dev libsleef-dev \
  clang-14 libclang-rt-14-dev libomp-14-dev >/dev/null  # libFuzzer (scripts/fuzz.sh)
python3 -m pip install -q "torch==2.13.0" numpy pytest hypothesis
# The CUDA math libraries that the CUDA build links (scripts/test.sh compiles
# and links it; running it needs a GPU): PyPI's nvidia-* wheels, at the
# versions torch 2.11.0+cu130 pins (the H200's torch), unpacked into a folder
# of their own with --no-deps, so no torch comes with them and nothing lands
# in the system site-packages. cuSPARSE and nvJitLink are cuSOLVER's own
# dependencies (the linker resolves them). CMake: -DAOTRT_CUDA_WHEELS_ROOT.
AOTRT_CUDA_WHEELS="${AOTRT_CUDA_WHEELS:-/opt/aotrt-cuda-wheels}"
cuda_wheels=(nvidia-cublas==13.1.0.3 nvidia-cudnn-cu13==9.19.0.56 nvidia-cufft==12.0.0.61
             nvidia-curand==10.4.0.35 nvidia-cusolver==12.0.4.66
             nvidia-cusparse==12.6.3.3 nvidia-nvjitlink==13.0.88)
if [ "$(cat "$AOTRT_CUDA_WHEELS/aotrt-wheels.txt" 2>/dev/null)" != "${cuda_wheels[*]}" ]; then
  python3 -m pip install -q --no-deps --upgrade --target "$AOTRT_CUDA_WHEELS" "${cuda_wheels[@]}"
  echo "${cuda_wheels[*]}" >"$AOTRT_CUDA_WHEELS/aotrt-wheels.txt"
fi
# Hugging Face decoders of the e2e zoo (random weights, no download); this
# version pulls no torch of its own.
python3 -m pip install -q "transformers==5.24.0"
echo "install_deps: done"
