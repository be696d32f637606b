#!/usr/bin/env bash
# Runs every test: builds aotrt, compiles and links the CUDA backend too
# (build-cuda/: library, CLI, unit tests; run on a GPU machine by
# scripts/gpu_ops_check.sh, as there is no GPU here), runs the GoogleTest unit and conformance
# suites (ctest), the same suites under AddressSanitizer and
# UndefinedBehaviorSanitizer, the concurrency tests under ThreadSanitizer, a
# short fuzzing run (replaying fuzz/corpus/), the end-to-end tests (export
# with torch 2.13, run with build/aotrt, compare with eager; the robustness
# cases on real packages), the OpInfo CPU slice (tests/opinfo: ops of
# PyTorch's op_db, checked against the committed docs/opinfo/ table), a slice of
# real Hugging Face architectures (tests/hf: transformers' models, torch's own
# export flow, against eager), the Python package (pip install ., then tests/python; `import aotrt` in a venv
# without torch), the manylinux wheels (scripts/build_wheel.sh, then tests/wheel in fresh venvs), and the Triton Inference Server backend in a real
# tritonserver (tests/triton; its generation storm again with the backend under AddressSanitizer). The robustness cases are recorded as they run
# and rendered into build/robustness.md and compared with docs/robustness.md
# (scripts/robustness_table.py).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python_env.sh  # the project's .venv (scripts/install_deps.sh)
start=$(date +%s)
steps=()
step() { steps+=("$1: $(( $(date +%s) - $2 )) s"); }

export AOTRT_ROBUSTNESS_LOG="$PWD/build/robustness.jsonl"
# Packages exported by torch (the e2e zoo and one-op cases, the OpInfo batches, the Triton
# repository) are cached outside the clone, keyed by the export code's and the case's
# source and torch's version, so a second run on one machine exports only what changed;
# aotrt itself is always built and every package is run and compared again. A fresh
# machine starts with an empty cache. AOTRT_CACHE_DIR moves it; an empty folder runs cold.
CACHE_ROOT="${AOTRT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/aotrt/test-cache}"
mkdir -p "$CACHE_ROOT"
mkdir -p build
rm -f "$AOTRT_ROBUSTNESS_LOG"

echo "== build"
t=$(date +%s); scripts/build.sh; step build "$t"

echo "== CUDA build (compiled and linked, not run: no GPU here)"
# Against the CUDA math libraries that scripts/install_deps.sh unpacked.
t=$(date +%s)
AOTRT_BUILD_DIR=build-cuda scripts/build.sh -DAOTRT_CUDA=ON \
  -DAOTRT_CUDA_WHEELS_ROOT="${AOTRT_CUDA_WHEELS:-/opt/aotrt-cuda-wheels}"
step cuda-build "$t"

echo "== unit and conformance tests"
t=$(date +%s); ctest --test-dir build --output-on-failure -j"$(nproc)"; step ctest "$t"

echo "== sanitizers (address, undefined, leaks)"
t=$(date +%s); scripts/sanitize.sh; step asan+ubsan "$t"

echo "== thread sanitizer (concurrency tests)"
t=$(date +%s); AOTRT_TSAN_DIR=build-tsan scripts/tsan.sh; step tsan "$t"

echo "== fuzzing (short: corpus replay, then a fixed count of runs per target from seed 1)"
t=$(date +%s); AOTRT_FUZZ_DIR=build-fuzz scripts/fuzz.sh --short; step fuzz "$t"

echo "== end-to-end tests on the CPU"
t=$(date +%s)
# The exported zoo is kept for the Python package's tests below.
export AOTRT_E2E_CACHE="${AOTRT_E2E_CACHE:-$CACHE_ROOT/e2e}"
export AOTRT_BIN="$PWD/build/aotrt"
export AOTRT_TSAN_UNIT_TESTS="$PWD/build-tsan/aotrt_unit_tests"
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" python3 -m pytest tests/e2e -v -rA
step e2e "$t"

echo "== OpInfo CPU slice (tests/opinfo: op_db ops through aotrt, vs docs/opinfo/)"
t=$(date +%s)
AOTRT_OPINFO_CACHE="${AOTRT_OPINFO_CACHE:-$CACHE_ROOT/opinfo}" python3 -m pytest tests/opinfo -v -rA
step opinfo "$t"

echo "== Hugging Face architectures (tests/hf: the CI slice of transformers models, torch's own flow)"
t=$(date +%s)
AOTRT_HF_CACHE="${AOTRT_HF_CACHE:-$CACHE_ROOT/hf}" python3 -m pytest tests/hf -v -rA
step hf "$t"

echo "== Python package (pip install ., tests/python)"
t=$(date +%s)
# `pip install .` as a user runs it, through a wheel so that one build serves both
# environments: this python (with torch, for the tests) and a venv with numpy alone.
# Built as build/ is (RelWithDebInfo; the wheel's default is Release) in a folder beside
# it, so that ccache serves the library's objects compiled above (Note [ccache]).
rm -rf build/python-dist
python3 -m pip wheel . -q --no-build-isolation --no-deps -w build/python-dist \
  -C build-dir=build-wheel -C cmake.build-type=RelWithDebInfo
python3 -m pip install -q --force-reinstall --no-deps build/python-dist/aotrt-*.whl
[ -x build/venv-numpy/bin/python ] || python3 -m venv build/venv-numpy
build/venv-numpy/bin/python -m pip install -q numpy
build/venv-numpy/bin/python -m pip install -q --force-reinstall --no-deps build/python-dist/aotrt-*.whl
build/venv-numpy/bin/python - "$AOTRT_E2E_CACHE/linear_bias" <<'EOF'
import sys, numpy as np, aotrt
assert 'torch' not in sys.modules
pkg = sys.argv[1]
(y,) = aotrt.load(pkg + '.pt2')(np.load(pkg + '.input_0.npy'))
np.testing.assert_allclose(y.numpy(), np.load(pkg + '.expected_0.npy'), rtol=1e-5, atol=1e-5)
print('import aotrt and a run with numpy alone (no torch in this venv): ok')
EOF
# Not with python/ on PYTHONPATH: the source tree's python/aotrt/ would shadow the install.
python3 -m pytest tests/python -v -rA
step python "$t"

echo "== generation (tests/generate: Hugging Face decoders and Whisper through aotrt_tools.llm and torch's own flow)"
t=$(date +%s)
# The installed package above; exports cached in the e2e cache's generate/ folder. Greedy tokens
# equal transformers' generate token for token (64 tokens), sampling reproducible for a seed.
# Not with python/ on PYTHONPATH (the source tree's aotrt would shadow the install): the
# tests append it themselves for aotrt_tools.
python3 -m pytest tests/generate -v -rA
step generation "$t"

echo "== wheels (scripts/build_wheel.sh: manylinux, installed into fresh venvs holding numpy alone)"
t=$(date +%s)
# The same build as above for each CPython found (ccache serves the objects), repaired by
# auditwheel; tests/wheel installs each into a fresh venv of every CPython it serves and runs
# it there (zoo packages from the e2e cache, `aotrt info` from the venv's bin/, ldd), and
# prints each wheel's size. The CUDA wheel is built (compiled and linked, cp312-abi3 only)
# and its layout checked; scripts/wheel_gpu.sh runs it on a GPU machine.
rm -rf build/wheel-dist
scripts/build_wheel.sh --out build/wheel-dist
scripts/build_wheel.sh --cuda --out build/wheel-dist \
  --python "$(scripts/build_wheel.sh --list-pythons | awk '$1 == "3.12" { print $2 }')"
AOTRT_WHEEL_DIR="$PWD/build/wheel-dist" python3 -m pytest tests/wheel -v -rA
step wheel "$t"

echo "== Triton Inference Server with the aotrt backend (tritonserver 2.51 on 127.0.0.1)"
t=$(date +%s)
# Exports (3 zoo models) are kept in the cache above and reused while the export code is unchanged.
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" AOTRT_BUILD_DIR="$PWD/build" \
  AOTRT_TRITON_CACHE="${AOTRT_TRITON_CACHE:-$CACHE_ROOT/triton_zoo}" \
  timeout 1200 python3 -m pytest tests/triton -v -rA
step triton "$t"

echo "== the Triton generation backend's cancellation storm under AddressSanitizer"
# The plain storm above retries when tritonserver crashes in its own code; here the backend
# (the sanitizer tree's) must come through two storms with no report.
t=$(date +%s)
AOTRT_TRITON_CACHE="${AOTRT_TRITON_CACHE:-$CACHE_ROOT/triton_zoo}" scripts/triton_asan_storm.sh 2
step triton-asan "$t"

echo "== docs/robustness.md lists every case that ran"
# The table is regenerated from this run's records and the H200's (committed:
# docs/results/robustness_h200.jsonl, from scripts/gpu_e2e.sh --robust) into
# build/robustness.md. The committed docs/robustness.md must list every case
# this run tried, with the same outcome (messages may differ: temporary paths,
# timings); regenerate it with --write docs/robustness.md when it does not.
cp docs/robustness.md build/robustness.md
python3 scripts/robustness_table.py "$AOTRT_ROBUSTNESS_LOG" docs/results/robustness_h200.jsonl \
  --write build/robustness.md
python3 scripts/robustness_table.py "$AOTRT_ROBUSTNESS_LOG" --check docs/robustness.md


printf '%s\n' "${steps[@]}"
echo "== all tests passed in $(( $(date +%s) - start )) s"
