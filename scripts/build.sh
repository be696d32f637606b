#!/usr/bin/env bash
# Configures and builds aotrt (library, CLI, unit tests) into build/.
# Extra arguments go to CMake, e.g. scripts/build.sh -DAOTRT_CUDA=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${AOTRT_BUILD_DIR:-build}"
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
# A configure that failed leaves a CMakeCache.txt but no build files; only a
# tree whose generator file exists counts as configured.
configured=0
if [ -f "$BUILD_DIR/CMakeCache.txt" ] && { [ -f "$BUILD_DIR/build.ninja" ] || [ -f "$BUILD_DIR/Makefile" ]; }; then
  configured=1
fi
if [ "$configured" -eq 0 ]; then
  rm -f "$BUILD_DIR/CMakeCache.txt"
  cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
elif [ "$#" -gt 0 ]; then
  cmake -S . -B "$BUILD_DIR" "$@"
fi
cmake --build "$BUILD_DIR" -j"$(nproc)"
