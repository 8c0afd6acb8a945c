#!/usr/bin/env python3
"""A ~5,000-line nginx config for lint's speed figure (BENCHMARKS.md "lint"): nginx.conf
including conf.d/*.conf, 35 files of 4 servers, each with API locations, one WebSocket
location (Upgrade forwarded, 3600 s read timeout) and one unbuffered event stream.
Usage: benches/lint/gen_nginx.py DIR, then
  rtcheck lint DIR/nginx.conf --follow-includes --format json --fail-on never
"""
import os
import sys

out = sys.argv[1]
os.makedirs(os.path.join(out, "conf.d"), exist_ok=True)
with open(os.path.join(out, "nginx.conf"), "w") as f:
    f.write("events { worker_connections 1024; }\nhttp {\n"
            "  map $http_upgrade $connection_upgrade { default upgrade; '' close; }\n"
            "  include conf.d/*.conf;\n}\n")
for n in range(35):
    blocks = []
    for s in range(4):
        b = [f"server {{\n  listen {8000 + n * 4 + s};\n  server_name app{n}-{s}.example.com;"]
        for l in range(4):
            b.append(f"  location /api{l}/ {{\n    proxy_pass http://127.0.0.1:{9000 + l};\n"
                     "    proxy_set_header Host $host;\n    proxy_read_timeout 30s;\n  }")
        b.append("  location /ws/ {\n    proxy_pass http://127.0.0.1:9100;\n"
                 "    proxy_http_version 1.1;\n    proxy_set_header Upgrade $http_upgrade;\n"
                 "    proxy_set_header Connection $connection_upgrade;\n"
                 "    proxy_read_timeout 3600s;\n  }")
        b.append("  location /events {\n    proxy_pass http://127.0.0.1:9200;\n"
                 "    proxy_buffering off;\n    proxy_read_timeout 3600s;\n  }\n}")
        blocks.append("\n".join(b))
    with open(os.path.join(out, "conf.d", f"site{n}.conf"), "w") as f:
        f.write("\n".join(blocks) + "\n")
