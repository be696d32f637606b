#!/usr/bin/env bash
# Downloads (does not install) the Debian 12 packages aotrt builds against into
# .debs/, to carry to a machine that cannot reach a package registry (the GPU
# machine); scripts/device_env.sh unpacks them there.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python_env.sh  # pip of the project's .venv, where there is one
mkdir -p .debs
cd .debs
apt-get download libzip-dev libzip4 nlohmann-json3-dev libdnnl-dev libdnnl2 \
  libopenblas-dev libopenblas0 libopenblas0-pthread libopenblas-pthread-dev \
  libgtest-dev libcli11-dev ocl-icd-libopencl1 libgfortran5 \
  opencl-c-headers ocl-icd-opencl-dev opencl-clhpp-headers libsleef3 libsleef-dev \
  libkissfft-dev libkissfft-float131
# cuDNN's frontend headers (header-only C++; not on the GPU machine's image), from
# PyPI's wheel: only its include/ folder is kept (CMake looks in .debs/cudnn_frontend).
cd ..
rm -rf .debs/cudnn_frontend && mkdir -p .debs/cudnn_frontend
python3 -m pip download -q --no-deps --only-binary=:all: -d .debs/cudnn_frontend nvidia-cudnn-frontend==1.32.0
(cd .debs/cudnn_frontend && unzip -q -o ./*.whl 'include/*' && rm -f ./*.whl)
