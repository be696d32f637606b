#!/usr/bin/env bash
# The H200 checklist in one time-boxed command, for a device call of at most 10 minutes:
# builds build-gpu/ once (every target: library, CLI, unit tests, the Triton backend), then
# runs the steps asked for, each under its own time limit, and leaves at most 8 files in
# $OUT (the device tool returns no more): summary.txt (one line per step: status, seconds; the
# build's log tail when it failed), one log per other step, and the Triton load and bench tables.
#
# Usage: scripts/gpu_session.sh STEP[:SECONDS] ...
#   build          cmake + ninja of build-gpu/ (skipped when nothing changed: ninja decides)
#   build-cli      the same configure, only the aotrt CLI and library (what the decode step needs)
#   ops            build-gpu/aotrt_unit_tests: every device-generic op row on cuda and cpu, and
#                  tests/unit/cuda (scripts/gpu_ops_check.sh --skip-build)
#   weights        scripts/gpu_weights.sh (package_constants_in_so=False on cpu and cuda)
#   python         scripts/python_gpu.sh --from-build build-gpu -k cuda
#   triton         scripts/triton_gpu.sh --skip-build --skip-load (KIND_GPU tests), with the
#                  server tarball and client wheels from .triton/ (carry it)
#   triton-load    the load table alone (scripts/triton_gpu.sh --skip-tests), nothing beside it
#   triton-generate  the generation load table alone (scripts/triton_gpu.sh --skip-tests
#                  --skip-load --generate-load: the 1B-shape Llama exported here, 1..64 streams,
#                  $TRITON_GENERATE_SECONDS a level, default 20; about 240 s (estimated) with
#                  the export), nothing beside it
#   e2e            scripts/gpu_e2e.sh --skip-build --skip-unit (the CUDA zoo against eager)
#   bench          scripts/bench_gpu.sh --skip-build (eager, torch.compile, aotrt, aotrt graph)
#   hf             scripts/hf_gpu.sh --skip-build ($HF_ARGS, default --slice vision --jobs 8): the
#                  torchvision/timm (or Hugging Face) sweep on cuda, its table back as hf_table.md
#   opinfo         scripts/opinfo_gpu.sh --skip-build ($OPINFO_ARGS, default: the dtypes slice in
#                  every dtype but float32, 15 workers): the OpInfo sweep on cuda, its table and
#                  results back as opinfo_table.md and opinfo_results.json (carry .whl)
#   pytest         python3 -m pytest -q -rA $PYTEST_ARGS (default: tests/e2e -k cuda) against
#                  build-gpu/aotrt (AOTRT_BIN; TF32 off in aotrt's cuDNN, as in eager's references)
#   attention      bench/attention_gpu.py: SDPA one-op packages over L = 128 ... 8192 and the
#                  bf16 LLaMA decoder, eager against aotrt ($ATTENTION_ARGS replaces the defaults)
#   generation     programs, sessions and generation on cuda: tests/python/test_generation.py
#                  (scripts/python_gpu.sh --from-build build-gpu -k generation)
#   kernels        issue 29's kernels: scripts/gpu_kernels_check.sh ($KERNELS_ARGS,
#                  default --no-sweep): unit tests, GB/s table, aotrt against ATen; it builds
#                  its own targets (aotrt_kernel_tests is not in `build`'s: never pass it
#                  --skip-build), so it can come first, before build-cli, on a cold machine
#   large          scripts/gpu_large.sh: the weights layouts of large packages on cpu and cuda
#   unit           build-gpu/aotrt_unit_tests --gtest_filter=$UNIT_FILTER (default: sampling,
#                  CUDA graphs, sessions' streams): a slice of the unit tests, no skips allowed
#   gentests       tests/generate's CUDA tests (scripts/python_gpu.sh --tests tests/generate -k cuda;
#                  carry .whl: the extension builds with the nanobind wheel there)
#   llm8b          bench/llm_large.py: the Llama-3-8B shape by torch's defaults, load, run, generate
#   decode         bench/decode.py on cuda ($DECODE_ARGS, default: --shapes 1b --dtypes bf16
#                  --batches 1 --caches 1024, eager, torch.compile and aotrt), configs that would
#                  end past the step's limit skipped; the table back as decode-cuda-<date>.md/.json
# Steps joined with '+' run at the same time (their GPU work shares the card: never use it for
# steps that time anything), e.g.  build:360 ops:60 python+weights:120 triton:150 triton-load:150
# A step's default limit is 300 s; STEP:SECONDS sets it.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
OUT_DIR=${OUT:-$REPO/build-gpu/session}
LOGS=/tmp/aotrt-gpu-session
rm -rf "$LOGS"
mkdir -p "$OUT_DIR" "$LOGS"
SUMMARY=$OUT_DIR/summary.txt
T0=$(date +%s)
export PYTHONUNBUFFERED=1
{
  echo "# scripts/gpu_session.sh $* ($(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%FT%TZ))"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.used --format=csv,noheader 2>&1
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())' 2>&1
} >"$SUMMARY"

# shellcheck source=gpu_env.sh
source scripts/gpu_env.sh
aotrt_gpu_runtime_env

run_step() {  # name seconds: runs it, appends its line to the summary
  local name=$1 limit=$2 log="$LOGS/$1.log" t rc
  t=$(date +%s)
  case "$name" in
    build)
      # With the Python extension from the start, so that the python step's configure changes
      # nothing that other steps' binaries use.
      aotrt_gpu_python_build_deps build-python-gpu >"$log" 2>&1
      aotrt_gpu_cmake_args build-gpu -DAOTRT_PYTHON=ON
      timeout "$limit" bash -c 'cmake "$@" && ninja -C build-gpu -j"$(nproc)"' _ "${CMAKE_ARGS[@]}" \
        >>"$log" 2>&1 ;;
    build-cli) aotrt_gpu_cmake_args build-gpu
               timeout "$limit" bash -c 'cmake "$@" && ninja -C build-gpu -j"$(nproc)" aotrt' _ \
                 "${CMAKE_ARGS[@]}" >"$log" 2>&1 ;;
    ops) OUT=$LOGS/ops timeout "$limit" scripts/gpu_ops_check.sh --skip-build >"$log" 2>&1 ;;
    weights) OUT=$LOGS/weights timeout "$limit" scripts/gpu_weights.sh >"$log" 2>&1 ;;
    python) OUT=$LOGS/python timeout "$limit" scripts/python_gpu.sh --from-build build-gpu -k cuda \
              >"$log" 2>&1 ;;
    triton) OUT=$LOGS/triton timeout "$limit" scripts/triton_gpu.sh --skip-build --skip-load \
              --server .triton/tritonserver.tar.xz --client-wheels .triton/wheels >"$log" 2>&1 ;;
    triton-load) OUT=$LOGS/triton timeout "$limit" scripts/triton_gpu.sh --skip-build --skip-tests \
                   --seconds "${TRITON_LOAD_SECONDS:-10}" --server .triton/tritonserver.tar.xz \
                   --client-wheels .triton/wheels >"$log" 2>&1 ;;
    triton-generate) OUT=$LOGS/triton timeout "$limit" scripts/triton_gpu.sh --skip-build --skip-tests \
                       --skip-load --generate-load --generate-seconds "${TRITON_GENERATE_SECONDS:-20}" \
                       --server .triton/tritonserver.tar.xz --client-wheels .triton/wheels >"$log" 2>&1 ;;
    e2e) OUT=$LOGS/e2e timeout "$limit" scripts/gpu_e2e.sh --skip-build --skip-unit \
           ${E2E_ARGS:-} >"$log" 2>&1 ;;
    bench) OUT=$LOGS/bench timeout "$limit" scripts/bench_gpu.sh --skip-build ${BENCH_ARGS:-} \
             >"$log" 2>&1 ;;
    hf) OUT=$LOGS/hf timeout "$limit" scripts/hf_gpu.sh --skip-build --time-limit "$(( limit - 10 ))" \
          ${HF_ARGS:---slice vision --jobs 8} >"$log" 2>&1 ;;
    opinfo) OUT=$LOGS/opinfo timeout "$limit" scripts/opinfo_gpu.sh --skip-build \
              --time-limit "$(( limit - 15 ))" \
              ${OPINFO_ARGS:---slice dtypes --dtypes bfloat16,float16,int64,int32,bool,float64 --workers 15} \
              >"$log" 2>&1 ;;
    pytest) AOTRT_BIN=build-gpu/aotrt AOTRT_CUDNN_ALLOW_TF32=0 timeout "$limit" \
              python3 -m pytest -q -rA ${PYTEST_ARGS:-tests/e2e -k cuda} >"$log" 2>&1 ;;
    attention) mkdir -p "$LOGS/attention"
               timeout "$limit" python3 bench/attention_gpu.py --aotrt build-gpu/aotrt \
                 ${ATTENTION_ARGS:---part all --lengths 128,512,1024,2048,4096,8192 --jobs 12 --iters 30 --rounds 2} \
                 --out "$LOGS/attention" >"$log" 2>&1 ;;
    generation) OUT=$LOGS/generation timeout "$limit" scripts/python_gpu.sh --from-build build-gpu \
                  -k generation >"$log" 2>&1 ;;
    kernels) OUT=$LOGS/kernels timeout "$limit" scripts/gpu_kernels_check.sh \
               ${KERNELS_ARGS:---no-sweep} >"$log" 2>&1 ;;
    large) OUT=$LOGS/large timeout "$limit" scripts/gpu_large.sh >"$log" 2>&1 ;;
    gentests) OUT=$LOGS/gentests timeout "$limit" scripts/python_gpu.sh --from-build build-gpu \
                --tests tests/generate -k cuda >"$log" 2>&1 ;;
    llm8b) mkdir -p "$LOGS/llm8b"
           timeout "$limit" python3 bench/llm_large.py --aotrt build-gpu/aotrt --work /tmp/llm \
             --out "$LOGS/llm8b/llm_large.json" >"$log" 2>&1 ;;
    unit) timeout "$limit" build-gpu/aotrt_unit_tests \
            --gtest_filter="${UNIT_FILTER:-*Sampling*:*CudaGraph*:*CallGraph*}" >"$log" 2>&1 &&
            ! grep -q '^\[  SKIPPED \]' "$log" ;;
    decode) mkdir -p "$LOGS/decode"
            timeout "$limit" python3 bench/decode.py --device cuda --aotrt build-gpu/aotrt \
              --work /tmp/aotrt-decode --out "$LOGS/decode" --time-limit "$(( limit - 20 ))" \
              ${DECODE_ARGS:---shapes 1b --dtypes bf16 --batches 1 --caches 1024} >"$log" 2>&1 ;;
    *) echo "gpu_session: unknown step '$name'" >"$log"; false ;;
  esac
  rc=$?
  # A step's own logs (unit.log, weights.log, ...) follow its console output.
  if [ -d "$LOGS/$name" ]; then
    while IFS= read -r f; do
      { printf '\n===== %s\n' "${f#"$LOGS/$name"/}"; tail -c 400000 "$f"; } >>"$log"
    done < <(find "$LOGS/$name" -type f \( -name '*.log' -o -name '*.md' -o -name '*.txt' \) | sort)
  fi
  printf '%-12s rc=%-3s %4d s (at %4d s)\n' "$name" "$rc" "$(( $(date +%s) - t ))" \
    "$(( $(date +%s) - T0 ))" >>"$SUMMARY"
}

# At most 8 files come back: the summary, the step logs (each cut to its last 2 MB; the build's
# only as its tail in the summary, when it failed) and the tables. Collected after every group,
# so that a call stopped at its limit still returns what finished.
collect() {
  local f
  for f in "$LOGS"/*.log; do
    [ -f "$f" ] || continue
    [ "${f##*/}" = build.log ] || [ "${f##*/}" = build-cli.log ] && continue
    tail -c 2000000 "$f" >"$OUT_DIR/${f##*/}"
  done
  for f in "$LOGS"/triton/triton_h200.md "$LOGS"/triton/triton_h200.json \
           "$LOGS"/triton/triton_generate_gpu.md "$LOGS"/triton/triton_generate_gpu.json \
           "$LOGS"/bench/cuda-*.md "$LOGS"/attention/attention.md "$LOGS"/decode/decode-*.md \
           "$LOGS"/decode/decode-*.json "$LOGS"/llm8b/llm_large.json; do
    [ -f "$f" ] && cp "$f" "$OUT_DIR/"
  done
  [ -f "$LOGS"/hf/hf-cuda/table.md ] && cp "$LOGS"/hf/hf-cuda/table.md "$OUT_DIR/hf_table.md"
  [ -f "$LOGS"/opinfo/opinfo-cuda/table.md ] && cp "$LOGS"/opinfo/opinfo-cuda/table.md "$OUT_DIR/opinfo_table.md"
  [ -f "$LOGS"/opinfo/opinfo-cuda/results.json ] &&
    cp "$LOGS"/opinfo/opinfo-cuda/results.json "$OUT_DIR/opinfo_results.json"
  return 0
}

for arg in "$@"; do
  pids=()
  IFS=+ read -ra group <<<"$arg"
  for step in "${group[@]}"; do
    name=${step%%:*}
    limit=300
    [ "$name" != "$step" ] && limit=${step#*:}
    run_step "$name" "$limit" &
    pids+=($!)
  done
  wait "${pids[@]}"
  if [ "$arg" = build ] || [[ "$arg" == build:* ]] || [ "$arg" = build-cli ] || [[ "$arg" == build-cli:* ]]; then
    b=${arg%%:*}
    if ! grep -q "^$b *rc=0 " "$SUMMARY"; then
      { echo "----- $b.log (tail)"; tail -n 60 "$LOGS/$b.log"; } >>"$SUMMARY"
      cat "$SUMMARY"
      exit 1  # every later step needs the build
    fi
  fi
  collect
done

cat "$SUMMARY"
