#!/usr/bin/env bash
# aotrt against eager PyTorch, torch.compile and torch.compile(mode="reduce-overhead") on the
# CUDA machine, in one command (about 5 minutes on 16 cores + 1 H200, estimated: no run yet):
#   1. in the background, one process per model compiles it with torch.compile (default and
#      reduce-overhead) so that inductor's on-disk caches are warm when step 3 compiles it again
#      (bench/compare.py --warm-only);
#   2. meanwhile scripts/gpu_e2e.sh --skip-unit exports the models (aotrt's packages), builds
#      aotrt with CUDA into build-gpu/, and checks every package against eager (gpu_e2e.md);
#   3. bench/compare.py --device cuda times eager, compile, reduce-overhead, `aotrt bench` and
#      `aotrt bench --cuda-graph` on the exported packages and their inputs, alternating them
#      over the rounds, and writes cuda-<date>.md/.json/.png.
# The default set is the issue's: c2f_block_80 (C2f block 64ch 80x80 b1), resnet18 b1,
# mobilenet_v3_small b1, resnet50 b32, transformer_encoder_d512 (d512 b8 s128); 3 rounds of
# 100 timed iterations (the CPU comparison uses 5 rounds of 200; the GPU numbers are steadier and
# device time is short). A failing model or contender does not stop the others.
#
# Usage: scripts/bench_gpu.sh [--model NAME]... [--rounds R] [--iters N] [--skip-build]
# Writes everything (build.log, export.log, gpu_e2e.md, warm_*.log, cuda-<date>.*) into $OUT
# when it is set, else into build-gpu/bench. Needs python3 with a CUDA torch and torchvision.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

MODELS=()
ROUNDS=3
ITERS=100
E2E_ARGS=(--skip-unit)
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODELS+=("${2:?--model needs a name}"); shift 2 ;;
    --rounds) ROUNDS=${2:?--rounds needs a number}; shift 2 ;;
    --iters) ITERS=${2:?--iters needs a number}; shift 2 ;;
    --skip-build) E2E_ARGS+=(--skip-build); shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_gpu: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[ ${#MODELS[@]} -eq 0 ] && MODELS=(c2f_block_80 resnet18 mobilenet_v3_small resnet50 transformer_encoder_d512)
OUT_DIR=${OUT:-$REPO/build-gpu/bench}
mkdir -p "$OUT_DIR"
T_START=$(date +%s)
export PYTHONPATH="$REPO/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1

# -- 1. warm torch.compile's caches, one process per model ------------------------------------
WARM_PIDS=()
for m in "${MODELS[@]}"; do
  TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-2} \
    python3 bench/compare.py --device cuda --warm-only --models "$m" >"$OUT_DIR/warm_$m.log" 2>&1 &
  WARM_PIDS+=($!)
done

# -- 2. export, build, check against eager -----------------------------------------------------
MODEL_ARGS=()
for m in "${MODELS[@]}"; do MODEL_ARGS+=(--model "$m"); done
OUT="$OUT_DIR" scripts/gpu_e2e.sh "${E2E_ARGS[@]}" --jobs "${#MODELS[@]}" "${MODEL_ARGS[@]}"
E2E_RC=$?
echo "== gpu_e2e.sh exit $E2E_RC ($(( $(date +%s) - T_START )) s)"
for i in "${!WARM_PIDS[@]}"; do
  wait "${WARM_PIDS[$i]}" || echo "bench_gpu: warming ${MODELS[$i]} failed (see warm_${MODELS[$i]}.log); compare.py compiles it cold"
done
echo "== caches warm ($(( $(date +%s) - T_START )) s)"
if [ ! -x build-gpu/aotrt ]; then
  echo "bench_gpu: no build-gpu/aotrt (see $OUT_DIR/build.log)" >&2
  exit 1
fi

# -- 3. the comparison --------------------------------------------------------------------------
# shellcheck source=gpu_env.sh
source scripts/gpu_env.sh
aotrt_gpu_runtime_env
MODEL_LIST=$(IFS=,; echo "${MODELS[*]}")
python3 bench/compare.py --device cuda --models "$MODEL_LIST" --rounds "$ROUNDS" --iters "$ITERS" \
  --aotrt build-gpu/aotrt --export-dir build-gpu/zoo --out "$OUT_DIR" 2>"$OUT_DIR/compare.log"
RC=$?
tail -n 25 "$OUT_DIR/compare.log"
echo "== bench_gpu: compare.py exit $RC, gpu_e2e.sh exit $E2E_RC, $(( $(date +%s) - T_START )) s in all; files in $OUT_DIR"
exit $RC
