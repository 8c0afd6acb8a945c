use crate::common;
use common::*;

#[test]
fn kernel_accepts_bytes_bounded_by_the_host_buffers_and_delivers_none() {
    let out = verify_json(&["tcp-wmem", "--message-size", "1024"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = verification(&out.json, "tcp-wmem");
    assert_valid(v);
    assert_eq!(v["unit"], "B");
    let bytes = measured(v);
    let wmem: Vec<f64> = sysctl("net/ipv4/tcp_wmem")
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    // At least one message; at most the send buffer ceiling (SO_SNDBUF doubles tcp_wmem
    // max for bookkeeping) plus a small client receive buffer.
    assert!(bytes >= 1024.0, "{bytes}");
    assert!(
        bytes <= 2.0 * wmem[2] + 256.0 * 1024.0,
        "{bytes} vs wmem max {}",
        wmem[2]
    );
    assert!(
        v["details"].to_string().contains("read by the client: 0 B"),
        "{v:#}"
    );
}
