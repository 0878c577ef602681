#!/bin/bash
# Once: py-xiaozhi's source (unmodified) and a venv with its network and codec
# dependencies (the versions of its uv.lock; no torch), and the person's WAVs.
# Usage: tools/clients/py-xiaozhi/setup.sh [PY_XIAOZHI_SOURCE_TREE]
# Without an argument the client is cloned from GitHub (needs network access).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
WORK=${WORK:-/tmp/omoide-py-xiaozhi}
mkdir -p "$WORK"
if [ $# -ge 1 ]; then
  rm -rf "$WORK/py-xiaozhi"; cp -r "$1" "$WORK/py-xiaozhi"
elif [ ! -d "$WORK/py-xiaozhi" ]; then
  git clone -q https://github.com/huangjunsen0406/py-xiaozhi "$WORK/py-xiaozhi"
fi
# its audio plugin imports sounddevice, which needs PortAudio (no sound device is used)
python3 -c "import ctypes.util,sys; sys.exit(0 if ctypes.util.find_library('portaudio') else 1)" \
  || apt-get install -y --no-install-recommends libportaudio2
[ -x "$WORK/venv/bin/python" ] || python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q -r "$HERE/requirements-client.txt"
"$REPO/.venv/bin/python" "$HERE/say.py" "$WORK"
