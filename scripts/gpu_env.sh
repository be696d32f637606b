# Sourced by the GPU machine's scripts (gpu_e2e.sh, bench_gpu.sh): where cuBLAS, cuDNN and
# nvcc are, and the environment aotrt is built and run in there.
#   CUBLAS_ROOT, CUDNN_ROOT  roots in the wheels' layout (<root>/include, <root>/lib) found in the
#                            torch venv's nvidia-* wheels, e.g. site-packages/nvidia/cu13 for
#                            cuBLAS; empty when not found (CMake then uses the CUDA toolkit's)
#   WHEEL_LIBS               their lib folders, ':'-separated
#   NVCC                     nvcc on PATH, else /usr/local/cuda/bin/nvcc, else empty
#   aotrt_gpu_runtime_env    unpacks .debs/ when it holds Debian packages (scripts/device_env.sh)
#                            and puts WHEEL_LIBS on LD_LIBRARY_PATH
# `nvidia` is a namespace package (no __file__), so the wheels are searched through its __path__.
WHEEL_ROOTS=$(python3 -c '
import glob, os
try:
    import nvidia
    bases = list(nvidia.__path__)
except ImportError:
    bases = []

def root(lib_glob, header):
    for base in bases:
        for lib in sorted(glob.glob(os.path.join(base, "**", lib_glob), recursive=True)):
            r = os.path.dirname(os.path.dirname(lib))
            if os.path.isfile(os.path.join(r, "include", header)):
                return r
    return "-"

print(root("libcublas.so*", "cublas_v2.h"), root("libcudnn.so*", "cudnn.h"))
')
read -r CUBLAS_ROOT CUDNN_ROOT <<<"$WHEEL_ROOTS"
[ "$CUBLAS_ROOT" = "-" ] && CUBLAS_ROOT=""
[ "$CUDNN_ROOT" = "-" ] && CUDNN_ROOT=""
WHEEL_LIBS=""
for _r in "$CUBLAS_ROOT" "$CUDNN_ROOT"; do [ -n "$_r" ] && WHEEL_LIBS="$WHEEL_LIBS${WHEEL_LIBS:+:}$_r/lib"; done
NVCC=$(command -v nvcc || true)
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc

aotrt_gpu_runtime_env() {
  if [ -d .debs ] && ls .debs/*.deb >/dev/null 2>&1; then
    # shellcheck source=device_env.sh
    source scripts/device_env.sh
  fi
  export LD_LIBRARY_PATH="$WHEEL_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
