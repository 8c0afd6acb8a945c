//! Sizing of the replay buffers and memory, from the profile and the reference numbers.
use crate::evidence;
use crate::evidence::EvidenceRef;
use crate::profile::Profile;
use serde::{Deserialize, Serialize};

/// All byte figures are integers (bytes, decimal units when printed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sizing {
    /// Shared ring buffer: max_disconnect x rate x size (seq-ring delivery).
    pub ring_bytes: u64,
    /// What one disconnected client's session holds: the same product (session-ack delivery).
    pub session_bytes_per_client: u64,
    /// Every client disconnected at once: connections x session_bytes_per_client.
    pub sessions_worst_case_bytes: u64,
    /// Connections per machine x the reference RSS per idle connection.
    pub ram_bytes_per_machine: u64,
    pub connections_per_machine: u64,
    /// The per-connection figure used: the profile's measured `memory_per_connection`
    /// when it has one, else the seed's reference (not measured on this host).
    pub per_connection_bytes: u64,
    /// Where `per_connection_bytes` comes from, in words (which reference was used).
    #[serde(default)]
    pub per_connection_source: String,
    /// Messages a disconnected client must get back: max_disconnect x rate, whole.
    pub messages_to_replay: u64,
    /// Every session of one machine at once: connections per machine x a session.
    #[serde(default)]
    pub sessions_per_machine_bytes: u64,
    /// The memory sessions may take on one machine ([`SESSION_BUDGET`]).
    #[serde(default)]
    pub session_budget_bytes: u64,
    /// Sessions past the budget: per-user data belongs in a durable inbox, not in memory.
    #[serde(default)]
    pub durable_inbox: bool,
    /// Keys of the figures that overflowed u64 and hold u64::MAX: a floor, not a figure.
    #[serde(default)]
    pub saturated: Vec<String>,
    pub evidence: Vec<EvidenceRef>,
}

impl Sizing {
    pub fn is_saturated(&self, key: &str) -> bool {
        self.saturated.iter().any(|k| k == key)
    }
}

/// A byte figure for people: a saturated one says so instead of printing u64::MAX.
pub fn fmt_figure(bytes: u64, saturated: bool) -> String {
    if saturated {
        "> 18.4 EB (saturated)".into()
    } else {
        rtcheck_base::units::fmt_bytes(bytes)
    }
}

/// The memory per machine sessions may hold before per-user data goes to a durable
/// inbox: `rtcheck serve`'s own default for sessions when it cannot read MemAvailable
/// (a quarter of a 4 GiB machine; `--session-memory`).
pub const SESSION_BUDGET: u64 = 1 << 30;

/// The budget as set: `1 GiB` (binary, as `--session-memory` takes it), else bytes.
pub fn fmt_budget(b: u64) -> String {
    if b > 0 && b.is_multiple_of(1 << 30) {
        format!("{} GiB", b >> 30)
    } else {
        rtcheck_base::units::fmt_bytes(b)
    }
}

/// Whole messages a client misses in max_disconnect (a buffer holds whole messages).
fn messages(p: &Profile) -> f64 {
    // The epsilon keeps 0.1 s x 30 msg/s at 3 messages, not 4.
    (p.max_disconnect.as_secs_f64() * p.rate - 1e-9)
        .ceil()
        .max(0.0)
}

/// messages x size; None when it does not fit in u64.
fn replay_bytes(p: &Profile) -> Option<u64> {
    let bytes = messages(p) * p.size as f64;
    (bytes < u64::MAX as f64).then(|| to_u64(bytes))
}

fn to_u64(v: f64) -> u64 {
    if v.is_nan() || v <= 0.0 {
        0
    } else if v >= u64::MAX as f64 {
        u64::MAX
    } else {
        v as u64
    }
}

/// The seed's figure, cited as such: what sizing uses when nothing was measured.
pub fn seed_source() -> String {
    "the seed's reference host (Go + gorilla/websocket, idle, default buffers; TLS and permessage-deflate not measured), not this server: measure yours with `rtcheck bench idle --server URL --save PROFILE`".into()
}

/// Bytes per connection and where they come from: measured on the user's server (the
/// profile's `memory_per_connection`), else the seed's Go figure.
pub fn per_connection(p: &Profile) -> (u64, String) {
    match p
        .memory_per_connection
        .as_ref()
        .and_then(|m| Some((m.sizing()?.0, m.reference()?)))
    {
        Some((b, r)) => (b, r),
        None => (
            evidence::num("conn-ram", "rss_per_conn") as u64,
            seed_source(),
        ),
    }
}

pub fn size(p: &Profile) -> Sizing {
    let (per_conn, source) = per_connection(p);
    let cpm = p.connections_per_machine();
    let per_client = replay_bytes(p);
    let worst = per_client.and_then(|b| p.connections.checked_mul(b));
    let per_machine = per_client.and_then(|b| cpm.checked_mul(b));
    let ram = cpm.checked_mul(per_conn);
    let saturated = [
        ("ring_bytes", per_client),
        ("session_bytes_per_client", per_client),
        ("sessions_worst_case_bytes", worst),
        ("sessions_per_machine_bytes", per_machine),
        ("ram_bytes_per_machine", ram),
    ]
    .iter()
    .filter(|(_, v)| v.is_none())
    .map(|(k, _)| k.to_string())
    .collect();
    let max = |v: Option<u64>| v.unwrap_or(u64::MAX);
    Sizing {
        ring_bytes: max(per_client),
        session_bytes_per_client: max(per_client),
        sessions_worst_case_bytes: max(worst),
        ram_bytes_per_machine: max(ram),
        connections_per_machine: cpm,
        per_connection_bytes: per_conn,
        per_connection_source: source,
        messages_to_replay: to_u64(messages(p)),
        sessions_per_machine_bytes: max(per_machine),
        session_budget_bytes: SESSION_BUDGET,
        durable_inbox: per_machine.is_none_or(|b| b > SESSION_BUDGET),
        saturated,
        evidence: vec![
            evidence::reference("ring-sizing"),
            evidence::reference("session-ack"),
            evidence::reference("session-expiry"),
            evidence::reference("conn-ram"),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn profile(connections: u64, machines: u64, rate: f64, size: u64, secs: f64) -> Profile {
        Profile {
            connections,
            machines,
            rate,
            size,
            max_disconnect: Duration::from_secs_f64(secs),
            ..Profile::default()
        }
    }

    #[test]
    fn reproduces_the_reference_830_mb_for_10000_sessions() {
        // 83 KB per client per disconnect (session-ack) x 10,000 clients = 830 MB.
        let per_client = evidence::num("session-ack", "bytes_per_client");
        let clients = evidence::num("session-expiry", "clients") as u64;
        // 1 s x 83 msg/s x 1,000 B = 83,000 B.
        let s = size(&profile(clients, 1, per_client / 1000.0, 1000, 1.0));
        assert_eq!(s.session_bytes_per_client, 83_000);
        assert_eq!(
            s.sessions_worst_case_bytes,
            evidence::num("session-expiry", "bytes") as u64
        );
    }

    #[test]
    fn ring_is_disconnect_times_rate_times_size() {
        let s = size(&profile(10, 1, 10.0, 1024, 3.0));
        assert_eq!(s.ring_bytes, 30_720);
        assert_eq!(s.messages_to_replay, 30);
        // Whole messages: 0.5 s x 3 msg/s = 1.5 -> 2 messages of 1 B.
        assert_eq!(size(&profile(1, 1, 3.0, 1, 0.5)).ring_bytes, 2);
        // The ring is the messages it replays times their size, never a fraction of one.
        let s = size(&profile(1, 1, 1.0, 2000, 0.3));
        assert_eq!((s.messages_to_replay, s.ring_bytes), (1, 2000));
        assert_eq!(size(&profile(1, 1, 30.0, 1, 0.1)).messages_to_replay, 3);
    }

    #[test]
    fn ram_per_machine_uses_the_27_kb_reference() {
        // 10,000 connections on one machine: 270 MB (the article measured 280 MB).
        let s = size(&profile(10_000, 1, 1.0, 1, 1.0));
        assert_eq!(s.per_connection_bytes, 27_000);
        assert_eq!(s.ram_bytes_per_machine, 270_000_000);
        // Split over 3 machines, rounded up per machine.
        let s = size(&profile(10_000, 3, 1.0, 1, 1.0));
        assert_eq!(s.connections_per_machine, 3_334);
        assert_eq!(s.ram_bytes_per_machine, 3_334 * 27_000);
        assert!(s
            .per_connection_source
            .starts_with("the seed's reference host"));
    }

    #[test]
    fn ram_per_machine_uses_the_measured_figure_when_the_profile_has_one() {
        let mut p = profile(10_000, 1, 1.0, 1, 1.0);
        p.memory_per_connection = Some(crate::profile::MemoryPerConnection {
            plain: Some(8_000),
            tls: Some(30_000),
            deflate: None,
            activity: "10/s".into(),
            how: "rtcheck bench idle --server ws://127.0.0.1:1/ws on h".into(),
        });
        let s = size(&p);
        assert_eq!(s.per_connection_bytes, 30_000);
        assert_eq!(s.ram_bytes_per_machine, 300_000_000);
        assert!(
            s.per_connection_source
                .contains("(tls, 10/s) by rtcheck bench idle --server"),
            "{}",
            s.per_connection_source
        );
    }

    #[test]
    fn sessions_past_the_budget_go_to_a_durable_inbox() {
        // 20,000 users on two machines, 1 h x 1 msg/s x 200 B = 720 KB a session:
        // 7.2 GB a machine, past the 1 GiB budget; 3 s of it is 6 MB, within.
        let s = size(&profile(20_000, 2, 1.0, 200, 3600.0));
        assert_eq!(s.sessions_per_machine_bytes, 10_000 * 720_000);
        assert!(s.durable_inbox, "7.2 GB per machine is past 1 GiB");
        let s = size(&profile(20_000, 2, 1.0, 200, 3.0));
        assert_eq!(s.sessions_per_machine_bytes, 10_000 * 600);
        assert!(!s.durable_inbox);
        assert_eq!(s.session_budget_bytes, SESSION_BUDGET);
    }

    #[test]
    fn huge_inputs_saturate_instead_of_panicking() {
        let s = size(&profile(u64::MAX, 1, 1e300, u64::MAX, 1e6));
        assert_eq!(s.ring_bytes, u64::MAX);
        assert_eq!(s.sessions_worst_case_bytes, u64::MAX);
        assert_eq!(s.ram_bytes_per_machine, u64::MAX);
        assert_eq!(
            s.saturated,
            [
                "ring_bytes",
                "session_bytes_per_client",
                "sessions_worst_case_bytes",
                "sessions_per_machine_bytes",
                "ram_bytes_per_machine"
            ]
        );
        assert_eq!(fmt_figure(u64::MAX, true), "> 18.4 EB (saturated)");
    }

    #[test]
    fn the_largest_valid_profile_saturates_only_the_worst_case() {
        // 1 day x 1e6 msg/s x 64 MiB fits in u64; x 100 million connections does not
        // (on one machine, nor the machine's share).
        let s = size(&profile(100_000_000, 1, 1e6, 64 << 20, 86_400.0));
        assert_eq!(
            s.saturated,
            ["sessions_worst_case_bytes", "sessions_per_machine_bytes"]
        );
        assert!(s.durable_inbox);
        assert!(s.is_saturated("sessions_worst_case_bytes"));
        assert!(!s.is_saturated("ring_bytes"));
        assert_eq!(s.sessions_worst_case_bytes, u64::MAX);
        assert!(size(&profile(10, 1, 10.0, 1024, 3.0)).saturated.is_empty());
    }
}
