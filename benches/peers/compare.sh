#!/usr/bin/env bash
# The honest peer comparison in one command: rtcheck's own server (scenario A), the raw-TCP
# floor (F) and the Go + gorilla/websocket peer (P, benches/peers/go-gorilla), each measured
# by the same load generator (`rtcheck bench fanout`, release build), in the same session,
# in rotating order, N runs. Prints every run with its validity, then the ratios A/P and
# A/F (p50, p99, p99.9) with their spread over the runs where all three were valid.
# Loopback only; every process it starts and its temp dir are removed on exit and Ctrl-C.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: benches/peers/compare.sh [--runs N] [--connections N] [--rounds N] [--rate R]
                                [--size B] [--out DIR] [--rtcheck PATH]

  --runs N          runs of F, A and the peer each, in rotating order (default 5)
  --connections N   clients per measurement (default 2000; 10000 is the seed's load)
  --rounds N        messages per client (default 100)
  --rate R          rounds per second (default 5)
  --size B          payload bytes (default 1024)
  --out DIR         keep every run's JSON report and the summary in DIR
  --rtcheck PATH    use this rtcheck binary instead of `cargo build --release`

Needs the Debian packages golang-go and golang-github-gorilla-websocket-dev, and python3.
Ratios below 1 mean rtcheck's server (A) had the lower latency. Run it on a quiet machine:
before every measurement the host's CPU use is sampled for 3 s while none of this script's
processes run (the load average would count the previous measurement), printed and judged.
EOF
}

die() { echo "compare.sh: $*" >&2; exit 2; }

RUNS=5 CONNS=2000 ROUNDS=100 RATE=5 SIZE=1024 OUT="" RTCHECK=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=${2:-}; shift 2 || die "--runs needs a value" ;;
    --connections) CONNS=${2:-}; shift 2 || die "--connections needs a value" ;;
    --rounds) ROUNDS=${2:-}; shift 2 || die "--rounds needs a value" ;;
    --rate) RATE=${2:-}; shift 2 || die "--rate needs a value" ;;
    --size) SIZE=${2:-}; shift 2 || die "--size needs a value" ;;
    --out) OUT=${2:-}; shift 2 || die "--out needs a value" ;;
    --rtcheck) RTCHECK=${2:-}; shift 2 || die "--rtcheck needs a value" ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument \`$1\` (see --help)" ;;
  esac
done
posint() { [[ $2 =~ ^[1-9][0-9]{0,6}$ ]] || die "$1 $2: a positive integer"; }
posint --runs "$RUNS"; posint --connections "$CONNS"; posint --rounds "$ROUNDS"
posint --size "$SIZE"
awk -v r="$RATE" 'BEGIN { exit !(r ~ /^[0-9]+([.][0-9]+)?$/ && r > 0 && r <= 1000) }' ||
  die "--rate $RATE: a number in (0, 1000]"
[ "$RUNS" -le 50 ] || die "--runs $RUNS: at most 50"

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PEER_SRC="$ROOT/benches/peers/go-gorilla"
GORILLA=/usr/share/gocode/src/github.com/gorilla/websocket
PKGS="golang-go golang-github-gorilla-websocket-dev"
command -v go >/dev/null || die "go not found: apt-get install -y $PKGS"
[ -f "$GORILLA/conn.go" ] || die "$GORILLA missing: apt-get install -y $PKGS"
command -v python3 >/dev/null || die "python3 not found: apt-get install -y python3"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/rtcheck-peers.XXXXXX")
PEER_PID="" BENCH_PID=""

stop_pid() { # pid signal: signal it, wait up to 5 s, then SIGKILL
  local pid=$1 sig=$2 _
  kill -0 "$pid" 2>/dev/null || return 0
  kill "-$sig" "$pid" 2>/dev/null || true
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  [ -n "$BENCH_PID" ] && stop_pid "$BENCH_PID" TERM
  [ -n "$PEER_PID" ] && stop_pid "$PEER_PID" TERM
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "compare.sh: interrupted; stopping what it started" >&2; exit 130' INT TERM

# --- build -------------------------------------------------------------------------------
echo "building the Go + gorilla peer ($PEER_SRC)" >&2
(cd "$PEER_SRC" && GOPROXY=off GOFLAGS=-mod=mod GOSUMDB=off GO111MODULE=on \
  GOCACHE="${GOCACHE:-$TMP/gocache}" GOPATH="$TMP/gopath" \
  go build -o "$TMP/go-gorilla-peer" .) || die "go build failed (needs $PKGS)"
if [ -z "$RTCHECK" ]; then
  echo "building rtcheck (cargo build --release)" >&2
  (cd "$ROOT" && cargo build --release --locked -q) || die "cargo build --release failed"
  RTCHECK="${CARGO_TARGET_DIR:-$ROOT/target}/release/rtcheck"
fi
[ -x "$RTCHECK" ] || die "$RTCHECK: not an executable"

# --- one measurement ---------------------------------------------------------------------
COMMON=(--connections "$CONNS" --rounds "$ROUNDS" --rate "$RATE" --size "$SIZE" --format json)

bench() { # out-json args...: run bench fanout in the background so traps fire at once
  local out=$1 rc=0
  shift
  "$RTCHECK" bench fanout "${COMMON[@]}" --output "$out" "$@" 2>"$out.stderr" &
  BENCH_PID=$!
  wait "$BENCH_PID" || rc=$?
  BENCH_PID=""
  echo "$rc" >"$out.rc"
}

measure_peer() { # out-json
  local out=$1 addr_file="$TMP/peer.addr" _
  rm -f "$addr_file"
  # Bounded by itself too: the schedule plus generous connect and drain time.
  local bound
  bound=$(awk -v n="$ROUNDS" -v r="$RATE" 'BEGIN { printf "%d", n / r + 600 }')
  "$TMP/go-gorilla-peer" -listen 127.0.0.1:0 -addr-file "$addr_file" -rate "$RATE" \
    -size "$SIZE" -rounds "$ROUNDS" -max-time "${bound}s" -exit-with-parent \
    2>"$out.peer.log" </dev/null &
  PEER_PID=$!
  for _ in $(seq 150); do
    [ -s "$addr_file" ] && break
    kill -0 "$PEER_PID" 2>/dev/null || break
    sleep 0.1
  done
  if [ ! -s "$addr_file" ]; then
    echo "peer did not listen within 15 s: $(tail -n 3 "$out.peer.log")" >"$out.stderr"
    echo 2 >"$out.rc"
  else
    bench "$out" --server "ws://$(cat "$addr_file")/ws"
  fi
  stop_pid "$PEER_PID" TERM
  PEER_PID=""
}

# Cores busy on the host over 3 s (from /proc/stat), while nothing of ours runs.
host_busy() {
  local a b
  read -r -a a < <(grep '^cpu ' /proc/stat)
  sleep 3
  read -r -a b < <(grep '^cpu ' /proc/stat)
  python3 -c '
import os, sys
a, b = [list(map(int, x.split())) for x in sys.argv[1:3]]
d = [y - x for x, y in zip(a, b)]
total, idle = sum(d[:8]), d[3] + d[4]
print(f"{(total - idle) / max(total, 1) * os.cpu_count():.2f}")' "${a[*]:1}" "${b[*]:1}"
}

ORDERS=("F A P" "A P F" "P F A")
echo "rtcheck: $RTCHECK; $CONNS connections, $ROUNDS rounds x $SIZE B at $RATE/s;" \
  "$RUNS run(s) of F, A, P in rotating order" >&2
START=$(date +%s)
for run in $(seq "$RUNS"); do
  order=${ORDERS[$(( (run - 1) % 3 ))]}
  for who in $order; do
    out="$TMP/run$run-$who.json"
    host_busy >"$out.load"
    echo "run $run/$RUNS: $who (host busy $(cat "$out.load") cores)" >&2
    case $who in
      F) bench "$out" --scenario F ;;
      A) bench "$out" --scenario A --no-floor ;;
      P) measure_peer "$out" ;;
    esac
  done
done
ELAPSED=$(( $(date +%s) - START ))

# --- summary -----------------------------------------------------------------------------
python3 - "$TMP" "$RUNS" "$CONNS" "$ELAPSED" >"$TMP/summary.txt" <<'PY'
import json, os, statistics, sys

tmp, runs, conns, elapsed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
QUIET_LOAD = 0.25  # cores busy on the host before a measurement

def load(run, who):
    base = os.path.join(tmp, f"run{run}-{who}.json")
    r = {"load": float(open(base + ".load").read() or "nan"),
         "rc": int(open(base + ".rc").read().strip() or "2"), "valid": False}
    try:
        s = json.load(open(base))["scenarios"][0]
    except (OSError, ValueError, KeyError, IndexError):
        err = open(base + ".stderr").read().strip().splitlines()
        r["why"] = f"error (exit {r['rc']}): " + (err[-1] if err else "no report")
        return r
    r.update(valid=bool(s.get("valid")), p50=s.get("p50_ms"), p99=s.get("p99_ms"),
             p999=s.get("p999_ms"), cpu=s.get("server_cpu_s"), rss=s.get("server_rss_mb"),
             acc=s.get("accounting", {}))
    bad = [c["name"] for c in s.get("checks", []) if c.get("status") == "fail"]
    r["why"] = "valid" if r["valid"] else "INVALID: " + ", ".join(bad or ["?"])
    return r

def f(x, w=7):
    return f"{x:{w}.1f}" if isinstance(x, (int, float)) else f"{'-':>{w}}"

def g(x):
    return f"{x:9.2f}" if isinstance(x, float) else f"{'-':>9}"

def ratio(a, b):
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > 0 else None

rows = {run: {w: load(run, w) for w in "FAP"} for run in range(1, runs + 1)}
print(f"Peer comparison: {conns} connections, {runs} run(s), {elapsed} s in all")
print("A = rtcheck serve (scenario A), P = Go 1.19 + gorilla/websocket peer, F = raw-TCP floor")
print()
print("run  F p99.9  A p99.9  P p99.9   A/P p99.9  A/F p99.9  max busy  all valid")
for run, r in rows.items():
    ok = all(r[w]["valid"] for w in "FAP")
    ap, af = ratio(r["A"].get("p999"), r["P"].get("p999")), ratio(r["A"].get("p999"), r["F"].get("p999"))
    mload = max(r[w]["load"] for w in "FAP")
    print(f"{run:3}  {f(r['F'].get('p999'))}  {f(r['A'].get('p999'))}  {f(r['P'].get('p999'))}"
          f"   {g(ap) if ok else '        -'}  {g(af) if ok else '        -'}"
          f"  {mload:8.2f}  {'yes' if ok else 'no'}")
for run, r in rows.items():
    for w in "FAP":
        if not r[w]["valid"]:
            print(f"  run {run} {w}: {r[w]['why']}")
print()
good = [r for r in rows.values() if all(r[w]["valid"] for w in "FAP")]
print(f"Ratios over the {len(good)} of {runs} runs where F, A and P were all valid")
print("(min / median / max; below 1: A had the lower latency):")
def spread(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "no valid runs"
    return f"{min(vals):.2f} / {statistics.median(vals):.2f} / {max(vals):.2f}"
for q, label in (("p50", "p50"), ("p99", "p99"), ("p999", "p99.9")):
    ap = spread(ratio(r["A"].get(q), r["P"].get(q)) for r in good)
    af = spread(ratio(r["A"].get(q), r["F"].get(q)) for r in good)
    print(f"  {label:6} A/P {ap:22}  A/F {af}")
print()
print("Absolute p99.9 ms (min / median / max, valid runs) and server CPU s (median):")
for w, name in (("F", "F floor"), ("A", "A rtcheck"), ("P", "P go-gorilla")):
    vals = [r[w]["p999"] for r in good]
    cpus = [r[w]["cpu"] for r in good if isinstance(r[w].get("cpu"), (int, float))]
    cpu = f"{statistics.median(cpus):.2f}" if cpus else "-"
    print(f"  {name:13} {spread(vals):24}  CPU {cpu}")
loads = [r[w]["load"] for r in rows.values() for w in "FAP"]
print()
if max(loads) > QUIET_LOAD:
    print(f"Machine busy: up to {max(loads):.2f} cores busy before a measurement"
          f"\n(quiet: <= {QUIET_LOAD}); these figures are not publishable.")
else:
    print(f"Machine quiet: <= {max(loads):.2f} cores busy before every measurement.")
if len(good) < runs:
    print(f"{runs - len(good)} run(s) left out of the ratios (see the reasons above).")
PY
cat "$TMP/summary.txt"
if [ -n "$OUT" ]; then
  mkdir -p "$OUT" || die "$OUT: cannot create"
  cp "$TMP"/run*.json "$TMP"/run*.log "$TMP"/run*.stderr "$TMP/summary.txt" "$OUT"/ \
    2>/dev/null || true
  echo "reports and summary kept in $OUT" >&2
fi
# Exit 1 when no run had F, A and P all valid: there is no ratio to report.
grep -q "^Ratios over the 0 of" "$TMP/summary.txt" && exit 1
exit 0
