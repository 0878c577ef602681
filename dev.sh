#!/usr/bin/env bash
# omoide's one entry point for a fresh machine.
#
#   ./dev.sh demo     set everything up, start the server on configs/offline.yaml and let a
#                     simulated StackChan talk to it (the main job; works offline, no keys)
#   ./dev.sh serve    set everything up and run the server on configs/offline.yaml
#   ./dev.sh test     set everything up and run the whole test suite
#   ./dev.sh setup    only set up (.venv with the core and every plugin, editable)
#
# Set-up is idempotent: it installs what is missing and skips what is there.
set -euo pipefail
cd "$(dirname "$0")"
VENV="${OMOIDE_VENV:-.venv}"
PY="$VENV/bin/python"

log() { printf '\033[1m[omoide]\033[0m %s\n' "$*" >&2; }

apt_install() {
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
  fi
}

system_packages() {
  local missing=()
  # libopus0: the Opus codec the StackChan protocol uses.
  ldconfig -p 2>/dev/null | grep -q 'libopus\.so\.0' || missing+=(libopus0)
  # chromium: the browser the console's tests drive (playwright with executable_path);
  # fonts-noto-cjk: so the Japanese in its screenshots is text, not empty boxes
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  fc-list 2>/dev/null | grep -qi 'Noto Sans CJK' || missing+=(fonts-noto-cjk)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    apt_install "${missing[@]}"
  fi
}

python_env() {
  local stamp="$VENV/.omoide-setup"
  local want
  want=$(cat constraints.txt requirements-test.txt core/pyproject.toml plugins/*/pyproject.toml \
         | sha1sum | cut -c1-16)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return
  fi
  log "creating $VENV and installing omoide with every plugin (first run takes a few minutes)"
  [ -x "$PY" ] || python3 -m venv "$VENV"
  "$PY" -m pip install -q --upgrade pip
  # torch first, pinned: a CPU build that installs quickly here (see constraints.txt).
  "$PY" -m pip install -q -c constraints.txt torch
  local editables=(-e "core[testing]")
  for p in plugins/*/; do editables+=(-e "$p"); done
  "$PY" -m pip install -q -c constraints.txt "${editables[@]}" -r requirements-test.txt
  # Silero's wheel carries the ONNX model but declares torch/torchaudio deps we do not
  # use (we run the model with onnxruntime): install it without them.
  "$PY" -m pip install -q --no-deps silero-vad
  echo "$want" > "$stamp"
}

setup() { system_packages; python_env; }

case "${1:-}" in
  setup) setup ;;
  test)  setup; shift; exec "$PY" -m pytest -q "$@" ;;
  demo)  setup; shift; exec "$VENV/bin/omoide" demo "$@" ;;
  serve) setup; shift; exec "$VENV/bin/omoide" serve --config configs/offline.yaml "$@" ;;
  *) sed -n '2,12p' "$0"; exit 2 ;;
esac
