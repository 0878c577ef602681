#!/usr/bin/env bash
# omoide's one entry point for a fresh machine.
#
#   ./dev.sh demo       set up the runtime, start the server on configs/offline.yaml and let
#                       a simulated StackChan talk to it (the main job; works offline, no keys)
#   ./dev.sh serve      set up the runtime and run the server on configs/offline.yaml
#   ./dev.sh test       set up everything (runtime, every plugin, the test layer) and run
#                       the whole test suite
#   ./dev.sh setup      only set up the runtime (.venv with the core and the plugins the
#                       offline job runs, editable)
#   ./dev.sh setup all  also the plugins of the production stack and the other optional
#                       ones (Qwen3-ASR and Qwen3-Embedding with torch, Chroma, Kokoro, USE)
#
# Three layers, each installed once and again only when its files change (a stamp in the
# venv each): the runtime (libopus0; the core and the plugins configs/offline.yaml uses,
# plus the light network ones) for demo, serve and setup; every other plugin (torch
# pinned through constraints.txt) for `setup all` and test; the test layer on top for
# test (chromium and CJK fonts for the console's browser tests, requirements-test.txt,
# the tools/ distributions: omoide-bench and the test doubles). So `test` after `demo`
# adds only what the tests need.
set -euo pipefail
cd "$(dirname "$0")"
VENV="${OMOIDE_VENV:-.venv}"
PY="$VENV/bin/python"

log() { printf '\033[1m[omoide]\033[0m %s\n' "$*" >&2; }

apt_install() {
  local sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "$@"
}

runtime_system_packages() {
  # libopus0: the Opus codec the StackChan protocol uses. (`grep >/dev/null`, not -q:
  # -q stops reading at the first match, and under pipefail the writer's SIGPIPE would
  # count as "missing".)
  if ! ldconfig -p 2>/dev/null | grep 'libopus\.so\.0' >/dev/null; then
    log "installing libopus0"
    apt_install libopus0
  fi
}

test_system_packages() {
  local missing=()
  # chromium: the browser the console's tests drive headless (playwright with
  # executable_path); fonts-noto-cjk: so the Japanese in its screenshots is text, not
  # empty boxes (its fonts carry Latin letters too)
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  fc-list 2>/dev/null | grep -i 'Noto Sans CJK' >/dev/null || missing+=(fonts-noto-cjk)
  # postgresql: the database tests start a throwaway cluster with its initdb/pg_ctl (no
  # system service is used); OMOIDE_TEST_SKIP_POSTGRESQL=1 skips them instead
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    apt_install "${missing[@]}"
  fi
}

# A layer is up to date when its stamp holds the hash of the files it was installed from.
layer_is_current() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }
files_hash() { cat "$@" | sha1sum | cut -c1-16; }

# The plugins the main job runs (configs/offline.yaml) and the light ones that only speak
# to a service over the network; every other plugin is in the "all" layer.
RUNTIME_PLUGINS=(device_stackchan vad_silero turn_smart speaker_resemblyzer asr_whisper embed_e5
                 store_qdrant standins tts_openjtalk skills chat_modelscope tts_irodori)

runtime_env() {
  local stamp="$VENV/.omoide-runtime" want p manifests=()
  for p in "${RUNTIME_PLUGINS[@]}"; do manifests+=("plugins/$p/pyproject.toml"); done
  want=$(files_hash constraints.txt core/pyproject.toml "${manifests[@]}")
  layer_is_current "$stamp" "$want" && return
  log "creating $VENV and installing omoide with the plugins the offline job runs"
  [ -x "$PY" ] || python3 -m venv "$VENV"
  "$PY" -m pip install -q --upgrade pip
  local editables=(-e core)
  for p in "${RUNTIME_PLUGINS[@]}"; do editables+=(-e "plugins/$p"); done
  "$PY" -m pip install -q -c constraints.txt "${editables[@]}"
  # Silero's wheel carries the ONNX model but declares torch/torchaudio deps we do not
  # use (we run the model with onnxruntime): install it without them.
  "$PY" -m pip install -q --no-deps silero-vad
  echo "$want" > "$stamp"
}

all_plugins_env() {
  local stamp="$VENV/.omoide-all-plugins" want p
  want=$(files_hash constraints.txt plugins/*/pyproject.toml)
  layer_is_current "$stamp" "$want" && return
  log "installing every other plugin (torch CPU build, transformers, qwen-asr, chromadb...)"
  # torch first, pinned: a CPU build that installs quickly here (see constraints.txt).
  "$PY" -m pip install -q -c constraints.txt torch
  local editables=()
  for p in plugins/*/; do editables+=(-e "$p"); done
  "$PY" -m pip install -q -c constraints.txt "${editables[@]}"
  echo "$want" > "$stamp"
}

test_env() {
  local stamp="$VENV/.omoide-test" want
  want=$(files_hash constraints.txt requirements-test.txt core/pyproject.toml \
         tools/*/pyproject.toml)
  layer_is_current "$stamp" "$want" && return
  log "installing the test layer: pytest, playwright, omoide-bench, the test doubles"
  local editables=(-e "core[testing]")
  for p in tools/*/pyproject.toml; do editables+=(-e "$(dirname "$p")"); done
  "$PY" -m pip install -q -c constraints.txt "${editables[@]}" -r requirements-test.txt
  echo "$want" > "$stamp"
}

# Smart Turn v3.2 (the offline config's end-of-turn detector) is one file of the pipecat-ai
# wheel: download the wheel without its dependencies (a whole framework) and extract the
# file, checked by SHA-256, into omoide's model cache. Nothing to do when it is there.
SMART_TURN_WHEEL="pipecat-ai==1.14.0"
turn_model() {
  "$PY" -m omoide_turn_smart.bundled >/dev/null && return
  log "extracting the Smart Turn v3.2 model from the $SMART_TURN_WHEEL wheel"
  local tmp
  tmp=$(mktemp -d)
  "$PY" -m pip download -q --no-deps "$SMART_TURN_WHEEL" -d "$tmp"
  "$PY" -m omoide_turn_smart.bundled "$tmp"/pipecat_ai-*.whl
  rm -rf "$tmp"
}

# Resemblyzer's GE2E voice encoder (the speaker stage) is one file of the Resemblyzer wheel,
# which declares torch, librosa and webrtcvad: the wheel is downloaded without them and the
# weights extracted, checked by SHA-256, into omoide's model cache (run in numpy).
RESEMBLYZER_WHEEL="Resemblyzer==0.1.4"
speaker_model() {
  "$PY" -m omoide_speaker_resemblyzer.bundled >/dev/null && return
  log "extracting the GE2E voice encoder from the $RESEMBLYZER_WHEEL wheel"
  local tmp
  tmp=$(mktemp -d)
  "$PY" -m pip download -q --no-deps "$RESEMBLYZER_WHEEL" -d "$tmp"
  "$PY" -m omoide_speaker_resemblyzer.bundled "$tmp"/[Rr]esemblyzer-*.whl
  rm -rf "$tmp"
}

# The speaker tests compare omoide's numpy encoder with Resemblyzer's own (torch and
# librosa come with the other plugins): the package without its declared dependencies,
# and webrtcvad (binary wheels) that its audio module imports.
speaker_reference() {
  "$PY" -m pip show -q Resemblyzer webrtcvad-wheels >/dev/null 2>&1 && return
  "$PY" -m pip install -q --no-deps "$RESEMBLYZER_WHEEL" webrtcvad-wheels
}

setup() { runtime_system_packages; runtime_env; turn_model; speaker_model; }
setup_all() { setup; all_plugins_env; }
setup_test() { setup_all; test_system_packages; test_env; speaker_reference; }

case "${1:-}" in
  setup) if [ "${2:-}" = all ]; then setup_all; else setup; fi ;;
  test)  setup_test; shift; exec "$PY" -m pytest -q "$@" ;;
  demo)  setup; shift; exec "$VENV/bin/omoide" demo "$@" ;;
  serve) setup; shift; exec "$VENV/bin/omoide" serve --config configs/offline.yaml "$@" ;;
  *) sed -n '2,13p' "$0"; exit 2 ;;
esac
