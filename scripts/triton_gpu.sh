#!/usr/bin/env bash
# The Triton backend on the CUDA machine, in one command: builds aotrt with CUDA and
# libtriton_aotrt.so into build-gpu/, runs tests/triton with CUDA packages and KIND_GPU
# instances (HTTP and gRPC against eager with TF32 off, dynamic batching, two instances
# on one GPU with a stream each, errors, and a CUDA-graph model padded to max_batch_size),
# then the load table (bench/triton_load.py, concurrency 1..16) beside aotrt bench. The
# tests include tests/triton/test_generation.py (a decoupled generation model streaming over
# gRPC against `aotrt generate`, cancellation, bad requests).
#
# Usage: scripts/triton_gpu.sh --server WHEEL_OR_TARBALL [--client-wheels DIR]
#                              [--skip-build] [--skip-tests] [--skip-load] [--seconds N]
#                              [--generate-load] [--generate-seconds N]
#   --server   nvidia_pytriton-0.7.0-py3-none-manylinux_2_35_x86_64.whl (55.4 MB), or the
#              31 MB tarball `scripts/fetch_tritonserver.sh --pack F.tar.xz` writes; unpacked
#              into build-gpu/tritonserver (the machine has no network)
#   --client-wheels  a folder of wheels to install tritonclient[http,grpc]==2.60.0 from
#              when python3 cannot import it: tritonclient (its perf_analyzer binaries may be
#              left out of the wheel) and what the image lacks of its needs (python-rapidjson,
#              geventhttpclient, gevent, greenlet, zope.event, zope.interface, brotli), for
#              cp312; each is installed with --no-deps into /tmp/site-tritonclient
#   --seconds  per concurrency level of the load table (default 20)
#   --skip-tests / --skip-load  leave out tests/triton or the load table (a call can run the
#              tests beside other work and the load table alone, so that nothing shares the GPU)
#   --generate-load  also the generation load table: bench/triton_generate.py on the 1B-shape
#              Llama (exported here by torch's flow, bf16, cache 1024) at 1, 4, 16 and 64 streams
#              for --generate-seconds each (default 20), beside `aotrt generate` alone (3 runs);
#              about 4 minutes with the export (estimated, not yet run), kept in build-gpu/
# Writes triton_gpu_tests.log, triton_h200.{md,json} and triton_generate_gpu.{md,json} into
# $OUT when set, else build-gpu/logs.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
BUILD_DIR=build-gpu
SERVER=""
CLIENT_WHEELS=""
SKIP_BUILD=0
SKIP_TESTS=0
SKIP_LOAD=0
SECONDS_PER_LEVEL=20
GENERATE_LOAD=0
GENERATE_SECONDS=20
while [ $# -gt 0 ]; do
  case "$1" in
    --server) SERVER=${2:?--server needs a file}; shift 2 ;;
    --client-wheels) CLIENT_WHEELS=${2:?--client-wheels needs a folder}; shift 2 ;;
    --skip-build) SKIP_BUILD=1; shift ;;
    --skip-tests) SKIP_TESTS=1; shift ;;
    --skip-load) SKIP_LOAD=1; shift ;;
    --seconds) SECONDS_PER_LEVEL=${2:?--seconds needs a number}; shift 2 ;;
    --generate-load) GENERATE_LOAD=1; shift ;;
    --generate-seconds) GENERATE_SECONDS=${2:?--generate-seconds needs a number}; shift 2 ;;
    -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "triton_gpu: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
LOG_DIR=${OUT:-$REPO/$BUILD_DIR/logs}
mkdir -p "$LOG_DIR"
status=0

# shellcheck source=gpu_env.sh
source scripts/gpu_env.sh
aotrt_gpu_runtime_env
if [ "$SKIP_BUILD" = 0 ]; then
  aotrt_gpu_cmake_args "$BUILD_DIR" -DAOTRT_TRITON=ON
  cmake "${CMAKE_ARGS[@]}" >"$LOG_DIR/triton_build.log" 2>&1 &&
    cmake --build "$BUILD_DIR" -j"$(nproc)" --target aotrt_cli triton_aotrt >>"$LOG_DIR/triton_build.log" 2>&1 ||
    { echo "triton_gpu: build failed, see $LOG_DIR/triton_build.log" >&2; tail -30 "$LOG_DIR/triton_build.log" >&2; exit 1; }
fi

export AOTRT_TRITON_HOME="$REPO/$BUILD_DIR/tritonserver"
if [ -z "${AOTRT_TRITONSERVER:-}" ]; then
  case "$SERVER" in
    *.whl) scripts/fetch_tritonserver.sh --wheel "$SERVER" >/dev/null || exit 1 ;;
    *.tar.xz) mkdir -p "$AOTRT_TRITON_HOME" && tar xJf "$SERVER" -C "$AOTRT_TRITON_HOME" || exit 1 ;;
    "") [ -x "$AOTRT_TRITON_HOME/pytriton/tritonserver/bin/tritonserver" ] ||
          { echo "triton_gpu: give --server (the nvidia-pytriton wheel or its tarball)" >&2; exit 2; } ;;
    *) echo "triton_gpu: --server wants a .whl or .tar.xz, got $SERVER" >&2; exit 2 ;;
  esac
  export AOTRT_TRITONSERVER="$AOTRT_TRITON_HOME/pytriton/tritonserver/bin/tritonserver"
fi
if ! python3 -c "import tritonclient.http, tritonclient.grpc" 2>/dev/null; then
  [ -n "$CLIENT_WHEELS" ] || { echo "triton_gpu: python3 has no tritonclient; give --client-wheels DIR" >&2; exit 2; }
  # Every wheel of the folder, without resolving: tritonclient pins grpcio<1.68 and
  # protobuf<6, which the image's newer ones would fail with --no-index; its code runs on them.
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site-tritonclient "$CLIENT_WHEELS"/*.whl || exit 1
  export PYTHONPATH="/tmp/site-tritonclient${PYTHONPATH:+:$PYTHONPATH}"
  python3 -c "import tritonclient.http, tritonclient.grpc" || exit 1
fi

# Eager references are computed with TF32 off; so are aotrt's convolutions here.
export AOTRT_CUDNN_ALLOW_TF32=0
export PYTHONPATH="$REPO/python${PYTHONPATH:+:$PYTHONPATH}"
if [ "$SKIP_TESTS" = 0 ]; then
  echo "== tests/triton on cuda (KIND_GPU)"
  AOTRT_TRITON_DEVICE=cuda AOTRT_BUILD_DIR="$REPO/$BUILD_DIR" \
    timeout 1200 python3 -m pytest tests/triton -v -rA 2>&1 | tee "$LOG_DIR/triton_gpu_tests.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi

if [ "$SKIP_LOAD" = 0 ]; then
  echo "== load: bench/triton_load.py on cuda"
  timeout 1200 python3 bench/triton_load.py --device cuda --build "$REPO/$BUILD_DIR" \
    --seconds "$SECONDS_PER_LEVEL" --out "$LOG_DIR/triton_h200" || status=1
fi
if [ "$GENERATE_LOAD" = 1 ]; then
  echo "== generation load: bench/triton_generate.py --shape 1b on cuda"
  # The export is kept in build-gpu/ (ignored): a later call on a warm machine reuses it.
  timeout 1200 python3 bench/triton_generate.py --shape 1b --device cuda --build "$REPO/$BUILD_DIR" \
    --keep-package "$REPO/$BUILD_DIR/llama_1b.pt2" --seconds "$GENERATE_SECONDS" \
    --warm-up-seconds 10 --generate-runs 3 \
    --out "$LOG_DIR/triton_generate_gpu" || status=1
fi
echo "triton_gpu: logs and tables in $LOG_DIR (copy triton_h200.md/.json and" \
  "triton_generate_gpu.md/.json to bench/results/)"
exit $status
