#!/usr/bin/env python3
# Resume replay flood (issue 21 item 2, docs/serve.md --replay-budget): against `rtcheck
# serve` on loopback with a full ring, N clients ask for the whole ring (SSE Last-Event-ID:
# 0, /ws?since=0 or /poll?since=0) and never read, while one healthy SSE client reads live.
# Prints the serve process's RSS (/proc/PID/status) before, at its peak during the flood
# and after the flood left, and what the healthy client got (messages, gap-marked seqs).
# Usage: benches/replay_flood.py PID HOST PORT N sse|ws|poll HOLD_S
import json, re, socket, sys, threading, time
pid, host, port, n, kind, hold = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], float(sys.argv[6])
if not (host.startswith("127.") or host in ("::1", "localhost")):
    sys.exit(f"{host}: loopback only")
def rss():
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) * 1024
REQ = {
    "sse": "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: 0\r\n\r\n",
    "ws": "GET /ws?since=0 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    "poll": "GET /poll?since=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
}[kind]
healthy = {"messages": 0, "gap_seqs": 0, "stop": False}
def reader():
    s = socket.create_connection((host, port)); s.settimeout(1)
    s.sendall(b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); buf = b""
    while not healthy["stop"]:
        try: d = s.recv(65536)
        except socket.timeout: continue
        if not d: break
        buf += d
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            if b"\nid: " in b"\n" + ev: healthy["messages"] += 1
            m = re.search(rb'"from":(\d+),"to":(\d+)', ev)
            if b"event: gap" in ev and m: healthy["gap_seqs"] += int(m.group(2)) - int(m.group(1)) + 1
t = threading.Thread(target=reader, daemon=True); t.start()
time.sleep(1)
base = rss(); peak = base; socks = []; t0 = time.time()
for i in range(n):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((host, port)); s.sendall(REQ.encode()); socks.append(s)
    if i % 50 == 0: peak = max(peak, rss())
connect_s = time.time() - t0
t1 = time.time()
while time.time() - t1 < hold:
    peak = max(peak, rss()); time.sleep(0.05)
for s in socks: s.close()
t2 = time.time(); after = rss()
while time.time() - t2 < 60:
    after = rss()
    if after < base + (16 << 20): break
    time.sleep(0.2)
back_s = time.time() - t2
healthy["stop"] = True
print(json.dumps({"kind": kind, "clients": n, "rss_base_mb": round(base / 2**20, 1), "rss_peak_mb": round(peak / 2**20, 1),
  "rss_after_mb": round(after / 2**20, 1), "back_within_s": round(back_s, 1), "connect_s": round(connect_s, 2),
  "healthy_messages": healthy["messages"], "healthy_gap_seqs": healthy["gap_seqs"]}))
