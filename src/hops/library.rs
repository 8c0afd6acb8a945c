//! A realtime library's documented heartbeat against a path's chain (issue 42): a
//! Socket.IO app's server pings every 25 s by default; does the path's idle chain hold
//! that? The library's defaults are `rtcheck_wire::appproto`'s (each with its source and
//! the date read); the chain's numbers are `chain`'s. Pure.
use super::chain::Chain;
pub use super::chain::{Fit, LibraryFit};
use rtcheck_wire::appproto::{AppProtocol, Pinger};
use rtcheck_wire::transport::Transport;

/// Who sends the heartbeat, in the chain's reset vocabulary.
fn direction(p: Pinger) -> (&'static str, &'static str) {
    match p {
        Pinger::Client => ("its clients ping", "client-data"),
        _ => ("the server pings", "server-data"),
    }
}

/// The library `p`'s documented heartbeat on chain `c` (its WebSocket transport); None for
/// a protocol without one (raw).
pub fn fit(c: &Chain, p: AppProtocol) -> Option<LibraryFit> {
    let d = p.defaults();
    let every = d.interval_s.filter(|s| *s > 0.0)?;
    let tc = c.transport(Transport::Websocket);
    let (who, resets) = direction(d.pinger);
    let lib = format!(
        "{}'s heartbeat ({who} every {every} s by default)",
        p.name()
    );
    let set = |m: u64| format!("set the library's interval to {m} s or less");
    let (fit, sentence) = match (&tc.idle, tc.heartbeat_max_s) {
        (None, _) => (Fit::Holds, format!("{lib}: no hop of the path documents an idle limit")),
        (Some(b), _) if !tc.reset_by.iter().any(|r| r == resets) => (
            Fit::Cut,
            format!(
                "{lib} does not keep the path open: the {} s idle limit at {} is not reset by {resets}",
                b.secs, b.hop
            ),
        ),
        (Some(b), Some(m)) if every <= m as f64 => (
            Fit::Holds,
            format!("{lib} keeps the path open: at most {m} s (the {} s idle limit at {})", b.secs, b.hop),
        ),
        (Some(b), m) if every < b.secs as f64 => (
            Fit::Late,
            format!(
                "{lib} is under the {} s idle limit at {} but above half of it: one late heartbeat is cut; {}",
                b.secs,
                b.hop,
                set(m.unwrap_or(b.secs / 2))
            ),
        ),
        (Some(b), m) => (
            Fit::Cut,
            format!(
                "{lib} comes after the {} s idle limit at {}: every quiet connection is cut first; {}, or raise the limit above {} s",
                b.secs,
                b.hop,
                set(m.unwrap_or(b.secs / 2)),
                (every * 2.0).ceil()
            ),
        ),
    };
    Some(LibraryFit {
        protocol: p.name().into(),
        interval_s: every,
        fit,
        sentence,
        source: d.source.into(),
        read: d.read.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hops::chain::{compute, parse_override, Overrides};

    fn chain(path: &[&str], over: &[&str]) -> Chain {
        let mut o = Overrides::new();
        for x in over {
            parse_override(x, &mut o).unwrap();
        }
        let ids: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        compute(&ids, &o).unwrap()
    }

    #[test]
    fn socketio_against_an_idle_chain() {
        // nginx's 60 s default holds Engine.IO's 25 s ping.
        let f = fit(&chain(&["nginx"], &[]), AppProtocol::SocketIo).unwrap();
        assert_eq!(f.fit, Fit::Holds, "{}", f.sentence);
        assert_eq!(f.interval_s, 25.0);
        // A 40 s limit: under it, but above half of it.
        let f = fit(
            &chain(&["nginx"], &["nginx.idle=40s"]),
            AppProtocol::SocketIo,
        )
        .unwrap();
        assert_eq!(f.fit, Fit::Late, "{}", f.sentence);
        // 20 s: every quiet client is cut before the ping.
        let f = fit(
            &chain(&["nginx"], &["nginx.idle=20s"]),
            AppProtocol::SocketIo,
        )
        .unwrap();
        assert_eq!(f.fit, Fit::Cut, "{}", f.sentence);
        assert!(f.sentence.contains("10 s or less"), "{}", f.sentence);
        assert!(fit(&chain(&["nginx"], &[]), AppProtocol::Raw).is_none());
    }
}
