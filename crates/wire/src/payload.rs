//! The public payload format, so any server (ours or another) can be measured.
//!
//! Binary (WebSocket binary frame, raw-TCP frame body): bytes 0-7 seq (u64 LE, starts at 1),
//! bytes 8-15 scheduled send time (u64 LE, ns since the Unix epoch), the rest padding
//! (zeros), total `--size` bytes (minimum 16).
//!
//! Text (WebSocket text frame with `serve --text`, SSE `data:` line, /poll items): a JSON
//! object with integer fields "seq" and "ts" (ns since the Unix epoch); other fields are
//! ignored. Our server writes `{"seq":N,"ts":T,"pad":"xxx…"}` padded to `--size` bytes.
//!
//! Raw TCP floor: each frame is a u32 LE body length followed by the binary body.

/// Smallest valid binary payload: seq + scheduled time.
pub const MIN_SIZE: usize = 16;
/// Bytes of the raw-TCP length prefix.
pub const RAW_PREFIX: usize = 4;

/// Write seq and scheduled send time into the first 16 bytes of `buf`, zero the rest.
/// Panics if `buf` is shorter than [`MIN_SIZE`] (a programming error: sizes are validated
/// at the flag boundary).
pub fn encode_into(buf: &mut [u8], seq: u64, sched_ns: u64) {
    assert!(
        buf.len() >= MIN_SIZE,
        "payload buffer shorter than 16 bytes"
    );
    buf[0..8].copy_from_slice(&seq.to_le_bytes());
    buf[8..16].copy_from_slice(&sched_ns.to_le_bytes());
    buf[16..].fill(0);
}

/// A fresh binary payload of `size` bytes (at least 16).
pub fn encode(size: usize, seq: u64, sched_ns: u64) -> Vec<u8> {
    let mut v = vec![0u8; size.max(MIN_SIZE)];
    encode_into(&mut v, seq, sched_ns);
    v
}

/// `(seq, sched_ns)` from a binary payload; None if shorter than 16 bytes.
pub fn decode(buf: &[u8]) -> Option<(u64, u64)> {
    if buf.len() < MIN_SIZE {
        return None;
    }
    let seq = u64::from_le_bytes(buf[0..8].try_into().ok()?);
    let ts = u64::from_le_bytes(buf[8..16].try_into().ok()?);
    Some((seq, ts))
}

/// A raw-TCP frame: u32 LE length prefix + binary payload of `size` bytes.
pub fn encode_raw_frame(size: usize, seq: u64, sched_ns: u64) -> Vec<u8> {
    let size = size.max(MIN_SIZE);
    let mut v = vec![0u8; RAW_PREFIX + size];
    v[0..4].copy_from_slice(&(size as u32).to_le_bytes());
    encode_into(&mut v[RAW_PREFIX..], seq, sched_ns);
    v
}

/// The text form, padded with `x` so the JSON is `size` bytes when `size` allows it.
pub fn encode_text(size: usize, seq: u64, sched_ns: u64) -> String {
    let mut s = format!("{{\"seq\":{seq},\"ts\":{sched_ns},\"pad\":\"");
    // 2 = closing `"}`.
    let pad = size.saturating_sub(s.len() + 2);
    s.extend(std::iter::repeat_n('x', pad));
    s.push_str("\"}");
    s
}

/// `(seq, ts)` from a JSON text payload. Fast path for our own field order
/// (`{"seq":N,"ts":T...`), full JSON parse otherwise (other servers).
pub fn decode_text(s: &str) -> Option<(u64, u64)> {
    if let Some(v) = decode_text_fast(s) {
        return Some(v);
    }
    #[derive(serde::Deserialize)]
    struct T {
        seq: u64,
        ts: u64,
    }
    let t: T = serde_json::from_str(s).ok()?;
    Some((t.seq, t.ts))
}

fn decode_text_fast(s: &str) -> Option<(u64, u64)> {
    let rest = s.strip_prefix("{\"seq\":")?;
    let (seq, rest) = leading_u64(rest)?;
    let rest = rest.strip_prefix(",\"ts\":")?;
    let (ts, rest) = leading_u64(rest)?;
    // Only trust the fast path when the number is properly terminated.
    match rest.as_bytes().first() {
        Some(b',') | Some(b'}') => Some((seq, ts)),
        _ => None,
    }
}

fn leading_u64(s: &str) -> Option<(u64, &str)> {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 {
        return None;
    }
    let v = s[..n].parse().ok()?;
    Some((v, &s[n..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_roundtrip_and_layout() {
        let mut b = vec![0xAAu8; 1024];
        encode_into(&mut b, 7, 1_700_000_000_123_456_789);
        assert_eq!(&b[0..8], &7u64.to_le_bytes());
        assert_eq!(&b[8..16], &1_700_000_000_123_456_789u64.to_le_bytes());
        assert!(b[16..].iter().all(|&x| x == 0));
        assert_eq!(decode(&b), Some((7, 1_700_000_000_123_456_789)));
        assert_eq!(decode(&encode(16, 1, 2)), Some((1, 2)));
        assert_eq!(encode(3, 1, 2).len(), 16);
    }

    #[test]
    fn binary_too_short_is_none() {
        assert_eq!(decode(&[0u8; 15]), None);
        assert_eq!(decode(&[]), None);
    }

    #[test]
    fn raw_frame_has_length_prefix() {
        let f = encode_raw_frame(100, 3, 9);
        assert_eq!(f.len(), 104);
        assert_eq!(u32::from_le_bytes(f[0..4].try_into().unwrap()), 100);
        assert_eq!(decode(&f[4..]), Some((3, 9)));
    }

    #[test]
    fn text_roundtrip_padded_to_size() {
        let s = encode_text(1024, 42, 1_700_000_000_000_000_000);
        assert_eq!(s.len(), 1024);
        assert_eq!(decode_text(&s), Some((42, 1_700_000_000_000_000_000)));
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["seq"], 42);
        // Too small a size still gives valid JSON.
        let s = encode_text(5, 1, 2);
        assert_eq!(decode_text(&s), Some((1, 2)));
    }

    #[test]
    fn text_other_field_orders_and_garbage() {
        assert_eq!(
            decode_text(r#"{"ts": 5, "x": [1], "seq": 9}"#),
            Some((9, 5))
        );
        assert_eq!(decode_text(r#"{"seq":1,"ts":2}"#), Some((1, 2)));
        assert_eq!(decode_text(r#"{"seq":1}"#), None);
        assert_eq!(decode_text(r#"{"seq":-1,"ts":2}"#), None);
        assert_eq!(decode_text("not json"), None);
        // Fast path must not accept a truncated number.
        assert_eq!(decode_text(r#"{"seq":1,"ts":2.5}"#), None);
    }
}
