#!/usr/bin/env bash
# Autobahn|Testsuite 0.8.2 fuzzingclient against `rtcheck serve` (/echo and /ws), cases
# 1-7 and 10, on loopback. Not part of CI. Needs Python 2.7 (PYTHON2, default the pyenv
# one) and PyPI; installs the suite into a temp dir that is removed afterwards.
# Usage: scripts/autobahn.sh [REPORT_DIR]     (prints a markdown table; exit 1 if /echo FAILED)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON2=${PYTHON2:-/root/.pyenv/versions/2.7.18/bin/python}
REPORTS=$(realpath -m "${1:-target/autobahn}")
WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# The versions pip resolved for autobahntestsuite 0.8.2 on Python 2.7, pinned.
"$PYTHON2" -m pip install -q --disable-pip-version-check --no-cache-dir --target "$WORK/site" \
  autobahntestsuite==0.8.2 autobahn==0.10.9 Twisted==20.3.0 txaio==2.1.0 zope.interface==5.5.2 \
  pyopenssl==21.0.0 cryptography==3.3.2 service-identity==21.1.0 klein==20.6.0 \
  Werkzeug==1.0.1 jinja2==2.11.3 markupsafe==1.1.1 wsaccel==0.6.6 ujson==2.0.3 \
  attrs==21.4.0 Automat==22.10.0 hyperlink==21.0.0 incremental==22.10.0 six==1.17.0
# --target does not process the namespace .pth of zope.interface.
touch "$WORK/site/zope/__init__.py"

cargo build --locked -q
BIN=target/debug/rtcheck
"$BIN" serve --listen 127.0.0.1:0 --addr-file "$WORK/addr" --wait-start --exit-with-parent 2>"$WORK/serve.log" &
SERVER_PID=$!
for _ in $(seq 200); do [ -s "$WORK/addr" ] && break; sleep 0.05; done
ADDR=$(head -1 "$WORK/addr")
rm -rf "$REPORTS"
cat >"$WORK/spec.json" <<SPEC
{"outdir": "$REPORTS",
 "servers": [{"agent": "rtcheck-echo", "url": "ws://$ADDR/echo"},
             {"agent": "rtcheck-ws", "url": "ws://$ADDR/ws"}],
 "cases": ["1.*", "2.*", "3.*", "4.*", "5.*", "6.*", "7.*", "10.*"],
 "exclude-cases": [], "exclude-agent-cases": {}}
SPEC
echo "running Autobahn fuzzingclient against ws://$ADDR/echo and /ws (a few minutes)" >&2
PYTHONPATH="$WORK/site" timeout 1800 "$PYTHON2" "$WORK/site/bin/wstest" -m fuzzingclient \
  -s "$WORK/spec.json" >"$WORK/wstest.log" 2>&1

python3 - "$REPORTS/index.json" <<'PY'
import collections, json, sys
idx = json.load(open(sys.argv[1]))
kinds = ["OK", "NON-STRICT", "INFORMATIONAL", "FAILED"]
failed_echo = 0
for agent in sorted(idx):
    cases = idx[agent]
    by = collections.defaultdict(collections.Counter)
    for cid, v in cases.items():
        by[int(cid.split(".")[0])][v["behavior"]] += 1
        by["all"][v["behavior"]] += 1
    print(f"\n{agent} ({len(cases)} cases)\n")
    print("| section | " + " | ".join(kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for s in sorted(k for k in by if k != "all") + ["all"]:
        print(f"| {s} | " + " | ".join(str(by[s][k]) for k in kinds) + " |")
    bad = sorted((c for c, v in cases.items() if v["behavior"] not in ("OK", "INFORMATIONAL")),
                 key=lambda c: [int(x) for x in c.split(".")])
    print("\nnot OK: " + (", ".join(f"{c} {cases[c]['behavior']}" for c in bad) or "none"))
    if agent == "rtcheck-echo":
        failed_echo = by["all"]["FAILED"]
sys.exit(1 if failed_echo else 0)
PY
