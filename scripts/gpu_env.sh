# Sourced by the GPU machine's scripts (gpu_e2e.sh, bench_gpu.sh, gpu_ops_check.sh): where the
# CUDA math libraries and nvcc are, and the environment aotrt is built and run in there.
#   CUDA_WHEELS_ROOT         the folder holding the torch venv's nvidia-* wheels (its site-packages:
#                            <root>/nvidia/*/{include,lib}, cuBLAS, cuFFT, cuRAND, cuSOLVER in
#                            nvidia/cu13, cuDNN in nvidia/cudnn), for CMake's -DAOTRT_CUDA_WHEELS_ROOT
#                            (the mechanism CI uses with scripts/install_deps.sh's folder); empty when
#                            no cuBLAS is found there (CMake then uses the CUDA toolkit's libraries)
#   WHEEL_LIBS               the lib folders of those wheels, ':'-separated
#   NVCC                     nvcc on PATH, else /usr/local/cuda/bin/nvcc, else empty
#   aotrt_gpu_runtime_env    unpacks .debs/ when it holds Debian packages (scripts/device_env.sh)
#                            and puts WHEEL_LIBS on LD_LIBRARY_PATH
#   aotrt_gpu_cmake_args DIR [ARG...]  sets CMAKE_ARGS to the configure of a CUDA build in DIR
#                            (the one every GPU script uses), plus ARGs
#   aotrt_gpu_build DIR LOG [TARGET...]  configures DIR so and builds TARGETs (all when none),
#                            the output into LOG; on failure prints LOG's tail and returns 1
#   aotrt_gpu_python_build_deps DIR    puts nanobind 3.1.0 and scikit-build-core 1.1.2 (what
#                            pyproject.toml pins; the image has other versions) first on PYTHONPATH,
#                            installed from .whl/ into DIR/build-deps unless python3 has them
#   aotrt_gpu_pytest_against NAME DIR  for the scripts that run pytest against an existing CUDA
#                            build (gpu_large.sh, gpu_weights.sh): sets BUILD_DIR=DIR and LOG_DIR
#                            ($OUT, else DIR/logs); returns 1, saying so, when DIR lacks aotrt or
#                            aotrt_unit_tests
# `nvidia` is a namespace package (no __file__), so the wheels are searched through its __path__.
WHEEL_ROOTS=$(python3 -c '
import glob, os
try:
    import nvidia
    bases = list(nvidia.__path__)
except ImportError:
    bases = []
for base in bases:
    if glob.glob(os.path.join(base, "*", "lib", "libcublas.so*")):
        libs = sorted(d for d in glob.glob(os.path.join(base, "*", "lib")) if os.path.isdir(d))
        print(os.path.dirname(base), ":".join(libs))
        break
else:
    print("- -")
')
read -r CUDA_WHEELS_ROOT WHEEL_LIBS <<<"$WHEEL_ROOTS"
[ "$CUDA_WHEELS_ROOT" = "-" ] && CUDA_WHEELS_ROOT=""
[ "$WHEEL_LIBS" = "-" ] && WHEEL_LIBS=""
NVCC=$(command -v nvcc || true)
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc

aotrt_gpu_runtime_env() {
  # .deps/root is what an earlier call on this machine unpacked (it is ignored, so a warm
  # machine keeps it when a later call carries no .debs/).
  if { [ -d .debs ] && ls .debs/*.deb >/dev/null 2>&1; } || [ -d .deps/root/usr ]; then
    # shellcheck source=device_env.sh
    source scripts/device_env.sh
  fi
  export LD_LIBRARY_PATH="$WHEEL_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

aotrt_gpu_cmake_args() {
  local dir=$1
  shift
  CMAKE_ARGS=(-S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAOTRT_CUDA=ON "$@")
  [ -n "$NVCC" ] && CMAKE_ARGS+=(-DCMAKE_CUDA_COMPILER="$NVCC")
  [ -n "$CUDA_WHEELS_ROOT" ] && CMAKE_ARGS+=(-DAOTRT_CUDA_WHEELS_ROOT="$CUDA_WHEELS_ROOT")
  return 0
}

aotrt_gpu_python_build_deps() {
  local dir=$1
  if ! python3 -c "
import importlib.metadata as m, sys
sys.exit(0 if m.version('nanobind') == '3.1.0' and m.version('scikit-build-core') == '1.1.2' else 1)
" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target "$dir/build-deps" \
      --upgrade .whl/nanobind-3.1.0-*.whl .whl/scikit_build_core-1.1.2-*.whl || return 1
    export PYTHONPATH="$PWD/$dir/build-deps${PYTHONPATH:+:$PYTHONPATH}"
  fi
}

aotrt_gpu_build() {
  local dir=$1 log=$2 t
  shift 2
  aotrt_gpu_cmake_args "$dir"
  t=$(date +%s)
  if ! { cmake "${CMAKE_ARGS[@]}" && ninja -C "$dir" -j"$(nproc)" "$@"; } >"$log" 2>&1; then
    tail -n 40 "$log"
    return 1
  fi
  echo "== build: $(( $(date +%s) - t )) s"
}

aotrt_gpu_pytest_against() {
  BUILD_DIR=$2
  LOG_DIR=${OUT:-$BUILD_DIR/logs}
  mkdir -p "$LOG_DIR"
  if [ ! -x "$BUILD_DIR/aotrt" ] || [ ! -x "$BUILD_DIR/aotrt_unit_tests" ]; then
    echo "$1: no CUDA build in $BUILD_DIR (run scripts/gpu_e2e.sh --model linear_bias first)" >&2
    return 1
  fi
}
