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
  libzip-dev nlohmann-json3-dev libdnnl-dev libopenblas-dev \
  ocl-icd-opencl-dev \
  libgtest-dev libgmock-dev libcli11-dev libsleef-dev \
  clang-14 libclang-rt-14-dev libomp-14-dev >/dev/null  # libFuzzer (scripts/fuzz.sh)
python3 -m pip install -q "torch==2.13.0" numpy pytest hypothesis
echo "install_deps: done"
