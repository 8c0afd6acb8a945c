#!/usr/bin/env bash
# The cost table of one integration-test binary (issue 36): runs its tests one at a
# time and prints them slowest first, so the heaviest are known before cutting.
#
#   scripts/test-costs.sh external          # every test of tests/external
#   scripts/test-costs.sh live 20 serve_    # the top 20 of live's serve_* modules
#
# One test at a time (--test-threads 1), so each time is that test alone; a service
# shared by several tests is charged to the first. The times come from libtest's
# --report-time (unstable on stable Rust: RUSTC_BOOTSTRAP is set for the test binary
# only, not for the build). On a shared machine the absolute numbers are rough; the
# order is what matters. The raw per-test lines are kept in target/test-costs-<bin>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: scripts/test-costs.sh <cli|live|external|pty|...> [top-N] [filter]}
top=${2:-20}
filter=${3:-}
exe=$(cargo test --locked --test "$bin" --no-run --message-format=json 2>/dev/null |
  grep -o "\"executable\":\"[^\"]*/deps/$bin-[0-9a-f]*\"" | tail -1 | cut -d'"' -f4)
[ -x "$exe" ] || { echo "scripts/test-costs.sh: no test binary '$bin'" >&2; exit 2; }
raw=target/test-costs-$bin.txt
start=$(date +%s)
# A failing test still has a time: the run goes on, its status is in the table.
RUSTC_BOOTSTRAP=1 "$exe" -Z unstable-options --report-time --test-threads 1 \
  ${filter:+"$filter"} >"$raw" 2>&1 || true
wall=$(($(date +%s) - start))
# "test mod::name ... ok <12.345s>" -> "12.345  ok  mod::name"
rows=$(sed -n 's/^test \(.*\) \.\.\. \([a-zA-Z]*\) <\([0-9.]*\)s>$/\3 \2 \1/p' "$raw" |
  sort -rn)
n=$(printf '%s\n' "$rows" | grep -c . || true)
sum=$(printf '%s\n' "$rows" | awk '{s += $1} END {printf "%.0f", s}')
echo "tests/$bin: $n tests, one at a time: ${wall} s wall, ${sum} s in tests"
echo "top $top by time (seconds, status, test):"
printf '%s\n' "$rows" | head -n "$top" | awk '{printf "%8.1f  %-6s %s\n", $1, $2, $3}'
