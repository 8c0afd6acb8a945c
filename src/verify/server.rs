//! The embedded server (`rtcheck serve`) as a child process, per the net contract:
//! `serve --listen 127.0.0.1:0 --addr-file F --exit-with-parent`, plus a tiny HTTP/1.1
//! client for `/control/stats`.
