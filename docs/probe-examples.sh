#!/usr/bin/env bash
# Regenerates the examples section of docs/probe.md from the current binary:
#   cargo build && docs/probe-examples.sh > /tmp/examples.md
# Starts two `rtcheck serve` backends (busy: events at 5/s; quiet: no events, heartbeat
# every 4 s) and nginx, HAProxy and Caddy in front of them on fixed loopback ports, each
# in the foreground with a config in a temp dir; stops everything on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
RT=${RTCHECK:-target/debug/rtcheck}
D=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$D"; }
trap cleanup EXIT
BUSY=127.0.0.1:18091
QUIET=127.0.0.1:18092
"$RT" serve --listen $BUSY --rate 5 --size 256 --ping 2s 2>/dev/null & pids+=($!)
"$RT" serve --listen $QUIET --wait-start --ping 4s 2>/dev/null & pids+=($!)

wait_port() { for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 never opened" >&2; exit 1; }
wait_port 18091; wait_port 18092

nginx_conf() { # $1 port, $2 dir, $3 location body
  cat <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $2/nginx.pid;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $2/body; proxy_temp_path $2/proxy;
  fastcgi_temp_path $2/fcgi; uwsgi_temp_path $2/uwsgi; scgi_temp_path $2/scgi;
  map \$http_upgrade \$connection_upgrade { default upgrade; '' close; }
  server {
    listen 127.0.0.1:$1;
    location /busy/ {
      proxy_pass http://$BUSY/;
$3
    }
    location /quiet/ {
      proxy_pass http://$QUIET/;
$3
    }
  }
}
CONF
}
NGINX_MISTAKEN='      proxy_ignore_headers X-Accel-Buffering;   # the backend sends none
      proxy_read_timeout 3s;                    # 60s by default; 3s to keep this short'
NGINX_CORRECT='      proxy_ignore_headers X-Accel-Buffering;   # the backend sends none
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_buffering off;
      proxy_read_timeout 3600s;'

haproxy_conf() { # $1 port, $2 timeouts
  cat <<CONF
global
  maxconn 256
defaults
  mode http
  timeout connect 5s
  timeout client 30s
$2
frontend fe
  bind 127.0.0.1:$1
  use_backend quiet if { path_beg /quiet/ }
  default_backend busy
backend busy
  http-request replace-path /busy(/.*) \1
  server s1 $BUSY
backend quiet
  http-request replace-path /quiet(/.*) \1
  server s1 $QUIET
CONF
}

caddy_conf() { # $1 port, $2 dir
  cat <<CONF
{
  admin off
  auto_https off
  storage file_system $2/caddy
}
http://127.0.0.1:$1 {
  bind 127.0.0.1
  handle_path /busy/* {
    reverse_proxy $BUSY
  }
  handle_path /quiet/* {
    reverse_proxy $QUIET
  }
}
CONF
}

start() { # $1 kind, $2 port, $3 config file
  case $1 in
    nginx) nginx -p "$(dirname "$3")" -c "$3" -e "$(dirname "$3")/error.log" 2>/dev/null & pids+=($!) ;;
    haproxy) haproxy -db -f "$3" >/dev/null 2>&1 & pids+=($!) ;;
    caddy) HOME=$(dirname "$3") caddy run --config "$3" --adapter caddyfile >/dev/null 2>&1 & pids+=($!) ;;
  esac
  wait_port "$2"
}

show() { # $1 title, $2 lang, $3 config file, $4 port, $5 extra probe flags
  printf '### %s\n\n```%s\n%s\n```\n\n' "$1" "$2" "$(sed "s#$D/[a-z0-9-]*#/tmp/probe#g" "$3")"
  for args in "--quick --public $5 ws://127.0.0.1:$4/busy/ws http://127.0.0.1:$4/busy/sse" \
              "--idle-for 6s --public $5 ws://127.0.0.1:$4/quiet/ws http://127.0.0.1:$4/quiet/sse"; do
    printf '```console\n$ rtcheck probe %s\n' "$(echo $args)"
    # shellcheck disable=SC2086
    NO_COLOR=1 COLUMNS=80 "$RT" probe $args || true
    printf '```\n\n'
  done
}

run() { # $1 kind, $2 title, $3 lang, $4 port, $5 config text, $6 extra probe flags
  mkdir -p "$D/$4"; f="$D/$4/conf"; printf '%s\n' "$5" > "$f"
  start "$1" "$4" "$f"
  show "$2" "$3" "$f" "$4" "${6:-}"
}

run nginx "nginx: mistaken (no Upgrade headers, buffering on, proxy_read_timeout 3s)" nginx 18081 "$(nginx_conf 18081 "$D/18081" "$NGINX_MISTAKEN")"
run nginx "nginx: correct" nginx 18082 "$(nginx_conf 18082 "$D/18082" "$NGINX_CORRECT")"
run haproxy "HAProxy: mistaken (timeout server 3s, no timeout tunnel)" haproxy 18083 "$(haproxy_conf 18083 '  timeout server 3s')" "--proxy haproxy"
run haproxy "HAProxy: correct" haproxy 18084 "$(haproxy_conf 18084 '  timeout server 30s
  timeout tunnel 1h')" "--proxy haproxy"
run caddy "Caddy: default reverse_proxy" caddy 18085 "$(caddy_conf 18085 "$D/18085")"
