#!/usr/bin/env bash
# Unpacks Triton Inference Server 2.51.0 (tritonserver and its libraries) from
# PyPI's nvidia-pytriton 0.7.0 wheel into $AOTRT_TRITON_HOME (default
# ~/.cache/aotrt/pytriton-0.7.0): the binary is at
# pytriton/tritonserver/bin/tritonserver. The wheel is downloaded without its
# dependencies and never installed (it would pull numpy<2 and tritonclient).
#   scripts/fetch_tritonserver.sh                 # download (once) and unpack
#   scripts/fetch_tritonserver.sh --wheel W.whl   # unpack a wheel carried here
#   scripts/fetch_tritonserver.sh --pack F.tar.xz # then pack the server alone (no Python
#                                                 # backend, no libpython) to carry elsewhere;
#                                                 # unpack it with tar xJf F.tar.xz -C HOME
set -euo pipefail
source "$(dirname "$0")/python_env.sh"  # the project's .venv, where there is one
VERSION=0.7.0
HOME_DIR="${AOTRT_TRITON_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/aotrt/pytriton-$VERSION}"
BIN="$HOME_DIR/pytriton/tritonserver/bin/tritonserver"
WHEEL=""
PACK=""
if [ "${1:-}" = "--wheel" ]; then WHEEL="$2"; fi
if [ "${1:-}" = "--pack" ]; then PACK="$2"; fi
pack() {
  (cd "$HOME_DIR" && tar cf - pytriton/tritonserver/bin/tritonserver \
     $(ls nvidia_pytriton.libs/* | grep -v libpython)) | xz -T0 -6 > "$PACK"
  echo "packed $(du -h "$PACK" | cut -f1) into $PACK" >&2
}
if [ -x "$BIN" ]; then [ -z "$PACK" ] || pack; echo "$BIN"; exit 0; fi
mkdir -p "$HOME_DIR"
if [ -z "$WHEEL" ]; then
  python3 -m pip download -q --no-deps "nvidia-pytriton==$VERSION" -d "$HOME_DIR/wheel" >&2
  WHEEL=$(ls "$HOME_DIR"/wheel/nvidia_pytriton-$VERSION-*.whl | head -n1)
fi
# zipfile keeps no permissions on extract: restore the executable bits the wheel records.
python3 - "$WHEEL" "$HOME_DIR" <<'PY'
import os, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        if not (info.filename.startswith("pytriton/tritonserver/") or info.filename.startswith("nvidia_pytriton.libs/")):
            continue
        path = z.extract(info, dest)
        mode = info.external_attr >> 16
        if mode:
            os.chmod(path, mode & 0o777)
PY
chmod +x "$BIN"
rm -rf "$HOME_DIR/wheel"
[ -z "$PACK" ] || pack
echo "$BIN"
