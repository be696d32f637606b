#!/usr/bin/env bash
# Downloads (does not install) the Debian 12 packages aotrt builds against into
# .debs/, to carry to a machine that cannot reach a package registry (the GPU
# machine); scripts/device_env.sh unpacks them there.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .debs
cd .debs
apt-get download libzip-dev libzip4 nlohmann-json3-dev libdnnl-dev libdnnl2 \
  libopenblas-dev libopenblas0 libopenblas0-pthread libopenblas-pthread-dev \
  libgtest-dev libcli11-dev ocl-icd-libopencl1 libgfortran5 \
  opencl-c-headers ocl-icd-opencl-dev opencl-clhpp-headers libsleef3 libsleef-dev
