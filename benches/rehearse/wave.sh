#!/bin/sh
# The reconnect wave of BENCHMARKS.md (issue 38): N clients through nginx to rtcheck
# serve, the server restarted by SIGTERM and started again, once per reconnect policy.
# Usage: [RATE=10] benches/rehearse/wave.sh [N] [RTCHECK]   (N default 2000; writes wave-N.json
# wave-N.html, wave-N.md and wave-N.time in the current directory). Loopback only; stops what it started.
set -eu
N=${1:-2000}
RT=${2:-target/debug/rtcheck}
RT=$(realpath "$RT")
D=$(mktemp -d)
SP=18401
NP=18402
cleanup() {
    [ -f "$D/pid" ] && kill -9 "$(cat "$D/pid")" 2>/dev/null || true
    [ -f "$D/nginx.pid" ] && kill "$(cat "$D/nginx.pid")" 2>/dev/null || true
    rm -rf "$D"
}
trap cleanup EXIT INT TERM
cat > "$D/start.sh" <<S
setsid $RT serve --listen 127.0.0.1:$SP --rate ${RATE:-10} >>$D/serve.log 2>&1 </dev/null &
echo \$! > $D/pid
S
sh "$D/start.sh"
cat > "$D/nginx.conf" <<C
daemon on;
worker_processes 1;
worker_rlimit_nofile 65536;
pid $D/nginx.pid;
error_log $D/error.log;
events { worker_connections 30000; }
http {
  access_log off;
  client_body_temp_path $D/body; proxy_temp_path $D/proxy;
  fastcgi_temp_path $D/fcgi; uwsgi_temp_path $D/uwsgi; scgi_temp_path $D/scgi;
  map \$http_upgrade \$connection_upgrade { default upgrade; '' close; }
  server {
    listen 127.0.0.1:$NP backlog=4096;
    location / {
      proxy_pass http://127.0.0.1:$SP;
      proxy_http_version 1.1;
      proxy_set_header Upgrade \$http_upgrade;
      proxy_set_header Connection \$connection_upgrade;
      proxy_buffering off;
      proxy_read_timeout 1h;
    }
  }
}
C
nginx -p "$D" -c "$D/nginx.conf"
sleep 1
HOOK="p=\$(cat $D/pid); kill -TERM \$p; while kill -0 \$p 2>/dev/null; do sleep 0.05; done; sh $D/start.sh"
# rehearse's own cost (its peak RSS over N clients) from GNU time when installed.
TIME=""
[ -x /usr/bin/time ] && TIME="/usr/bin/time -v -o wave-$N.time"
$TIME "$RT" rehearse "ws://127.0.0.1:$NP/ws" --connections "$N" --restart "$HOOK" \
    --server-addr 127.0.0.1:$SP --compare-reconnect fixed:1s,exp:500ms..30s+jitter \
    --timeout 120s --settle 5s \
    --format json -o "wave-$N.json" --report "html=wave-$N.html" --report "markdown=wave-$N.md" || true
