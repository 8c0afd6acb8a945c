//! Who may control `rtcheck serve` (token off loopback, or refused) and CORS for browsers.
use crate::common;
use common::*;
use std::io::{Read, Write};
use std::time::Duration;

const TOKEN: &str = "0123456789abcdef";

fn get(addr: std::net::SocketAddr, path: &str, extra: &str) -> (u16, String, String) {
    http_full(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}Connection: close\r\n\r\n")
            .as_bytes(),
    )
}

#[test]
fn a_control_token_is_required_when_given() {
    let srv = Server::start(&["--wait-start", "--control-token", TOKEN]);
    let (st, head, _) = get(srv.addr, "/control/stats", "");
    assert_eq!(st, 401, "{head}");
    assert_eq!(header(&head, "WWW-Authenticate"), Some("Bearer"));
    let wrong = "Authorization: Bearer 0123456789abcdeX\r\n";
    assert_eq!(get(srv.addr, "/control/stats", wrong).0, 401);
    let ok = format!("Authorization: Bearer {TOKEN}\r\n");
    let (st, _, body) = get(srv.addr, "/control/stats", &ok);
    assert_eq!(st, 200);
    assert!(serde_json::from_str::<serde_json::Value>(&body).unwrap()["rounds_sent"].is_u64());
    let start = |auth: &str| {
        http_full(
            srv.addr,
            format!("POST /control/start HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: close\r\n\r\n")
                .as_bytes(),
        )
        .0
    };
    assert_eq!(start(""), 401);
    assert_eq!(start(&ok), 200);
    // The rest stays open.
    assert_eq!(get(srv.addr, "/metrics", "").0, 200);
    assert_eq!(get(srv.addr, "/healthz", "").0, 200);
    assert!(
        srv.stderr().contains("control: token required"),
        "{}",
        srv.stderr()
    );
}

#[test]
fn loopback_control_is_open_without_a_token() {
    let srv = Server::start(&["--wait-start"]);
    assert_eq!(srv.stats()["rounds_sent"], 0);
    let t0 = std::time::Instant::now();
    while !srv.stderr().contains("control: open") {
        assert!(t0.elapsed() < Duration::from_secs(10), "{}", srv.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Off loopback (0.0.0.0 inside a private network namespace): with --addr-file a token is
/// generated beside it; without, /control/* is refused.
const OFF_LOOPBACK: &str = r#"
set -eu
BIN=$1
ip link set lo up
D=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$D"' EXIT
"$BIN" serve --listen 0.0.0.0:0 --addr-file "$D/addr" --wait-start --exit-with-parent 2>"$D/err1" &
"$BIN" serve --listen 0.0.0.0:18081 --wait-start --exit-with-parent 2>"$D/err2" &
for i in $(seq 400); do [ -s "$D/addr" ] && grep -q control "$D/err2" && break; sleep 0.05; done
PORT=$(head -1 "$D/addr" | cut -d: -f2)
req() { # port path extra-header
  exec 3<>"/dev/tcp/127.0.0.1/$1"
  printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%bConnection: close\r\n\r\n' "$2" "$3" >&3
  head -1 <&3 | tr -d '\r'
  exec 3<&-
}
echo "token-file-mode $(stat -c %a "$D/addr.token")"
echo "without $(req $PORT /control/stats '')"
echo "authorized $(req $PORT /control/stats "Authorization: Bearer $(cat "$D/addr.token")\r\n")"
echo "refused $(req 18081 /control/stats '')"
echo "metrics $(req 18081 /metrics '')"
sed 's/^/err1 /' "$D/err1"
sed 's/^/err2 /' "$D/err2"
"#;

#[test]
fn off_loopback_a_token_is_generated_or_control_is_refused() {
    let out = in_netns(OFF_LOOPBACK, &[]);
    let line = |k: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(k).map(str::trim))
            .unwrap_or_else(|| panic!("no `{k}` in {out}"))
            .to_string()
    };
    assert_eq!(line("token-file-mode"), "600", "{out}");
    assert!(line("without").contains(" 401 "), "{out}");
    assert!(line("authorized").contains(" 200 "), "{out}");
    assert!(line("refused").contains(" 403 "), "{out}");
    // /metrics carries the control counters: off loopback it is refused like them.
    assert!(line("metrics").contains(" 403 "), "{out}");
    // Each server's startup lines as one text: the banner wraps a long line at 80 columns.
    let said = |k: &str| {
        let lines = out.lines().filter_map(|l| l.strip_prefix(k));
        lines
            .flat_map(str::split_whitespace)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(
        said("err1")
            .contains("control: token required (Authorization: Bearer), generated and written to"),
        "{out}"
    );
    assert!(
        said("err2").contains("control: /control/* refused off loopback"),
        "{out}"
    );
}

#[test]
fn cors_is_off_by_default_and_names_the_origin_when_given() {
    let srv = Server::start(&["--wait-start"]);
    let (_, head, _) = get(srv.addr, "/poll?since=0", "");
    assert_eq!(header(&head, "Access-Control-Allow-Origin"), None, "{head}");
    drop(srv);

    let o = "https://app.example.com";
    let srv = Server::start(&["--wait-start", "--cors", o]);
    for p in ["/poll?since=0", "/metrics"] {
        let (st, head, _) = get(srv.addr, p, "Origin: https://app.example.com\r\n");
        assert_eq!(st, 200);
        assert_eq!(
            header(&head, "Access-Control-Allow-Origin"),
            Some(o),
            "{p}: {head}"
        );
        assert_eq!(header(&head, "Vary"), Some("Origin"), "{p}: {head}");
    }
    for p in ["/healthz", "/control/stats"] {
        let (_, head, _) = get(srv.addr, p, "");
        assert_eq!(
            header(&head, "Access-Control-Allow-Origin"),
            None,
            "{p}: {head}"
        );
    }
    // The SSE stream's head.
    let mut s = std::net::TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://app.example.com\r\n\r\n")
        .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(
        header(&head, "Access-Control-Allow-Origin"),
        Some(o),
        "{head}"
    );
    // A preflight (EventSource reconnecting with Last-Event-ID).
    let (st, head, _) = http_full(
        srv.addr,
        b"OPTIONS /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://app.example.com\r\nAccess-Control-Request-Method: GET\r\nAccess-Control-Request-Headers: last-event-id\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(st, 200, "{head}");
    assert_eq!(
        header(&head, "Access-Control-Allow-Origin"),
        Some(o),
        "{head}"
    );
    assert!(header(&head, "Access-Control-Allow-Headers")
        .unwrap()
        .contains("Last-Event-ID"));
}
