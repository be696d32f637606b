#!/usr/bin/env bash
# The Triton generation backend under AddressSanitizer and UndefinedBehaviorSanitizer:
# tests/triton/test_generation.py's cancellation storm (16 streams, each cancelled 50 ms
# into a long generation, three times over) against a tritonserver that preloads libasan and
# loads the sanitizer tree's libtriton_aotrt.so. Any read or write of the backend's into
# freed or foreign memory, or undefined behaviour, stops the server with a report in its log
# and fails the storm. The plain storm retries when tritonserver crashes in its own code
# (_crashed_in_tritonserver there); this run is what shows the backend is not the cause.
# tritonserver itself is not instrumented: its own use of freed memory is not seen here.
#
#   scripts/triton_asan_storm.sh [RUNS]      # default 2 runs; build-sanitize/ (AOTRT_SANITIZE_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-2}
BUILD_DIR="${AOTRT_SANITIZE_DIR:-build-sanitize}"
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
# The configuration of scripts/sanitize.sh (same folder: its objects are reused).
cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DAOTRT_SANITIZE=address,undefined >/dev/null
cmake --build "$BUILD_DIR" --target triton_aotrt aotrt_abi aotrt_cli -j"${AOTRT_JOBS:-$(nproc)}"
ASAN_RT=$(${CXX:-c++} -print-file-name=libasan.so)
[ -f "$ASAN_RT" ] || { echo "triton_asan_storm: no libasan.so ($ASAN_RT)" >&2; exit 1; }
# Leaks are not checked: the server exits with what its own code holds.
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
for run in $(seq 1 "$RUNS"); do
  echo "== storm $run of $RUNS, backend under AddressSanitizer"
  PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" AOTRT_BUILD_DIR="$PWD/$BUILD_DIR" \
    AOTRT_TRITON_PRELOAD="$ASAN_RT" \
    timeout 600 python3 -m pytest tests/triton/test_generation.py -v -rA \
    -k test_many_streams_cancelled_mid_generation_leave_the_server_serving
done
