#!/usr/bin/env bash
# Runs a command and fails if it changed the system's Python: what `pip freeze`
# lists for the system interpreter (found outside any virtual environment,
# /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin python3) and the entries of
# its site-packages folders, compared before and after. CI (.ci/run) runs
# scripts/install_deps.sh under it: the project's Python tools belong in its
# own .venv (scripts/python_env.sh), and setting up aotrt leaves the user's
# Python as it was.
#   scripts/check_system_python.sh scripts/install_deps.sh
# AOTRT_SYSTEM_PYTHON names another interpreter to watch (the tests use a
# throwaway one to see that a change is caught).
set -euo pipefail
[ "$#" -ge 1 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
PY="${AOTRT_SYSTEM_PYTHON:-python3}"

# Distributions as name==version with the folder they are in (pip freeze's view,
# read with importlib.metadata so that a Python without pip works too), then
# every entry of the interpreter's site-packages folders (a .pth file or a
# module copied in without metadata changes the Python as much).
snapshot() {
  /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME" "$PY" - <<'EOF'
import importlib.metadata as md, os, site, sys
dists = sorted(f"{d.metadata['Name']}=={d.version}  ({d.locate_file('')})" for d in md.distributions())
folders = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p)]
print(f"interpreter {sys.executable} {sys.version.split()[0]}")
print("\n".join(dists))
for folder in folders:
    for entry in sorted(os.listdir(folder)):
        if entry != "__pycache__":
            print(f"{folder}/{entry}")
EOF
}

if ! before=$(snapshot); then
  echo "check_system_python: no system Python to watch ($PY outside any venv)" >&2
  echo "check_system_python: nothing to compare; running $* unchecked" >&2
  exec "$@"
fi
"$@"
after=$(snapshot)
if [ "$before" != "$after" ]; then
  echo "check_system_python: '$*' changed the system Python ($(head -n1 <<<"$before")):" >&2
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi
echo "check_system_python: the system Python is unchanged by '$*' ($(head -n1 <<<"$before"), $(($(wc -l <<<"$before") - 1)) entries)"
