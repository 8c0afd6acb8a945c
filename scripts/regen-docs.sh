#!/usr/bin/env bash
# Regenerate the output blocks in docs/*.md and README.md from the current binary.
# A block is a marker line followed by a block fenced with four backticks (the output may
# hold ``` blocks itself, e.g. markdown), which is replaced:
#   <!-- regen: rtcheck audit --procfs tests/fixtures/stock-distro/proc ... -->
#   ````text
#   ````
# Commands run from the repository root with NO_COLOR=1 and no terminal (80 columns), and
# a non-zero exit code is written under the output. Usage: scripts/regen-docs.sh [FILE...]
set -euo pipefail
cd "$(dirname "$0")/.."
# RTCHECK_DOCS_BIN=target/debug/rtcheck skips the release build.
bin="${RTCHECK_DOCS_BIN:-}"
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin="$PWD/target/release/rtcheck"
fi
bin="$(realpath "$bin")"
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(README.md docs/*.md)

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
