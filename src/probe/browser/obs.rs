//! What the page and the DevTools network log saw in each experiment (read back as JSON
//! from the page), and the numbers derived from it. Pure: no browser here.
use serde::Deserialize;

/// One request of an experiment as the network domain saw it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NetRec {
    pub request_id: String,
    pub url: String,
    pub last_event_id: Option<String>,
    pub protocol: Option<String>,
    pub connection_id: Option<u64>,
    pub status: Option<i64>,
    /// A WebSocket (`Network.webSocket*` events): `status` is its handshake's, 101 for an
    /// HTTP/1.1 Upgrade, 200 for RFC 8441's extended CONNECT on an HTTP/2 stream.
    pub websocket: bool,
}

/// `rtConns`: when each of the EventSources opened (ms), and the one the page freed.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ConnsState {
    pub opened: Vec<Option<f64>>,
    pub freed_at: Option<f64>,
    pub freed: Option<usize>,
    pub errors: u64,
}

#[derive(Debug, Clone, Default)]
pub struct ConnsObs {
    pub state: ConnsState,
    pub net: Vec<NetRec>,
}

impl ConnsObs {
    pub fn requested(&self) -> usize {
        self.state.opened.len()
    }

    fn opened_before(&self, t: f64) -> impl Iterator<Item = (usize, f64)> + '_ {
        let s = &self.state.opened;
        (0..s.len()).filter_map(move |i| s[i].filter(|&o| o <= t).map(|o| (i, o)))
    }

    /// Open at once: before the page freed one (all that opened when it freed none).
    pub fn at_once(&self) -> usize {
        self.opened_before(self.state.freed_at.unwrap_or(f64::INFINITY))
            .count()
    }

    /// The first EventSource still waiting when the page freed a connection, and when it
    /// opened (ms from the start), if it did.
    pub fn waiter(&self) -> Option<(usize, Option<f64>)> {
        let freed_at = self.state.freed_at?;
        let s = &self.state.opened;
        let i = (0..s.len()).find(|&i| s[i].is_none_or(|o| o > freed_at))?;
        Some((i, s[i]))
    }

    /// The protocol most responses came with ("h2", "http/1.1").
    pub fn protocol(&self) -> Option<String> {
        let mut ps: Vec<&str> = self
            .net
            .iter()
            .filter_map(|n| n.protocol.as_deref())
            .collect();
        ps.sort_unstable();
        let best = ps
            .iter()
            .max_by_key(|p| ps.iter().filter(|q| q == p).count())?;
        Some(best.to_string())
    }

    /// Distinct TCP connections the responses came on.
    pub fn connections(&self) -> usize {
        let mut ids: Vec<u64> = self.net.iter().filter_map(|n| n.connection_id).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct ErrRec {
    pub t: f64,
    /// EventSource.readyState at the error: 0 reconnecting, 2 gave up.
    pub state: u8,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EvRec {
    pub t: f64,
    /// rtcheck's payload seq (`data` JSON), when the payload is rtcheck's.
    pub seq: Option<u64>,
    /// The SSE `id:` (lastEventId): the sequence of a foreign payload.
    #[serde(default)]
    pub id: Option<String>,
    /// Which open it arrived on (1 = the first connection).
    pub open: usize,
}

/// `rtResume`: one EventSource held until the server closed it and it came back.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ResumeState {
    pub opens: Vec<f64>,
    pub errors: Vec<ErrRec>,
    pub events: Vec<EvRec>,
    pub gaps: u64,
    /// `event: reset` markers: the server announced a restart.
    #[serde(default)]
    pub resets: u64,
}

impl EvRec {
    /// The payload's seq, else the SSE id's leading digits (`SEQ[@EPOCH]`).
    pub fn seq(&self) -> Option<u64> {
        self.seq.or_else(|| {
            let id = self.id.as_deref()?;
            rtcheck_wire::sse::seq_id(id).map(|(s, _)| s)
        })
    }

    fn epoch(&self) -> Option<&str> {
        let id = self.id.as_deref()?;
        rtcheck_wire::sse::seq_id(id).and_then(|(_, e)| e)
    }
}

#[derive(Debug, Clone, Default)]
pub struct ResumeObs {
    pub state: ResumeState,
    pub net: Vec<NetRec>,
    /// How long the page held the stream waiting for the server to close it (ms).
    pub window_ms: f64,
}

/// The reconnect, once the server closed the stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Reconnect {
    pub closed_at_ms: f64,
    /// None: it did not come back within the window (or gave up).
    pub delay_ms: Option<f64>,
    pub gave_up: bool,
    pub last_before: Option<u64>,
    pub first_after: Option<u64>,
    /// Last-Event-ID on the reconnect request (None: not sent).
    pub sent_id: Option<String>,
    /// Seqs between the last event before and the first after that never arrived.
    pub lost: u64,
    /// Events delivered again after the reconnect.
    pub duplicated: u64,
    pub gaps: u64,
    pub resets: u64,
    /// The ids' epoch before and after, when it changed (`SEQ@EPOCH`).
    pub epoch_changed: Option<(String, String)>,
    pub reconnect_status: Option<i64>,
}

impl ResumeObs {
    /// None when the stream was never closed during the window.
    pub fn reconnect(&self) -> Option<Reconnect> {
        let s = &self.state;
        let err = s.errors.first()?;
        let seqs_on = |open: usize| s.events.iter().filter(move |e| e.open == open);
        let last_before = seqs_on(1).filter_map(EvRec::seq).max();
        let first_after = seqs_on(2).find_map(EvRec::seq);
        let epoch = |open: usize| seqs_on(open).filter_map(EvRec::epoch).next_back();
        let epoch_changed = match (epoch(1), seqs_on(2).find_map(EvRec::epoch)) {
            (Some(a), Some(b)) if a != b => Some((a.to_string(), b.to_string())),
            _ => None,
        };
        let (lost, duplicated) = match (last_before, first_after) {
            (Some(a), Some(b)) if b > a => (b - a - 1, 0),
            (Some(a), Some(b)) => (0, a - b + 1),
            _ => (0, 0),
        };
        let again = self.net.get(1);
        Some(Reconnect {
            closed_at_ms: err.t,
            delay_ms: s.opens.get(1).map(|o| o - err.t),
            gave_up: s.errors.iter().any(|e| e.state == 2),
            last_before,
            first_after,
            sent_id: again.and_then(|n| n.last_event_id.clone()),
            lost,
            duplicated,
            gaps: s.gaps,
            resets: s.resets,
            epoch_changed,
            reconnect_status: again.and_then(|n| n.status),
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct CloseRec {
    pub code: u16,
    pub reason: String,
    pub clean: bool,
    pub t: f64,
}

/// `rtWs`: one WebSocket from the page.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct WsState {
    pub open: Option<f64>,
    pub text: u64,
    pub binary: u64,
    pub undecoded: u64,
    pub seqs: Vec<u64>,
    pub close: Option<CloseRec>,
    pub error: bool,
}

#[derive(Debug, Clone, Default)]
pub struct WsObs {
    pub state: WsState,
    pub window_ms: f64,
    /// The handshake's status as DevTools showed it (None: no handshake event came).
    pub handshake_status: Option<i64>,
    /// Whether an HTTP/2 connection to the origin was made first (wss only): Chromium
    /// carries a WebSocket over HTTP/2 only on one that already exists.
    pub warmed_h2: Option<bool>,
}

impl WsState {
    /// Seqs missing inside the span received (span - unique).
    pub fn lost(&self) -> u64 {
        let (Some(lo), Some(hi)) = (self.seqs.iter().min(), self.seqs.iter().max()) else {
            return 0;
        };
        let mut u = self.seqs.clone();
        u.sort_unstable();
        u.dedup();
        (hi - lo + 1).saturating_sub(u.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(id: &str, proto: &str, conn: u64) -> NetRec {
        NetRec {
            request_id: id.into(),
            protocol: Some(proto.into()),
            connection_id: Some(conn),
            ..NetRec::default()
        }
    }

    #[test]
    fn six_open_and_the_seventh_waits_for_a_freed_connection() {
        let mut opened: Vec<Option<f64>> = (0..6).map(|i| Some(10.0 + i as f64)).collect();
        opened.push(Some(2100.0));
        let o = ConnsObs {
            state: ConnsState {
                opened,
                freed_at: Some(2090.0),
                freed: Some(0),
                errors: 0,
            },
            net: (0..7)
                .map(|i| net(&i.to_string(), "http/1.1", i.min(5)))
                .collect(),
        };
        assert_eq!((o.requested(), o.at_once()), (7, 6));
        assert_eq!(o.waiter(), Some((6, Some(2100.0))));
        assert_eq!(o.protocol().as_deref(), Some("http/1.1"));
        assert_eq!(o.connections(), 6);
    }

    #[test]
    fn reconnect_counts_loss_and_the_id_sent() {
        let ev = |seq, open| EvRec {
            t: 0.0,
            seq: Some(seq),
            id: None,
            open,
        };
        let r = ResumeObs {
            state: ResumeState {
                opens: vec![5.0, 5100.0],
                errors: vec![ErrRec {
                    t: 2000.0,
                    state: 0,
                }],
                events: vec![ev(1, 1), ev(2, 1), ev(3, 2), ev(4, 2)],
                gaps: 0,
                resets: 0,
            },
            net: vec![
                NetRec::default(),
                NetRec {
                    last_event_id: Some("2".into()),
                    status: Some(200),
                    ..NetRec::default()
                },
            ],
            window_ms: 10_000.0,
        };
        let c = r.reconnect().unwrap();
        assert_eq!(c.delay_ms, Some(3100.0));
        assert_eq!(
            (c.last_before, c.first_after, c.lost),
            (Some(2), Some(3), 0)
        );
        assert_eq!(c.sent_id.as_deref(), Some("2"));
        let mut skipped = r.clone();
        skipped.state.events[2].seq = Some(9);
        assert_eq!(skipped.reconnect().unwrap().lost, 6);
        // A foreign payload: the SSE ids are the sequence; 1 again after 2 is a restart
        // (counted as duplicated), and another epoch is reported as changed.
        let mut foreign = r.clone();
        let ids = ["1@a", "2@a", "1@b", "2@b"];
        for (e, id) in foreign.state.events.iter_mut().zip(ids) {
            e.seq = None;
            e.id = Some(id.to_string());
        }
        let c = foreign.reconnect().unwrap();
        assert_eq!(
            (c.last_before, c.first_after, c.duplicated),
            (Some(2), Some(1), 2)
        );
        assert_eq!(c.epoch_changed, Some(("a".into(), "b".into())));
        let mut open = r;
        open.state.errors.clear();
        assert_eq!(open.reconnect(), None);
    }

    #[test]
    fn ws_loss_is_span_minus_unique() {
        let w = WsState {
            seqs: vec![3, 4, 4, 7],
            ..WsState::default()
        };
        assert_eq!(w.lost(), 2);
        assert_eq!(WsState::default().lost(), 0);
    }
}
