#!/usr/bin/env bash
# On a fresh Debian 12 machine: install what aotrt needs, build it, and run
# the demo (export a small model with torch, run it with build/aotrt, print
# the max abs diff against eager).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python_env.sh  # the project's .venv (scripts/install_deps.sh)
scripts/install_deps.sh
scripts/build.sh
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" python3 -m aotrt_tools.demo --aotrt "$PWD/build/aotrt"
