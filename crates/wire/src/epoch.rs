//! The server's epoch: a random id chosen when a server instance starts (in a cluster,
//! the cluster's, kept in Redis beside the seq counter and changed whenever Redis lost
//! that counter). Seqs restart at 1 with every epoch, so a seq means something only with
//! its epoch: every resume carries both, and a resume from another epoch, or from a seq
//! beyond what the server holds, gets an explicit reset marker, never a silent skip.
//!
//! On the wire: SSE ids are `SEQ@EPOCH` (seq first: `parseInt` still reads the seq),
//! `/ws?since=SEQ&epoch=EPOCH` and the resume message `{"since":SEQ,"epoch":"EPOCH"}`,
//! `/poll?since=SEQ&epoch=EPOCH`; a bare number is still accepted (old clients, curl).

/// 64 random bits, written as 16 lowercase hex digits. Never 0 (0 stands for "not an
/// epoch": a garbled one a client sent, which matches no server's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Epoch(pub u64);

impl Epoch {
    /// What a client sent that is not an epoch: it matches no server's.
    pub const FOREIGN: Epoch = Epoch(0);

    /// A fresh epoch (`rtcheck_base::os::random`: the kernel's, or a clock-pid-counter mix
    /// where it fails: unique enough to tell two instances apart, which is all an epoch is
    /// for).
    pub fn random() -> Epoch {
        Epoch(rtcheck_base::os::random::u64().max(1))
    }

    /// 1 to 16 hex digits (either case); anything else is [`Epoch::FOREIGN`].
    pub fn parse(s: &str) -> Epoch {
        let s = s.trim();
        let hex = !s.is_empty() && s.len() <= 16 && s.bytes().all(|b| b.is_ascii_hexdigit());
        match hex {
            true => u64::from_str_radix(s, 16).map_or(Epoch::FOREIGN, Epoch),
            false => Epoch::FOREIGN,
        }
    }
}

impl std::fmt::Display for Epoch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// Where a client says it is: its last seq and, when it sent one, the epoch of that seq.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Position {
    pub seq: u64,
    pub epoch: Option<Epoch>,
}

impl Position {
    /// A resume id as a client sent it: `SEQ@EPOCH`, a bare `SEQ`, or anything else (an
    /// unknown position: seq 0, replayed from the start of the ring), never an error.
    pub fn parse(v: &str) -> Position {
        let (seq, epoch) = match v.split_once('@') {
            Some((s, e)) => (s, Some(Epoch::parse(e))),
            None => (v, None),
        };
        Position {
            seq: seq.trim().parse().unwrap_or(0),
            epoch,
        }
    }

    /// [`Position::parse`] of a `since` with a separate `epoch` parameter (query strings,
    /// the WebSocket resume message); the parameter wins over an `@EPOCH` suffix.
    pub fn with_epoch(since: &str, epoch: Option<&str>) -> Position {
        let mut p = Position::parse(since);
        if let Some(e) = epoch {
            p.epoch = Some(Epoch::parse(e));
        }
        p
    }
}

/// The answer to a resume: from the client's seq, or a reset (the client's seq belongs to
/// another epoch, or is beyond anything this server holds): the client is told, and gets
/// what an unknown position gets (the ring from its start, after a gap marker if it no
/// longer starts at 1; under snapshot the latest state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    From(u64),
    Reset(Reset),
}

impl Resume {
    /// The seq to replay after: the client's, or 0 after a reset.
    pub fn since(&self) -> u64 {
        match self {
            Resume::From(s) => *s,
            Resume::Reset(_) => 0,
        }
    }
    pub fn reset(&self) -> Option<Reset> {
        match self {
            Resume::From(_) => None,
            Resume::Reset(r) => Some(*r),
        }
    }
}

/// What a reset marker says: the server's epoch and latest seq, and the position the
/// client presented (so a log shows why).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reset {
    pub epoch: Epoch,
    pub latest: u64,
    pub since: u64,
    pub client_epoch: Option<Epoch>,
}

/// Pure: resume `p` on a server at `epoch` whose highest seq held is `latest`.
pub fn decide(p: Position, epoch: Epoch, latest: u64) -> Resume {
    let other_epoch = p.epoch.is_some_and(|e| e != epoch);
    if other_epoch || p.seq > latest {
        return Resume::Reset(Reset {
            epoch,
            latest,
            since: p.seq,
            client_epoch: p.epoch,
        });
    }
    Resume::From(p.seq)
}

impl Reset {
    /// `{"reset":true,"epoch":"E","latest":L,"since":N,"client_epoch":"E"|null}`.
    pub fn json(&self) -> String {
        let ce = self
            .client_epoch
            .map_or("null".to_string(), |e| format!("\"{e}\""));
        format!(
            "{{\"reset\":true,\"epoch\":\"{}\",\"latest\":{},\"since\":{},\"client_epoch\":{ce}}}",
            self.epoch, self.latest, self.since
        )
    }
    /// SSE: `event: reset` (no `id:`: the client's position is set by the events after it).
    pub fn sse(&self) -> String {
        format!("event: reset\ndata: {}\n\n", self.json())
    }
    /// WebSocket: one text frame.
    pub fn ws(&self) -> Vec<u8> {
        crate::ws::frame(crate::ws::OP_TEXT, self.json().as_bytes())
    }
}

/// The first frame of every `/ws` connection: `{"epoch":"E","latest":L}` (what a client
/// resumes with: `?since=SEQ&epoch=E` or `{"since":SEQ,"epoch":"E"}`).
pub fn ws_hello(epoch: Epoch, latest: u64) -> Vec<u8> {
    let j = format!("{{\"epoch\":\"{epoch}\",\"latest\":{latest}}}");
    crate::ws::frame(crate::ws::OP_TEXT, j.as_bytes())
}

/// What a client reads from the server's text frames and events that are not payloads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    /// `{"epoch":"E","latest":L}` (a WebSocket hello).
    Hello { epoch: Epoch, latest: u64 },
    /// A reset marker: the new epoch and its latest seq.
    Reset { epoch: Epoch, latest: u64 },
}

/// Parse a hello or a reset marker (clients: verify delivery, bench cluster, tests).
/// Checked by prefix first, so a payload is never parsed twice.
pub fn parse_marker(s: &str) -> Option<Marker> {
    if !(s.starts_with("{\"epoch\"") || s.starts_with("{\"reset\"")) {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct M {
        #[serde(default)]
        reset: bool,
        epoch: String,
        latest: u64,
    }
    let m: M = serde_json::from_str(s).ok()?;
    let epoch = Epoch::parse(&m.epoch);
    Some(match m.reset {
        true => Marker::Reset {
            epoch,
            latest: m.latest,
        },
        false => Marker::Hello {
            epoch,
            latest: m.latest,
        },
    })
}

/// `{"from":A,"to":B}` of a gap marker (the inclusive range of seqs the server no
/// longer holds); None for anything else, or a range backwards.
pub fn parse_gap(data: &str) -> Option<(u64, u64)> {
    #[derive(serde::Deserialize)]
    struct G {
        from: u64,
        to: u64,
    }
    let g: G = serde_json::from_str(data).ok()?;
    (g.from <= g.to).then_some((g.from, g.to))
}

#[cfg(test)]
mod tests {
    #[test]
    fn gap_markers_parse_in_either_key_order() {
        assert_eq!(super::parse_gap(r#"{"from":3,"to":9}"#), Some((3, 9)));
        assert_eq!(super::parse_gap(r#"{"to":9,"from":3}"#), Some((3, 9)));
        assert_eq!(super::parse_gap(r#"{"from":9,"to":3}"#), None);
        assert_eq!(super::parse_gap("nope"), None);
    }

    use super::*;

    #[test]
    fn epochs_print_as_16_hex_digits_and_parse_back() {
        let e = Epoch(0xab);
        assert_eq!(e.to_string(), "00000000000000ab");
        assert_eq!(Epoch::parse("00000000000000ab"), e);
        assert_eq!(Epoch::parse("AB"), e);
        assert_eq!(Epoch::parse("xyz"), Epoch::FOREIGN);
        assert_eq!(Epoch::parse("00000000000000000ab"), Epoch::FOREIGN);
        assert_eq!(Epoch::parse(""), Epoch::FOREIGN);
        let (a, b) = (Epoch::random(), Epoch::random());
        assert_ne!(a, b);
        assert_ne!(a, Epoch::FOREIGN);
        assert_eq!(a.to_string().len(), 16);
    }

    #[test]
    fn positions_parse_with_and_without_an_epoch() {
        let e = Epoch(0xab);
        assert_eq!(
            Position::parse("62@00000000000000ab"),
            Position {
                seq: 62,
                epoch: Some(e)
            }
        );
        assert_eq!(Position::parse(" 42 ").seq, 42);
        assert_eq!(Position::parse("42").epoch, None);
        assert_eq!(Position::parse("abc"), Position::default());
        assert_eq!(Position::parse("-1"), Position::default());
        assert_eq!(Position::parse("5@zz").epoch, Some(Epoch::FOREIGN));
        assert_eq!(Position::with_epoch("5", Some("ab")).epoch, Some(e));
        assert_eq!(Position::with_epoch("5@cd", Some("ab")).epoch, Some(e));
    }

    #[test]
    fn another_epoch_or_a_seq_beyond_the_server_is_a_reset() {
        let (e, old) = (Epoch(7), Epoch(8));
        let at = |seq, epoch| Position { seq, epoch };
        assert_eq!(decide(at(5, Some(e)), e, 10), Resume::From(5));
        assert_eq!(decide(at(10, None), e, 10), Resume::From(10));
        assert_eq!(decide(at(0, None), e, 0), Resume::From(0));
        let r = decide(at(62, Some(old)), e, 70).reset().unwrap();
        assert_eq!((r.epoch, r.latest, r.since), (e, 70, 62));
        assert_eq!(decide(at(62, Some(old)), e, 70).since(), 0);
        // A bare number beyond what the server holds: it restarted (or the id is made up).
        assert!(decide(at(62, None), e, 21).reset().is_some());
        assert!(decide(at(u64::MAX, None), e, 21).reset().is_some());
        // Same epoch, beyond: a reset too (nothing this server holds is after it).
        assert!(decide(at(22, Some(e)), e, 21).reset().is_some());
    }

    #[test]
    fn markers_are_json_and_parse_back() {
        let r = Reset {
            epoch: Epoch(1),
            latest: 21,
            since: 62,
            client_epoch: Some(Epoch(2)),
        };
        let v: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
        assert_eq!(v["reset"], true);
        assert_eq!(v["epoch"], "0000000000000001");
        assert_eq!(
            (v["latest"].as_u64(), v["since"].as_u64()),
            (Some(21), Some(62))
        );
        assert_eq!(v["client_epoch"], "0000000000000002");
        assert!(r.sse().starts_with("event: reset\ndata: {\"reset\":true"));
        assert_eq!(
            parse_marker(&r.json()),
            Some(Marker::Reset {
                epoch: Epoch(1),
                latest: 21
            })
        );
        let h = ws_hello(Epoch(3), 9);
        let text = std::str::from_utf8(&h[2..]).unwrap();
        assert_eq!(text, "{\"epoch\":\"0000000000000003\",\"latest\":9}");
        assert_eq!(
            parse_marker(text),
            Some(Marker::Hello {
                epoch: Epoch(3),
                latest: 9
            })
        );
        assert_eq!(parse_marker("{\"seq\":1,\"ts\":2}"), None);
        assert_eq!(parse_marker("{\"from\":1,\"to\":2}"), None);
    }
}
