#!/usr/bin/env bash
# The CUDA wheel (aotrt-cu13, scripts/build_wheel.sh --cuda) on the GPU machine, from the
# wheel file alone: installs it into python3's environment with `pip install --no-index`
# (no network there, so every nvidia-* dependency it declares must already be installed:
# torch's CUDA wheels bring them), exports two zoo models for CUDA with the torch there,
# and runs them through the installed package with tests/wheel/user_checks.py from outside
# the source tree: outputs against eager, the CUDA libraries loaded from site-packages/nvidia
# (the declared wheels, not bundled ones), the CPU libraries from the wheel's own copies.
# Then `aotrt info` from the environment's bin/. Uninstalls the wheel at the end.
# Usage: scripts/wheel_gpu.sh dist/aotrt_cu13-<version>-cp312-abi3-manylinux_<glibc>_x86_64.whl
# Logs go to $OUT when it is set (wheel_gpu.log), else build-wheel-gpu/.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
WHEEL=$(realpath "${1:?usage: scripts/wheel_gpu.sh WHEEL}")
WORK=$REPO/build-wheel-gpu
LOG_DIR=${OUT:-$WORK}
mkdir -p "$WORK" "$LOG_DIR"
exec > >(tee "$LOG_DIR/wheel_gpu.log") 2>&1

echo "== $(python3 --version), torch $(python3 -c 'import torch; print(torch.__version__)')"
# Another build of the package (python_gpu.sh's, or an earlier run's) would share aotrt/.
python3 -m pip uninstall -q -y aotrt aotrt-cu13 2>/dev/null || true
echo "== pip install --no-index $(basename "$WHEEL")"
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-index "$WHEEL"
trap 'PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip uninstall -q -y aotrt-cu13' EXIT
# Outside the source tree, whose python/aotrt/ must not shadow the install.
cd "$WORK"
SITE=$(python3 -c 'import aotrt, os; print(os.path.dirname(os.path.dirname(os.path.realpath(aotrt.__file__))))')
SCRIPTS=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
echo "== installed in $SITE; console script $SCRIPTS/aotrt"

echo "== export linear_bias, pointwise_c2f for CUDA (torch)"
ZOO=$WORK/zoo
PYTHONPATH="$REPO/python" python3 -m aotrt_tools.export --model linear_bias --model pointwise_c2f \
  --device cuda --jobs 2 --out "$ZOO" >"$WORK/export.log" 2>&1 || { tail -n 30 "$WORK/export.log"; exit 1; }

# Exact fp32 references (TF32 off in eager): aotrt's cuDNN convolutions without TF32 too, as
# every GPU script runs them (Note [TF32] in src/cuda/handles.h).
export AOTRT_CUDNN_ALLOW_TF32=0
status=0
for name in linear_bias pointwise_c2f; do
  read -r rtol atol < <(PYTHONPATH="$REPO/python" python3 -c "
from aotrt_tools import zoo
t = zoo.entry('$name'); print(t.rtol, t.atol)")
  echo "== $name through the installed wheel (tests/wheel/user_checks.py --cuda)"
  python3 "$REPO/tests/wheel/user_checks.py" --cuda --site "$SITE" --package "$ZOO/$name.pt2" \
    --rtol "$rtol" --atol "$atol" || status=1
done
echo "== $SCRIPTS/aotrt info $ZOO/linear_bias.pt2"
"$SCRIPTS/aotrt" info "$ZOO/linear_bias.pt2" >"$WORK/info.txt" || status=1
head -n 20 "$WORK/info.txt"
[ "$status" -eq 0 ] && echo "== wheel_gpu: all checks passed" || echo "== wheel_gpu: FAILED"
exit "$status"
