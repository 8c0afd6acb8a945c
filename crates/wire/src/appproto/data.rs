//! data/protocols.yaml: each library's documented heartbeat, embedded and read once.
//! The numbers live in the data file (with their source and the date read), not here.
use super::{AppProtocol, Defaults, Pinger};
use serde::Deserialize;
use std::sync::OnceLock;

const PROTOCOLS_YAML: &str = include_str!("../../../../data/protocols.yaml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    protocols: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    id: String,
    pinger: Pinger,
    interval_s: Option<f64>,
    timeout_s: Option<f64>,
    drop_after_s: Option<f64>,
    source: String,
    read: String,
}

/// The embedded table (empty if the file were broken: the tests below forbid it, and
/// no caller panics on a library it cannot judge).
pub fn table() -> &'static [(AppProtocol, Defaults)] {
    static T: OnceLock<Vec<(AppProtocol, Defaults)>> = OnceLock::new();
    T.get_or_init(|| parse(PROTOCOLS_YAML).unwrap_or_default())
}

/// Pure: the file's entries, each checked; an error names the entry and field.
pub fn parse(text: &str) -> Result<Vec<(AppProtocol, Defaults)>, String> {
    let f: File = serde_yaml::from_str(text).map_err(|e| format!("protocols.yaml: {e}"))?;
    let mut out: Vec<(AppProtocol, Defaults)> = Vec::new();
    for e in f.protocols {
        let p = AppProtocol::parse(&e.id)
            .filter(|p| *p != AppProtocol::Raw && p.name() == e.id)
            .ok_or_else(|| format!("protocols.yaml: {:?} is not an --app-protocol name", e.id))?;
        if out.iter().any(|(q, _)| *q == p) {
            return Err(format!("protocols.yaml: {} twice", e.id));
        }
        for (name, v) in [
            ("interval_s", e.interval_s),
            ("timeout_s", e.timeout_s),
            ("drop_after_s", e.drop_after_s),
        ] {
            if v.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
                return Err(format!(
                    "protocols.yaml: {}: {name} is not a positive number",
                    e.id
                ));
            }
        }
        let dated = e.read.len() == 10 && e.read.bytes().filter(|b| *b == b'-').count() == 2;
        if !e.source.starts_with("https://") || !dated {
            return Err(format!(
                "protocols.yaml: {}: source must start with its URL and read be a date (YYYY-MM-DD)",
                e.id
            ));
        }
        // Read once for the life of the process: the strings live as long as the table.
        let d = Defaults {
            pinger: e.pinger,
            interval_s: e.interval_s,
            timeout_s: e.timeout_s,
            drop_after_s: e.drop_after_s,
            source: Box::leak(e.source.into_boxed_str()),
            read: Box::leak(e.read.into_boxed_str()),
        };
        out.push((p, d));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every protocol but raw has exactly one entry, read as written (a list that
    /// cannot drift from `AppProtocol::ALL`).
    #[test]
    fn every_protocol_has_its_entry_with_a_source_and_a_date() {
        let t = parse(PROTOCOLS_YAML).expect("data/protocols.yaml parses");
        let mut ids: Vec<&str> = t.iter().map(|(p, _)| p.name()).collect();
        let mut want: Vec<&str> = AppProtocol::ALL
            .iter()
            .filter(|p| **p != AppProtocol::Raw)
            .map(|p| p.name())
            .collect();
        ids.sort_unstable();
        want.sort_unstable();
        assert_eq!(ids, want);
        for (p, d) in &t {
            assert!(d.interval_s.is_some(), "{}: no interval", p.name());
            assert_ne!(d.pinger, Pinger::Nobody, "{}", p.name());
            assert_eq!(p.defaults(), *d);
        }
        assert_eq!(AppProtocol::Raw.defaults(), Defaults::NONE);
        // The figures the rest of the code and the docs quote.
        let sio = AppProtocol::SocketIo.defaults();
        assert_eq!((sio.interval_s, sio.drop_after_s), (Some(25.0), Some(45.0)));
        assert!(sio.source.contains("socket.io"));
    }

    #[test]
    fn a_broken_entry_is_named() {
        let bad = |body: &str| parse(&format!("protocols:\n  - {body}\n")).unwrap_err();
        let e = bad("{id: socket, pinger: server, source: \"https://x\", read: \"2026-12-06\"}");
        assert!(e.contains("\"socket\""), "{e}");
        let e = bad("{id: mqtt, pinger: client, interval_s: -1, source: \"https://x\", read: \"2026-12-06\"}");
        assert!(e.contains("mqtt: interval_s"), "{e}");
        let e = bad("{id: mqtt, pinger: client, source: \"the docs\", read: \"2026-12-06\"}");
        assert!(e.contains("mqtt: source"), "{e}");
        let e = bad("{id: mqtt, pinger: sometimes, source: \"https://x\", read: \"2026-12-06\"}");
        assert!(e.contains("protocols.yaml"), "{e}");
    }
}
