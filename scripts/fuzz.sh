#!/usr/bin/env bash
# Builds aotrt's libFuzzer targets with clang (fuzz/CMakeLists.txt: AddressSanitizer,
# UndefinedBehaviorSanitizer, libFuzzer coverage) and runs each of them:
#   package_reader    arbitrary bytes as a .pt2 (zip, layout, metadata, ELF, preflight)
#   view_arithmetic   programs of view shims (_reinterpret_tensor, as_strided,
#                     empty_strided, copy_, clone) with checked invariants
#   op_shims          programs of op shim calls: every aoti_torch_cpu_* / _aten_* op
#                     of torch's C shim headers that libaotrt.so serves, with
#                     random tensors, views, scalars, lists, null and deleted handles
#   onednn_md         oneDNN descriptor blobs of _mkldnn constants (their decoder)
# Each run first replays fuzz/corpus/<target>/ (findings of earlier runs, kept
# as regression inputs, and a minimised corpus), then fuzzes for the given time
# starting from that corpus and from seed packages (fuzz_seeds). New inputs go
# to a scratch folder, never into the repository; a crash stops the run with a
# non-zero exit and leaves its input in $BUILD_DIR/artifacts/.
#
#   scripts/fuzz.sh --short                 # CI: replay, then a fixed number of runs per target
#                                           # from seed 1 (about 60 s each here; 120 s at most)
#   scripts/fuzz.sh --time 600              # a longer run: 10 min per target
#   scripts/fuzz.sh --time 600 --merge      # ... and merge what it found into fuzz/corpus/
#   scripts/fuzz.sh --target view_arithmetic --time 30
#
# Env: AOTRT_FUZZ_DIR (build folder, default build-fuzz), AOTRT_CLANG (clang++),
# AOTRT_JOBS (build jobs, and how many targets fuzz at once; default: the cores).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python_env.sh  # the project's .venv (scripts/install_deps.sh)
REPO=$PWD
start=$(date +%s)
SECONDS_PER_TARGET=600
# --short (CI) fuzzes from a fixed seed for a fixed number of runs, so that a CI run
# repeats the inputs of the last one, and of a run by hand on any machine, instead of
# drawing new ones (a time limit alone let a faster machine reach inputs no earlier run
# had tried): new findings come from the longer runs by command, which draw a seed each.
# The counts take about 60 s per target on the development machine; the time limit stays
# as a bound for a slower one.
SEED=
RUNS=
declare -A SHORT_RUNS=([package_reader]=150000 [view_arithmetic]=120000 [op_shims]=50000 [onednn_md]=1200000)
MERGE=0
TARGETS=(package_reader view_arithmetic op_shims onednn_md)
while [ $# -gt 0 ]; do
  case "$1" in
    --short) SECONDS_PER_TARGET=120; SEED=1; RUNS=short; shift ;;
    --time) SECONDS_PER_TARGET=${2:?--time needs seconds}; shift 2 ;;
    --merge) MERGE=1; shift ;;
    --target) TARGETS=("${2:?--target needs a name}"); shift 2 ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fuzz.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

BUILD_DIR="${AOTRT_FUZZ_DIR:-build-fuzz}"
JOBS="${AOTRT_JOBS:-$(nproc)}"
CLANG="${AOTRT_CLANG:-}"
if [ -z "$CLANG" ]; then
  for c in clang++ clang++-14 clang++-15 clang++-16; do
    if command -v "$c" >/dev/null; then CLANG=$c; break; fi
  done
fi
[ -n "$CLANG" ] || { echo "fuzz.sh: no clang++ (scripts/install_deps.sh installs clang-14)" >&2; exit 1; }
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)

# -O1 -g: the sanitizers' usual setting; libFuzzer wants speed and line numbers.
cmake -S fuzz -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_CXX_COMPILER="$CLANG" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" >/dev/null
cmake --build "$BUILD_DIR" -j"$JOBS" --target fuzz_seeds "${TARGETS[@]/#/fuzz_}"
built=$(date +%s)

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/aotrt-fuzz-run-XXXXXX")
export TMPDIR="$SCRATCH"  # the targets' private folders, removed with it
trap 'rm -rf "$SCRATCH"' EXIT
mkdir -p "$SCRATCH/seeds" "$BUILD_DIR/artifacts"
"$BUILD_DIR/fuzz_seeds" "$SCRATCH/seeds" >/dev/null
# The tests ask for impossible sizes on purpose; aotrt must report them, so
# ASan's allocator returns null instead of aborting.
export ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

# One target: replay its corpus, then fuzz; its output goes to $SCRATCH/$t.out.
fuzz_one() {
  local t=$1 corpus="$REPO/fuzz/corpus/$1" bin="$BUILD_DIR/fuzz_$1" n t0
  mkdir -p "$corpus" "$SCRATCH/new_$t"
  n=$(find "$corpus" -type f | wc -l)
  echo "== $t: replaying $n input(s) of fuzz/corpus/$t"
  "$bin" -runs=0 "$corpus" 2>&1 | tail -n 2
  local runs=${RUNS:+${SHORT_RUNS[$t]}}
  echo "== $t: fuzzing for ${runs:+$runs runs, at most }$SECONDS_PER_TARGET s"
  t0=$(date +%s)
  "$bin" -max_total_time="$SECONDS_PER_TARGET" ${runs:+-runs=$runs} -max_len=8192 -timeout=30 -print_final_stats=1 ${SEED:+-seed=$SEED} \
    -artifact_prefix="$BUILD_DIR/artifacts/$t-" "$SCRATCH/new_$t" "$corpus" "$SCRATCH/seeds" \
    2>"$SCRATCH/$t.log" || { tail -n 60 "$SCRATCH/$t.log"; echo "fuzz.sh: $t found a crash (input in $BUILD_DIR/artifacts/)" >&2; return 1; }
  grep -E "^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)" "$SCRATCH/$t.log" | tr '\n' ' '
  echo "($(( $(date +%s) - t0 )) s)"
  if [ -n "${AOTRT_ROBUSTNESS_LOG:-}" ]; then
    local label="$SECONDS_PER_TARGET s"
    [ -z "$runs" ] || label="$runs runs from seed $SEED"
    execs=$(awk '/^stat::number_of_executed_units/ {print $2}' "$SCRATCH/$t.log")
    python3 -c 'import json,sys; print(json.dumps(dict(area="fuzzing", case=sys.argv[1], outcome=sys.argv[2], message=sys.argv[3], source="script")))' \
      "$t: replay of fuzz/corpus/$t, then $label" "no crash, no sanitizer report, every invariant held" \
      "$n corpus inputs replayed; $execs executions in $(( $(date +%s) - t0 )) s" >"$SCRATCH/$t.record"
  fi
  if [ "$MERGE" = 1 ]; then
    "$bin" -merge=1 -max_len=8192 "$corpus" "$SCRATCH/new_$t" 2>&1 | grep -E "MERGE-OUTER: [0-9]+ new files" || true
  fi
}

# Each fuzzer is one process on one core: up to $JOBS targets run at once, each
# for its full time; their reports are printed, and recorded, in target order.
pids=()
for t in "${TARGETS[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  fuzz_one "$t" >"$SCRATCH/$t.out" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!TARGETS[@]}"; do
  t=${TARGETS[$i]}
  wait "${pids[$i]}" || failed=1
  cat "$SCRATCH/$t.out"
  if [ -n "${AOTRT_ROBUSTNESS_LOG:-}" ] && [ -f "$SCRATCH/$t.record" ]; then
    cat "$SCRATCH/$t.record" >>"$AOTRT_ROBUSTNESS_LOG"
  fi
done
[ "$failed" -eq 0 ] || exit 1
echo "fuzz.sh: built in $(( built - start )) s, ran in $(( $(date +%s) - built )) s"
