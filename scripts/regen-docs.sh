#!/usr/bin/env bash
# Regenerate the output blocks in docs/*.md and README.md from the current binary.
# A block is a marker line followed by a block fenced with four backticks (the output may
# hold ``` blocks itself, e.g. markdown), which is replaced:
#   <!-- regen: rtcheck audit --procfs tests/fixtures/stock-distro/proc ... -->
#   ````text
#   ````
# Commands run from the repository root with NO_COLOR=1 and no terminal (80 columns), and
# a non-zero exit code is written under the output. A command may name $SERVE: the
# HOST:PORT of one `rtcheck serve` this script starts on loopback (5 msg/s, ping 2s) for
# the pages whose commands need a live server (probe, load, budget --live), and stops;
# $WS_HUB, $EXPRESS and $NGINX_EXPRESS: servers rtcheck did not write (below).
# Usage: scripts/regen-docs.sh [FILE...]
set -euo pipefail
cd "$(dirname "$0")/.."
# nginx lives in /usr/sbin, outside a normal user's PATH on Debian.
PATH="$PATH:/usr/sbin:/sbin"
# The fixtures' addresses are this script's own: none is taken from the caller.
unset SERVE SERVE_SHORT WS_HUB EXPRESS NGINX_EXPRESS
# RTCHECK_DOCS_BIN=target/debug/rtcheck skips the release build.
bin="${RTCHECK_DOCS_BIN:-}"
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin="$PWD/target/release/rtcheck"
fi
bin="$(realpath "$bin")"

# The live servers the $SERVE markers point at; stopped on exit, also on failure.
serve_dir="$(mktemp -d)"
serve_pids=()
foreign_pids=()
trap 'kill ${serve_pids[@]+"${serve_pids[@]}"} ${foreign_pids[@]+"${foreign_pids[@]}"} 2>/dev/null; wait 2>/dev/null; rm -rf "$serve_dir"' EXIT
start_serve() { # VAR SERVE-FLAGS...
  local var="$1" addr="$serve_dir/$1.addr" pid
  shift
  "$bin" serve --listen 127.0.0.1:0 --addr-file "$addr" "$@" --exit-with-parent >/dev/null 2>&1 &
  pid=$!
  serve_pids+=("$pid")
  for _ in $(seq 200); do
    [ -s "$addr" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  [ -s "$addr" ] || { echo "regen-docs: rtcheck serve ($var) did not start" >&2; exit 1; }
  export "$var=$(head -n 1 "$addr")"
}
start_serve SERVE --rate 5 --size 256 --ping 2s
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(README.md docs/*.md)

# Servers rtcheck did not write, for the pages that show it against one (bench.md,
# delivery.md): $WS_HUB is node ws (the ws README's broadcast), $EXPRESS express SSE, both
# fixtures of tests/fixtures/foreign/ on loopback, started only when a page names them.
# A free port below the kernel's ephemeral range: no bind(0) elsewhere takes it meanwhile.
pick_port() {
  python3 -c '
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(500):
    p = random.randint(10000, max(10001, low - 1))
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        print(p)
        break
    except OSError:
        pass
    finally:
        s.close()
'
}
start_fixture() { # VAR SCRIPT MODULE PACKAGE
  local var="$1" script="$2" module="$3" package="$4" port pid log
  [ -x /usr/bin/node ] || { echo "regen-docs: /usr/bin/node missing (Debian package nodejs)" >&2; exit 1; }
  [ -f "/usr/share/nodejs/$module/package.json" ] ||
    { echo "regen-docs: node module $module missing (Debian package $package)" >&2; exit 1; }
  port="$(pick_port)"
  log="$serve_dir/$script.log"
  PORT="$port" NODE_PATH=/usr/share/nodejs /usr/bin/node "tests/fixtures/foreign/$script" >"$log" 2>&1 &
  pid=$!
  foreign_pids+=("$pid")
  for _ in $(seq 200); do
    kill -0 "$pid" 2>/dev/null || { echo "regen-docs: $script exited: $(tail -n 3 "$log")" >&2; exit 1; }
    grep -q "listening on 127.0.0.1:$port" "$log" 2>/dev/null && break
    sleep 0.05
  done
  grep -q "listening on 127.0.0.1:$port" "$log" ||
    { echo "regen-docs: $script did not start on 127.0.0.1:$port: $(tail -n 3 "$log")" >&2; exit 1; }
  export "$var=127.0.0.1:$port"
}
if grep -qsE 'regen: .*\$\{?WS_HUB\b' "${files[@]}"; then start_fixture WS_HUB ws_broadcast.js ws node-ws; fi
if grep -qsE 'regen: .*\$\{?EXPRESS\b' "${files[@]}"; then start_fixture EXPRESS express_sse.js express node-express; fi

# $NGINX_EXPRESS: nginx's minimal reverse proxy (`proxy_pass` alone, buffering on, as its
# docs write it) in front of $EXPRESS (probe.md).
start_nginx() {
  local dir="$serve_dir/nginx" port pid
  command -v nginx >/dev/null || { echo "regen-docs: nginx missing (Debian package nginx)" >&2; exit 1; }
  port="$(pick_port)"
  mkdir -p "$dir"
  cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
error_log $dir/error.log;
pid $dir/nginx.pid;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $dir/body; proxy_temp_path $dir/proxy; fastcgi_temp_path $dir/fcgi;
  uwsgi_temp_path $dir/uwsgi; scgi_temp_path $dir/scgi;
  server {
    listen 127.0.0.1:$port;
    location / { proxy_pass http://$EXPRESS; }
  }
}
CONF
  nginx -c "$dir/nginx.conf" -p "$dir" -g 'daemon off;' >"$dir/out.log" 2>&1 &
  pid=$!
  foreign_pids+=("$pid")
  for _ in $(seq 200); do
    kill -0 "$pid" 2>/dev/null || { echo "regen-docs: nginx exited: $(tail -n 3 "$dir/error.log" "$dir/out.log")" >&2; exit 1; }
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.05
  done
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null ||
    { echo "regen-docs: nginx did not start on 127.0.0.1:$port" >&2; exit 1; }
  export NGINX_EXPRESS="127.0.0.1:$port"
}
# $SERVE_SHORT: SSE streams closed after 3 s, for the browser's reconnect (probe.md).
if grep -qsE 'regen: .*\$\{?SERVE_SHORT\b' "${files[@]}"; then
  start_serve SERVE_SHORT --rate 10 --size 64 --sse-max-age 3s
fi
if grep -qsE 'regen: .*\$\{?NGINX_EXPRESS\b' "${files[@]}"; then
  [ -n "${EXPRESS:-}" ] || start_fixture EXPRESS express_sse.js express node-express
  start_nginx
fi

regen() {
  local f="$1" tmp pending="" in_block=0 line rc
  tmp="$(mktemp)"
  while IFS= read -r line || [ -n "$line" ]; do
    if [ "$in_block" = 1 ]; then
      if [ "$line" = '````' ]; then in_block=0; printf '````\n' >>"$tmp"; fi
      continue
    fi
    if [ -n "$pending" ] && [[ "$line" == '````'* ]]; then
      in_block=1
      printf '````text\n$ %s\n' "$pending" >>"$tmp"
      rc=0
      # The marker's command, run with this build's binary (word-split like a shell line).
      NO_COLOR=1 eval "\"$bin\" ${pending#rtcheck }" </dev/null >>"$tmp" 2>&1 || rc=$?
      [ "$rc" = 0 ] || printf '[exit %s]\n' "$rc" >>"$tmp"
      pending=""
      continue
    fi
    printf '%s\n' "$line" >>"$tmp"
    if [[ "$line" =~ ^\<\!--\ regen:\ (.*)\ --\>$ ]]; then pending="${BASH_REMATCH[1]}"; fi
  done <"$f"
  mv "$tmp" "$f"
  echo "regenerated $f"
}

for f in "${files[@]}"; do
  grep -q '^<!-- regen: ' "$f" && regen "$f"
done
exit 0
