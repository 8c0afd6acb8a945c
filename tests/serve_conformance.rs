//! `rtcheck serve` against hand-made raw-socket input: the RFC 6455 / HTTP defects of
//! issue 10 (close reasons, ping bursts, handshake strictness, partial frames).
mod serve_common;
use rtcheck::net::wsframe::{self, client_frame};
use serve_common::*;
use std::io::Write;
use std::time::Duration;

const M: [u8; 4] = [0x11, 0x22, 0x33, 0x44];

fn close_payload(code: u16, reason: &[u8]) -> Vec<u8> {
    let mut p = code.to_be_bytes().to_vec();
    p.extend_from_slice(reason);
    p
}

#[test]
fn close_with_an_invalid_utf8_reason_fails_with_1007() {
    let srv = Server::start(&["--rate", "1"]);
    let mut s = raw_ws(srv.addr, None);
    let p = close_payload(
        1000,
        &[
            0xce, 0xba, 0xe1, 0xbd, 0xb9, 0xcf, 0x83, 0xce, 0xbc, 0xce, 0xb5, 0xed, 0xa0, 0x80,
        ],
    );
    s.write_all(&client_frame(wsframe::OP_CLOSE, true, &p, M))
        .unwrap();
    assert_eq!(read_close_code(&mut s), wsframe::CLOSE_INVALID_DATA);
    // A valid UTF-8 reason is echoed with the client's code.
    let mut s = raw_ws(srv.addr, None);
    let p = close_payload(1001, "κόσμε".as_bytes());
    s.write_all(&client_frame(wsframe::OP_CLOSE, true, &p, M))
        .unwrap();
    assert_eq!(read_close_code(&mut s), 1001);
}

#[test]
fn frames_after_a_close_in_the_same_read_are_not_parsed() {
    let srv = Server::start(&["--rate", "1"]);
    let mut s = raw_ws(srv.addr, None);
    let mut wire = client_frame(wsframe::OP_CLOSE, true, &1000u16.to_be_bytes(), M);
    wire.extend(client_frame(wsframe::OP_TEXT, true, &[0xff, 0xfe], M));
    wire.extend_from_slice(b"\xff\xff not a frame");
    s.write_all(&wire).unwrap();
    let frames = read_frames_until_eof(&mut s, Duration::from_secs(10));
    let closes: Vec<_> = frames
        .iter()
        .filter(|(op, _)| *op == wsframe::OP_CLOSE)
        .collect();
    assert_eq!(closes.len(), 1, "{frames:?}");
    assert_eq!(closes[0].1[..2], 1000u16.to_be_bytes());
    let st = srv.wait_stats(Duration::from_secs(5), |s| s["clients"]["ws"] == 0);
    assert_eq!(st["closed"]["peer"], 1, "{st}");
    assert_eq!(st["closed"]["bad_input"], 0, "{st}");
}
