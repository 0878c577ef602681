#!/bin/bash
# A fresh omoide server (its own data dir) and a fresh py-xiaozhi identity, then the
# harness: activation -> pairing from omoide's CLI -> voice turns (-> idle close -> talk
# again). Usage: tools/clients/py-xiaozhi/run.sh [OMOIDE_CONFIG] [harness args...]
# Needs: setup.sh run once (the client's tree and venv, the WAVs, in $WORK).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
export WORK=${WORK:-/tmp/omoide-py-xiaozhi}
CONFIG=${1:-$REPO/configs/offline.yaml}; shift || true
CONFIG=$(realpath "$CONFIG")
PORT=${PORT:-8013}
STAMP=$(date -u +%H%M%S)
kill_server() { [ -f "$WORK/server.pid" ] && kill "$(cat "$WORK/server.pid")" 2>/dev/null; rm -f "$WORK/server.pid"; }
kill_server; sleep 2
rm -rf "$WORK/server" "$WORK/client-data"; mkdir -p "$WORK/server"
( cd "$WORK/server" && exec "$REPO/.venv/bin/omoide" serve --config "$CONFIG" --port "$PORT" \
    > "$WORK/server-$STAMP.log" 2>&1 ) &
echo $! > "$WORK/server.pid"
for _ in $(seq 60); do grep -q "Uvicorn running" "$WORK/server-$STAMP.log" 2>/dev/null && break; sleep 1; done
uptime
"$WORK/venv/bin/python" "$HERE/harness.py" --ota "http://127.0.0.1:$PORT/xiaozhi/ota/" \
    --omoide-config "$CONFIG" "$@" > "$WORK/run-$STAMP.out" 2>&1
rc=$?
uptime
cp "$WORK/client-data/logs/app.log" "$WORK/client-app-$STAMP.log" 2>/dev/null
cp "$WORK/server/data/offline/traces.jsonl" "$WORK/traces-$STAMP.jsonl" 2>/dev/null
kill_server
grep HARNESS "$WORK/run-$STAMP.out" | cut -c1-400
echo "harness rc=$rc; full output $WORK/run-$STAMP.out, client log $WORK/client-app-$STAMP.log"
exit $rc
