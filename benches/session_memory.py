#!/usr/bin/env python3
# Session memory at scale (docs/delivery.md): against `rtcheck serve --delivery session-ack
# --wait-start ...` on loopback, issue N sessions (/poll?session=), start publishing, wait
# AWAY seconds, print session bytes and RSS, then wait for the TTL and print them again.
# Usage: benches/session_memory.py HOST PORT N AWAY
import http.client, json, sys, time
host, port, n, away = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
if not (host.startswith("127.") or host in ("::1", "localhost")):
    sys.exit(f"{host}: loopback only")
def stats():
    c = http.client.HTTPConnection(host, port, timeout=10); c.request("GET", "/control/stats")
    return json.loads(c.getresponse().read())
base = stats()
c = http.client.HTTPConnection(host, port, timeout=10)
t0 = time.time()
for i in range(n):
    c.request("GET", "/poll?session=&since=0"); r = c.getresponse(); r.read()
made = time.time() - t0
# Publishing starts now (serve --wait-start): every session is away for exactly `away`.
c.request("POST", "/control/start"); c.getresponse().read()
time.sleep(away)
s = stats()
print(json.dumps({"sessions": s["sessions"]["count"], "session_bytes": s["sessions"]["bytes"],
  "rss_base": base["rss_bytes"], "rss_away": s["rss_bytes"], "create_s": round(made, 2)}))
# after the TTL
t1 = time.time()
while time.time() - t1 < 120:
    s = stats()
    if s["sessions"]["count"] == 0: break
    time.sleep(0.5)
time.sleep(1)
s = stats()
print(json.dumps({"after_ttl_sessions": s["sessions"]["count"], "expired": s["sessions"]["expired"], "session_bytes": s["sessions"]["bytes"], "rss_after": s["rss_bytes"]}))
