#!/usr/bin/env bash
# rtcheck load against wrk (Debian package wrk) on the same trivial endpoint of
# `rtcheck serve`, alternating, 3 rounds of 5 s each, both tools' CPU in percent of one core.
# Run from the repository root after `cargo build --release`, on a quiet machine.
set -eu
command -v wrk >/dev/null || { echo "wrk not found: install the Debian package wrk (apt-get install wrk)" >&2; exit 2; }
R=${R:-target/release/rtcheck}
$R serve --listen 127.0.0.1:0 --addr-file ${TMPDIR:-/tmp}/rtcheck-cmp.addr 2>/dev/null & P=$!
trap 'kill $P' EXIT
sleep 0.5; U="http://$(head -1 ${TMPDIR:-/tmp}/rtcheck-cmp.addr)/healthz"
for i in 1 2 3; do
  /usr/bin/time -f "%U %S" -o ${TMPDIR:-/tmp}/rtcheck-cmp.wtime wrk -t2 -c64 -d5s "$U" > ${TMPDIR:-/tmp}/rtcheck-cmp.wrk
  w=$(awk '/Requests\/sec/ {print $2}' ${TMPDIR:-/tmp}/rtcheck-cmp.wrk); wc=$(awk '{print ($1+$2)/5*100}' ${TMPDIR:-/tmp}/rtcheck-cmp.wtime)
  /usr/bin/time -f "%U %S" -o ${TMPDIR:-/tmp}/rtcheck-cmp.rtime $R load "$U" --concurrency 64 --step 5s --threads 2 --format json -o ${TMPDIR:-/tmp}/rtcheck-cmp.json || true
  r=$(python3 -c "import json;print(json.load(open('${TMPDIR:-/tmp}/rtcheck-cmp.json'))['levels'][0]['throughput_rps'])")
  rc=$(python3 -c "import json;print(json.load(open('${TMPDIR:-/tmp}/rtcheck-cmp.json'))['levels'][0]['loadgen_cpu_pct'])")
  echo "round $i: wrk $w req/s (cpu ${wc}%)  rtcheck $r req/s (cpu ${rc}%)  ratio $(python3 -c "print(round($r/$w,2))")"
done
