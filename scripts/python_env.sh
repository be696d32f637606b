# Sourced by the project's scripts: puts the project's own Python environment
# (.venv at the root, made by scripts/install_deps.sh) first on PATH, so that
# `python3` and `pip` are the venv's and the user's own Python is never
# changed. Nothing happens when .venv does not exist yet (install_deps makes it).
_aotrt_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -x "$_aotrt_root/.venv/bin/python3" ]; then
  export VIRTUAL_ENV="$_aotrt_root/.venv"
  case ":$PATH:" in
    *":$VIRTUAL_ENV/bin:"*) ;;
    *) export PATH="$VIRTUAL_ENV/bin:$PATH" ;;
  esac
fi
unset _aotrt_root
