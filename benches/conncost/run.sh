#!/bin/sh
# BENCHMARKS.md "What one connection costs" (issue 39): rtcheck bench idle --server
# against python3-websockets, node ws (perMessageDeflate on) and rtcheck serve, each
# variant on a fresh server process (memory one variant freed is not reused by the
# next), idle and active (a 2,000-byte message to every client 10 times a second), TLS
# through nginx in front. Prints one line per run: server variant activity bytes/conn
# RSS socket conns/GB prediction-off%. Loopback only; everything it starts is stopped.
# Usage: benches/conncost/run.sh [RTCHECK] [POINTS]   (default target/debug/rtcheck, 200,1000,2000)
set -eu
RT=${1:-target/debug/rtcheck}
PTS=${2:-200,1000,2000}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FX=$ROOT/tests/fixtures/foreign
W=$(mktemp -d)
PIDS=""
cleanup() { for p in $PIDS; do kill "$p" 2>/dev/null || true; done; rm -rf "$W"; }
trap cleanup EXIT INT TERM
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
wait_port() {
  python3 - "$1" <<'PY' || { echo "port $1 not listening" >&2; exit 2; }
import socket, sys, time
for _ in range(300):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close(); sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
PY
}
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

(cd "$W" && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=bench CA" 2>/dev/null &&
  openssl req -newkey rsa:2048 -nodes -keyout leaf.key -out leaf.csr -subj "/CN=hub.test" 2>/dev/null &&
  printf 'subjectAltName=DNS:hub.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > leaf.ext &&
  openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 2 -extfile leaf.ext 2>/dev/null)

# nginx terminating TLS on $1 in front of 127.0.0.1:$2; prints its pid.
nginx_tls() {
  d=$W/nginx-$1; mkdir -p "$d"
  cat > "$d/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $d/nginx.pid;
worker_rlimit_nofile 20000;
events { worker_connections 8192; }
http {
  access_log off; client_body_temp_path $d/b; proxy_temp_path $d/p;
  fastcgi_temp_path $d/f; uwsgi_temp_path $d/u; scgi_temp_path $d/s;
  map \$http_upgrade \$connection_upgrade { default upgrade; '' close; }
  server {
    listen 127.0.0.1:$1 ssl; ssl_certificate $W/leaf.pem; ssl_certificate_key $W/leaf.key;
    location / { proxy_pass http://127.0.0.1:$2; proxy_http_version 1.1;
      proxy_set_header Upgrade \$http_upgrade; proxy_set_header Connection \$connection_upgrade;
      proxy_read_timeout 1h; }
  }
}
CONF
  nginx -p "$d" -c "$d/nginx.conf" -e "$d/error.log" >/dev/null 2>&1 &
  echo $!
}

# One run: SERVER-NAME VARIANT ACTIVITY URL [extra rtcheck flags...]
one() {
  name=$1 v=$2 act=$3 url=$4; shift 4
  "$RT" bench idle --server "$url" --variants "$v" --connections "$PTS" --settle 2s \
    --format json "$@" > "$W/out.json" 2>"$W/err" || true
  python3 - "$name" "$v" "$act" "$W/out.json" "$W/err" <<'PY'
import json, sys
name, v, act, path, err = sys.argv[1:]
try:
    r = json.load(open(path))["results"][0]
except Exception:
    print(f"{name:10} {v:8} {act:5} failed: {open(err).read().strip()}"); sys.exit()
p, pr = r["per_connection"], r["prediction"] or {}
if not p:
    print(f"{name:10} {v:8} {act:5} no figure: {'; '.join(r['notes'])}"); sys.exit()
print(f"{name:10} {v:8} {act:5} {p['total_bytes']:9.0f} {p['rss_bytes']:9.0f} {p['socket_bytes']:7.0f} "
      f"{p['connections_per_gb']:9.0f} {pr.get('deviation_pct', float('nan')):5.1f} {r.get('negotiated') or ''}")
if not r["valid"]:
    print("    invalid: " + "; ".join(r["notes"]))
PY
}

# A fresh server per run: KIND VARIANT ACTIVITY
run() {
  kind=$1 v=$2 act=$3
  p=$(port); extra=""; path=/
  case $kind in
    websockets)
      send=0; [ "$act" = 10/s ] && send=100
      PORT=$p COMPRESSION=deflate SEND_MS=$send SIZE=2000 /usr/bin/python3 "$FX/websockets_cost.py" >/dev/null 2>&1 &
      srv=$!;;
    node-ws)
      PORT=$p PER_MESSAGE_DEFLATE=1 NODE_PATH=/usr/share/nodejs node "$FX/ws_broadcast.js" >/dev/null 2>&1 &
      srv=$!
      [ "$act" = 10/s ] && extra="--publish"
      ;;
    serve)
      "$RT" serve --listen 127.0.0.1:$p >/dev/null 2>&1 &
      srv=$!; path=/ws;;
  esac
  PIDS="$PIDS $srv"; wait_port "$p"
  set -- --activity "$act" --size 2000
  [ -n "$extra" ] && set -- "$@" --publish "POST http://127.0.0.1:$p/publish"
  if [ "$v" = tls ]; then
    tp=$(port); ng=$(nginx_tls "$tp" "$p"); PIDS="$PIDS $ng"; wait_port "$tp"
    one "$kind" tls "$act" "ws://127.0.0.1:$p$path" --tls-url "wss://hub.test:$tp$path" \
      --connect-to "127.0.0.1:$tp" --ca "$W/ca.pem" "$@"
    stop "$ng"
  else
    one "$kind" "$v" "$act" "ws://127.0.0.1:$p$path" "$@"
  fi
  stop "$srv"
}

echo "server     variant  act   B/conn    RSS/conn  sock/c  conns/GB  off%  negotiated"
for kind in websockets node-ws; do
  for act in idle 10/s; do
    for v in plain tls deflate; do run "$kind" "$v" "$act"; done
  done
done
run serve plain idle
