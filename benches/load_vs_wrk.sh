#!/usr/bin/env bash
# rtcheck load against wrk (Debian package wrk) on the same trivial endpoint of one
# `rtcheck serve`, alternating in one run (pair i: wrk then rtcheck, the next pair
# rtcheck then wrk, so drift in the host's load favours neither). Prints per run req/s,
# CPU (percent of one core) and CPU per request of the load generator, the target's CPU
# per request, the 1-minute load average before the pair, the ratio per pair, and the
# median ratio. Issue 14's target: rtcheck load >= 0.8x wrk's req/s.
#
#   cargo build --release && benches/load_vs_wrk.sh [--pairs N] [--secs S] [--conns C] [--threads T] [--engine wire|hyper]
#
# Needs wrk and python3. Everything runs on 127.0.0.1 and stops by itself; the temp dir and
# the server are removed on exit, also on Ctrl-C.
set -eu
PAIRS=3 SECS=5 CONNS=64 THREADS=2 ENGINE=wire
while [ $# -gt 0 ]; do
  case "$1" in
    --pairs) PAIRS=$2; shift 2 ;;
    --secs) SECS=$2; shift 2 ;;
    --conns) CONNS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --engine) ENGINE=$2; shift 2 ;;
    *) echo "usage: $0 [--pairs N] [--secs S] [--conns C] [--threads T] [--engine wire|hyper]" >&2; exit 2 ;;
  esac
done
R=${R:-target/release/rtcheck}
WRK=${WRK:-wrk}
command -v "$WRK" >/dev/null || { echo "wrk not found: install the Debian package wrk (apt-get install wrk)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 not found: install the Debian package python3" >&2; exit 2; }
[ -x "$R" ] || { echo "$R not found: run cargo build --release first" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found: install the Debian package time" >&2; exit 2; }

D=$(mktemp -d "${TMPDIR:-/tmp}/rtcheck-vs-wrk.XXXXXX")
P=
cleanup() { [ -n "$P" ] && kill "$P" 2>/dev/null && wait "$P" 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

"$R" serve --listen 127.0.0.1:0 --addr-file "$D/addr" >"$D/serve.log" 2>&1 & P=$!
for _ in $(seq 100); do [ -s "$D/addr" ] && break; sleep 0.1; done
[ -s "$D/addr" ] || { echo "rtcheck serve did not start: $(cat "$D/serve.log")" >&2; exit 1; }
U="http://$(head -1 "$D/addr")/healthz"

# CPU seconds (user + system) of the server so far, from /proc (clock ticks).
srv_cpu() { awk -v t="$(getconf CLK_TCK)" '{ print ($14 + $15) / t }' "/proc/$P/stat"; }

run_wrk() {
  local s0 s1
  s0=$(srv_cpu)
  /usr/bin/time -f "%U %S" -o "$D/wtime" "$WRK" -t"$THREADS" -c"$CONNS" -d"${SECS}s" "$U" >"$D/wrk.out"
  s1=$(srv_cpu)
  python3 - "$D/wrk.out" "$D/wtime" "$SECS" "$s0" "$s1" <<'EOF'
import re, sys
out, t, secs, s0, s1 = open(sys.argv[1]).read(), open(sys.argv[2]).read().split(), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
n = int(re.search(r"(\d+) requests in", out).group(1))
cpu = float(t[-2]) + float(t[-1])
print(f"{rps:.0f} {cpu / secs * 100:.0f} {cpu / n * 1e6:.2f} {(s1 - s0) / n * 1e6:.2f} {n}")
EOF
}

run_rtcheck() {
  local s0 s1
  s0=$(srv_cpu)
  rm -f "$D/load.json"
  "$R" load "$U" --concurrency "$CONNS" --step "${SECS}s" --threads "$THREADS" --engine "$ENGINE" --format json -o "$D/load.json" >/dev/null 2>"$D/load.err" || true
  s1=$(srv_cpu)
  [ -s "$D/load.json" ] || { echo "0 0 0 0 0 FAILED: $(head -1 "$D/load.err")"; return; }
  python3 - "$D/load.json" "$s0" "$s1" <<'EOF'
import json, sys
l = json.load(open(sys.argv[1]))["levels"][0]
s0, s1 = float(sys.argv[2]), float(sys.argv[3])
n = l["requests"]
cpu = l["loadgen_cpu_pct"] / 100 * l["active_s"]
valid = "valid" if l["valid"] else "INVALID: " + "; ".join(l["invalid"])
print(f"{l['throughput_rps']:.0f} {l['loadgen_cpu_pct']:.0f} {cpu / n * 1e6:.2f} {(s1 - s0) / n * 1e6:.2f} {n} {valid}")
EOF
}

echo "target $U; wrk -t$THREADS -c$CONNS -d${SECS}s vs rtcheck load --concurrency $CONNS --threads $THREADS --engine $ENGINE --step ${SECS}s"
echo "cpu: percent of one core; us/req: the tool's CPU per request; srv us/req: the target's"
printf '%-4s %-6s %-8s %9s %5s %7s %11s  %s\n' pair load1 tool req/s cpu us/req "srv us/req" note
ratios=
for i in $(seq "$PAIRS"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  if [ $((i % 2)) -eq 1 ]; then order="wrk rtcheck"; else order="rtcheck wrk"; fi
  for tool in $order; do
    if [ "$tool" = wrk ]; then
      read -r wr cpu us srv n <<<"$(run_wrk)"; note=
    else
      read -r rr cpu us srv n note <<<"$(run_rtcheck)"
    fi
    [ "$tool" = wrk ] && rps=$wr || rps=$rr
    printf '%-4s %-6s %-8s %9s %5s %7s %11s  %s\n' "$i" "$load" "$tool" "$rps" "$cpu%" "$us" "$srv" "$note"
  done
  ratio=$(python3 -c "print(f'{$rr / max($wr, 1):.2f}')")
  ratios="$ratios $ratio"
  echo "pair $i: rtcheck / wrk = $ratio"
done
python3 - $ratios <<'EOF'
import statistics, sys
r = sorted(float(x) for x in sys.argv[1:])
print(f"ratio rtcheck / wrk over {len(r)} pairs: min {r[0]:.2f} median {statistics.median(r):.2f} max {r[-1]:.2f} (target >= 0.80)")
EOF
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
