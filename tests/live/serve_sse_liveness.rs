//! SSE liveness: a half-open SSE client (its packets vanish) is removed by the server's own
//! bound (TCP_USER_TIMEOUT from --pong-wait, keepalive), counted as `tcp_timeout`.
//! Runs server and client in a private network namespace (`unshare -n`, root) whose
//! loopback is taken down once the stream is established: nothing leaves this test.
use crate::common;

/// Runs inside the namespace: server, an SSE client over bash's /dev/tcp, loopback down
/// until the server's socket is gone (or a bound passes), loopback up, stats printed.
const SCRIPT: &str = r#"
set -eu
BIN=$1; WAIT=$2; BOUND=$3
ip link set lo up
D=$(mktemp -d)
"$BIN" serve --listen 127.0.0.1:0 --addr-file "$D/addr" --ping 300ms --pong-wait "$WAIT" --exit-with-parent 2>"$D/err" &
SP=$!
trap 'kill $SP 2>/dev/null; rm -rf "$D"' EXIT
for i in $(seq 400); do [ -s "$D/addr" ] && break; sleep 0.05; done
PORT=$(head -1 "$D/addr" | cut -d: -f2)
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' >&3
read -r -t 10 status <&3
case "$status" in *200*) ;; *) echo "no SSE stream: $status"; exit 1;; esac
ip link set lo down
# Until the server's end of the stream (source port PORT) is gone, within BOUND seconds.
for i in $(seq $((BOUND * 20))); do
  [ -z "$(ss -tnH state established "( sport = :$PORT )")" ] && break
  sleep 0.05
done
ip link set lo up
# The kernel drops the socket first; the server counts it when its task next touches it
# (the next ping, <= 300 ms later, longer on a loaded host): ask until it has, or the
# bound passes (the case without --pong-wait asks once).
stats() {
  exec 4<>"/dev/tcp/127.0.0.1/$PORT"
  printf 'GET /control/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&4
  tail -n 1 <&4
  exec 4<&-
}
for i in $(seq $((BOUND * 20))); do
  S=$(stats)
  [ "$WAIT" = 0 ] && break
  case "$S" in *'"tcp_timeout":0'*) sleep 0.05 ;; *) break ;; esac
done
echo "$S"
"#;

fn run(pong_wait: &str, bound_s: u32) -> serde_json::Value {
    let stdout = common::in_netns(SCRIPT, &[pong_wait, &bound_s.to_string()]);
    let json = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or("");
    serde_json::from_str(json).unwrap_or_else(|e| panic!("stats `{stdout}`: {e}"))
}

#[test]
fn a_half_open_sse_client_is_removed_after_pong_wait() {
    let s = run("2s", 20);
    assert_eq!(s["closed"]["tcp_timeout"], 1, "{s}");
    assert_eq!(s["clients"]["sse"], 0, "{s}");
    assert_eq!(s["removed"], 1, "{s}");
}

#[test]
fn without_pong_wait_the_half_open_client_stays() {
    // The same blackhole with no bound of the server's own: the client is still there.
    let s = run("0", 5);
    assert_eq!(s["closed"]["tcp_timeout"], 0, "{s}");
    assert_eq!(s["clients"]["sse"], 1, "{s}");
}
