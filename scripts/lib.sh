# Sourced by the scripts (not run): which Python they install into and run, and a PATH
# on which the tools installed into that Python come first (jupyter-builder, and node
# and npm when they came from PyPI).
#
# The Python: $PYTHON if set; else this checkout's .venv, created on first use (a
# virtual environment works on every system Python, including those that refuse pip,
# PEP 668, such as Debian 12's).

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# apt-get as root, or through sudo.
apt_install() {
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "$@"
}

# Missing Debian packages among "$@", installed in one apt run (nothing when all there,
# or when this is not a Debian-like system: then the README lists what to install).
apt_ensure() {
  command -v dpkg >/dev/null || { echo "setup: not Debian: install $* yourself" >&2; return 0; }
  local missing=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
}

resolve_python() {
  if [ -n "${PYTHON:-}" ]; then
    PY=$PYTHON
  else
    PY=$ROOT/.venv/bin/python
    if [ ! -x "$PY" ]; then
      command -v python3 >/dev/null || { echo "setup: python3 (3.10 or newer) is missing" >&2; exit 1; }
      # Debian's python3 has venv only with python3-venv (ensurepip)
      python3 -c 'import ensurepip, venv' 2>/dev/null || apt_ensure python3-venv
      echo "setup: creating the virtual environment $ROOT/.venv"
      python3 -m venv "$ROOT/.venv"
    fi
  fi
  "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
    || { echo "setup: $PY is older than Python 3.10" >&2; exit 1; }
  PY_BIN=$("$PY" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
  export PATH="$PY_BIN:$PATH"
}

pipi() { "$PY" -m pip install -q --disable-pip-version-check "$@"; }

# PyTorch 2.13, the CPU build where it can be had: on Linux the +cpu wheel (PyTorch's CPU
# index when it answers, or a wheel in pip's find-links); where neither has it, PyPI's
# torch==2.13.0, which is the CUDA build (about 3 GB with its nvidia packages) and runs
# on the CPU all the same. On macOS PyPI's wheel is the CPU/MPS build. Never a looser pin.
TORCH_VERSION=2.13.0
TORCH_INDEX=https://download.pytorch.org/whl/cpu
# The index, when it answers: where it does not (an offline mirror, a wheel cache),
# pip would retry it for every package.
torch_index_args() {
  "$PY" - "$TORCH_INDEX/" <<'PYEOF' >/dev/null 2>&1 && echo "--extra-index-url $TORCH_INDEX"
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=5)
PYEOF
}
# install_torch PIP...: torch (and numpy) with the pip command given, CPU build first.
install_torch() {
  if [ "$(uname -s)" = Linux ]; then
    # shellcheck disable=SC2046  # the index arguments split on purpose
    "$@" $(torch_index_args) "torch==$TORCH_VERSION+cpu" numpy 2>/dev/null && return 0
    echo "setup: torch==$TORCH_VERSION+cpu is not to be had here; installing PyPI's torch==$TORCH_VERSION (the CUDA build, which runs on the CPU)" >&2
  fi
  "$@" "torch==$TORCH_VERSION" numpy
}
ensure_torch() {
  "$PY" -c 'import torch, sys; sys.exit(torch.__version__.split("+")[0] != "'$TORCH_VERSION'")' 2>/dev/null \
    || install_torch pipi
}

# Seconds since the script started, for the timing lines.
elapsed() { echo $((SECONDS - ${1:-0})); }
