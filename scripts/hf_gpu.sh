#!/usr/bin/env bash
# The Hugging Face / torchvision / timm sweep (tests/hf/sweep.py) on the CUDA machine, inside one
# time-boxed device call: builds the aotrt CLI with -DAOTRT_CUDA=ON into build-gpu/ (as
# scripts/opinfo_gpu.sh does; a no-op when the lead has built it) unless --skip-build, then
# sweeps every entry for cuda with --jobs export processes, stopping at the time limit.
#
# Usage: scripts/hf_gpu.sh [--time-limit SECONDS] [--jobs N] [--models a,b | --slice S]
#                          [--device cuda|cpu] [--aotrt PATH] [--skip-build]
#   --time-limit S  the whole call, build included (default 540, for a 600 s device call): the
#                   sweep gets what the build left less 20 s (to stop running entries and write
#                   the table); no entry starts after that and running ones are stopped, and
#                   the table of what finished is written
#   --jobs N        export processes at once (default 8); each gets nproc / N inductor compile
#                   threads (TORCHINDUCTOR_COMPILE_THREADS)
#   --slice S       ci | transformers | vision | all (default: all on cuda, transformers on cpu)
#   --device cpu    the same mechanics on the CPU (no build, --aotrt build/aotrt by default):
#                   how the script is tested where there is no GPU
# Packages are cached in build-gpu/hf-cache-<device> (a warm machine keeps them, so a second
# call only exports what the first did not finish). Writes results.json, table.md and sweep.log
# into $OUT/hf-<device> (else build-gpu/logs/hf-<device>) and prints a short summary.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
T0=$(date +%s)
TIME_LIMIT=540
JOBS=8
DEVICE=cuda
SKIP_BUILD=0
AOTRT=
SELECT=()
while [ $# -gt 0 ]; do
  case "$1" in
    --time-limit) TIME_LIMIT=${2:?}; shift 2 ;;
    --jobs) JOBS=${2:?}; shift 2 ;;
    --models) SELECT=(--models "${2:?}"); shift 2 ;;
    --slice) SELECT=(--slice "${2:?}"); shift 2 ;;
    --device) DEVICE=${2:?}; shift 2 ;;
    --aotrt) AOTRT=${2:?}; shift 2 ;;
    --skip-build) SKIP_BUILD=1; shift ;;
    *) echo "hf_gpu: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
BUILD_DIR=build-gpu
LOG_DIR=${OUT:-$REPO/$BUILD_DIR/logs}/hf-$DEVICE
mkdir -p "$LOG_DIR"

if [ "$DEVICE" = cuda ]; then
  # shellcheck source=gpu_env.sh
  source scripts/gpu_env.sh
  aotrt_gpu_runtime_env
  AOTRT=${AOTRT:-$BUILD_DIR/aotrt}
  if [ "$SKIP_BUILD" = 0 ]; then
    aotrt_gpu_build "$BUILD_DIR" "$LOG_DIR/build.log" aotrt_cli || { echo "hf_gpu: build failed" >&2; exit 1; }
  fi
else
  AOTRT=${AOTRT:-build/aotrt}
fi
[ -x "$AOTRT" ] || { echo "hf_gpu: no aotrt CLI at $AOTRT" >&2; exit 2; }

LEFT=$(( TIME_LIMIT - ($(date +%s) - T0) - 20 ))
if [ "$LEFT" -lt 30 ]; then
  echo "hf_gpu: only ${LEFT} s of the ${TIME_LIMIT} s limit left for the sweep" >&2; exit 1
fi
THREADS=$(( $(nproc) / JOBS ))
[ "$THREADS" -lt 1 ] && THREADS=1
export TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-$THREADS}
export PYTHONUNBUFFERED=1
RESULTS=$BUILD_DIR/hf-$DEVICE
echo "== sweep: $DEVICE, $JOBS job(s), $TORCHINDUCTOR_COMPILE_THREADS compile thread(s) each, ${LEFT} s"
python3 -m tests.hf.sweep --device "$DEVICE" --jobs "$JOBS" --time-limit "$LEFT" "${SELECT[@]}" \
  --aotrt "$AOTRT" --cache "$BUILD_DIR/hf-cache-$DEVICE" --out "$RESULTS" 2>&1 |
  grep --line-buffered -v -e "Warning" -e "warn(" -e "^W[0-9]" -e "proxy executor as fallback" |
  tee "$LOG_DIR/sweep.log"
rc=${PIPESTATUS[0]}
cp "$RESULTS/results.json" "$RESULTS/table.md" "$LOG_DIR/" 2>/dev/null

# The summary: counts, then every entry that is not ok, one line each.
python3 - "$RESULTS/results.json" <<'EOF'
import json, sys
try:
    records = json.load(open(sys.argv[1]))
except OSError:
    sys.exit("hf_gpu: the sweep wrote no results.json")
counts = {}
for r in records:
    counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
print("== summary: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f" of {len(records)}")
for r in records:
    if r["outcome"] != "ok":
        print(f"   {r['name']:26s} {r['outcome']:16s} {r.get('message', '')[:150]}")
EOF
echo "== table: $LOG_DIR/table.md ($(( $(date +%s) - T0 )) s in all)"
exit "$rc"
