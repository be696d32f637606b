#!/usr/bin/env bash
# On a fresh Debian 12 machine: install what aotrt needs, build it, and run
# the demo (export a small model with torch, run it with build/aotrt, print
# the max abs diff against eager).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
# The project's .venv, which install_deps.sh makes on a fresh machine: sourced after it, or
# the demo below would run the system's python3, which has no torch.
source scripts/python_env.sh
scripts/build.sh
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" python3 -m aotrt_tools.demo --aotrt "$PWD/build/aotrt"
