#!/bin/sh
# rehearse at scale through the foreign hubs of tests/rehearse.rs (BENCHMARKS.md):
#   ws        node `ws` chat hub killed (-KILL) and restarted, `--publish ws`
#   socketio  python-socketio hub killed and restarted, its `tick` events
#   h2        node http2 SSE server, SIGTERM: GOAWAY, streams ended DRAIN_MS later
# Usage: benches/rehearse/foreign.sh SCENARIO [N] [RTCHECK]   (writes foreign-SCENARIO-N.json,
# .time (GNU time), .hub (the hub's own counts) in the current directory). Loopback only;
# stops what it started.
set -eu
S=$1
N=${2:-1000}
RT=$(realpath "${3:-target/debug/rtcheck}")
FX=$(realpath "$(dirname "$0")/../../tests/fixtures/foreign")
D=$(mktemp -d)
P=${PORT:-18411}
cleanup() {
    [ -f "$D/pid" ] && kill -9 "$(cat "$D/pid")" 2>/dev/null || true
    rm -rf "$D"
}
trap cleanup EXIT INT TERM
case $S in
ws) PROG="NODE_PATH=/usr/share/nodejs PORT=$P BROADCAST_MS=0 PUBLISH_LOG=$D/publish.log setsid /usr/bin/node $FX/ws_broadcast.js"
    URL="ws://127.0.0.1:$P/"
    ARGS="--reconnect exp:500ms..10s+jitter --publish ws --rate ${RATE:-5}"; SIG=KILL ;;
socketio) PROG="PORT=$P TICK_MS=${TICK_MS:-200} PING_INTERVAL=5 PING_TIMEOUT=5 EVENTS_LOG=$D/events.log setsid /usr/bin/python3 $FX/socketio_server.py"
    URL="ws://127.0.0.1:$P/socket.io/?EIO=4&transport=websocket"
    ARGS="--reconnect exp:500ms..10s+jitter --event tick --seq-path seq --ts-path ts"; SIG=KILL ;;
h2) (cd "$D" && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
        -subj "/CN=bench CA" 2>/dev/null &&
     openssl req -newkey rsa:2048 -nodes -keyout leaf.key -out leaf.csr -subj /CN=127.0.0.1 2>/dev/null &&
     printf 'subjectAltName=IP:127.0.0.1\n' > san.ext &&
     openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem \
        -days 2 -extfile san.ext 2>/dev/null)
    PROG="PORT=$P CERT=$D/leaf.pem KEY=$D/leaf.key EVENT_MS=${EVENT_MS:-200} DRAIN_MS=1000 LOG=$D/goaway.log setsid /usr/bin/node $FX/h2_sse.js"
    URL="https://127.0.0.1:$P/events"
    ARGS="--http2 --ca $D/ca.pem --reconnect exp:500ms..10s+jitter --ts-path ts"; SIG=TERM ;;
*) echo "unknown scenario $S (ws, socketio, h2)" >&2; exit 2 ;;
esac
printf '%s >>%s/hub.log 2>&1 </dev/null &\necho $! > %s/pid\n' "$PROG" "$D" "$D" > "$D/start.sh"
sh "$D/start.sh"
i=0
until bash -c "exec 3<>/dev/tcp/127.0.0.1/$P" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 150 ] || { echo "nothing listens on $P" >&2; exit 1; }; sleep 0.2
done
HOOK="p=\$(cat $D/pid); kill -$SIG \$p; while kill -0 \$p 2>/dev/null; do sleep 0.05; done; sh $D/start.sh"
OUT=foreign-$S-$N
uptime > "$OUT.hub"
# shellcheck disable=SC2086
/usr/bin/time -v -o "$OUT.time" "$RT" rehearse "$URL" --connections "$N" --restart "$HOOK" \
    $ARGS --settle ${SETTLE:-5s} --timeout 180s --format json -o "$OUT.json" || true
uptime >> "$OUT.hub"
sleep 2
for f in publish.log events.log goaway.log; do
    [ -f "$D/$f" ] || continue
    echo "$f lines: $(wc -l < "$D/$f")" >> "$OUT.hub"
    [ $f = publish.log ] && echo "publish.log written sum: $(awk '{s+=$1} END {print s}' "$D/$f")" >> "$OUT.hub"
    [ $f = events.log ] && echo "events.log connects: $(grep -c ' connect$' "$D/$f")" >> "$OUT.hub"
done
tail -5 "$D/hub.log" >> "$OUT.hub"
