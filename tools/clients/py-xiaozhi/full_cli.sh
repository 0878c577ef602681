#!/bin/bash
# The whole unmodified client, `python main.py --mode cli`, with its audio plugin disabled
# (XIAOZHI_DISABLE_AUDIO=1: no sound device here; its other plugins all run): activation
# with the code paired from omoide's CLI, then, in the same process, a typed utterance
# (the CLI's text input: `listen detect` with the text). Voice is covered by harness.py.
# Usage: tools/clients/py-xiaozhi/full_cli.sh [OMOIDE_CONFIG]   (after setup.sh)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
RUN=${WORK:-/tmp/omoide-py-xiaozhi}
CONFIG=${1:-$REPO/configs/offline.yaml}
CONFIG=$(realpath "$CONFIG")
PORT=${PORT:-8013}
STAMP=$(date -u +%H%M%S)
DATA=$RUN/cli-client-data
OUT=$RUN/full-cli-$STAMP.out
[ -f "$RUN/server.pid" ] && kill "$(cat "$RUN/server.pid")" 2>/dev/null; sleep 2
rm -rf "$RUN/server" "$DATA"; mkdir -p "$RUN/server" "$DATA/config"
( cd "$RUN/server" && exec "$REPO/.venv/bin/omoide" serve --config "$CONFIG" --port "$PORT" \
    > "$RUN/server-cli-$STAMP.log" 2>&1 ) &
echo $! > "$RUN/server.pid"
for _ in $(seq 60); do grep -q "Uvicorn running" "$RUN/server-cli-$STAMP.log" 2>/dev/null && break; sleep 1; done
# The user's one setting: the OTA address (merged with the client's defaults on load).
echo "{\"SYSTEM_OPTIONS\": {\"NETWORK\": {\"OTA_VERSION_URL\": \"http://127.0.0.1:$PORT/xiaozhi/ota/\"}}}" \
    > "$DATA/config/config.json"
FIFO=$RUN/cli-stdin; rm -f "$FIFO"; mkfifo "$FIFO"
( cd "$RUN/py-xiaozhi" && XIAOZHI_DATA_DIR=$DATA XIAOZHI_DISABLE_AUDIO=1 PYTHONFAULTHANDLER=1 \
    exec "$RUN/venv/bin/python" main.py --mode cli < "$FIFO" > "$OUT" 2>&1 ) &
CLIENT=$!
exec 3>"$FIFO"
T0=$(date +%s.%N)
for _ in $(seq 60); do grep -q "验证码: [0-9]" "$OUT" && break; sleep 0.2; done
CODE=$(grep -o "验证码: [0-9 ]*" "$OUT" | head -1 | tr -dc 0-9)
echo "code shown: $CODE"; sleep 3
( cd "$RUN/server" && "$REPO/.venv/bin/omoide" devices pair --config "$CONFIG" --code "$CODE" --user hanako )
for _ in $(seq 100); do grep -q "输入:" "$OUT" 2>/dev/null && break; sleep 0.2; done
sleep 5
echo "来週の土曜日に友達と箱根に行くんだ" >&3
sleep 25
[ "${DUMP:-0}" = 1 ] && kill -ABRT $CLIENT; sleep 1; echo "q" >&3; exec 3>&-
for _ in $(seq 50); do kill -0 $CLIENT 2>/dev/null || break; sleep 0.2; done
kill $CLIENT 2>/dev/null
kill "$(cat "$RUN/server.pid")" 2>/dev/null; rm -f "$RUN/server.pid" "$FIFO"
cp "$DATA/logs/app.log" "$RUN/full-cli-app-$STAMP.log"
cp "$RUN/server/data/offline/traces.jsonl" "$RUN/full-cli-traces-$STAMP.jsonl" 2>/dev/null
# Once its CLI view starts, py-xiaozhi removes every StreamHandler from logging, its log
# file's handler included (FileHandler is one): its log file ends at "create_viewport".
echo "--- client log (without DEBUG) ---"
grep -v DEBUG "$DATA/logs/app.log" | grep -E "激活|验证码|WebSocket|连接|ERROR|WARNING|create_viewport" | cut -c1-170
echo "--- server ---"
grep -E "ota|WebSocket|connection" "$RUN/server-cli-$STAMP.log" | cut -c1-150
python3 -c "
import json,sys
for l in open('$RUN/full-cli-traces-$STAMP.jsonl'):
    d=json.loads(l); print('turn', d['started_at'], d['user'], d['device'], 'stages:', ' '.join(d['stages']))
" 2>/dev/null || echo "no turn traced"
