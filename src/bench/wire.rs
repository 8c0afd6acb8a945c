//! Messages between the orchestrator (`bench fanout`) and the load generator process
//! (`bench loadgen`): JSON lines on the load generator's stdout, plain commands on its stdin.
use serde::{Deserialize, Serialize};

/// Commands the orchestrator writes to the load generator's stdin, one per line.
pub const CMD_CLOSE_SLOW: &str = "close-slow";
pub const CMD_STOP: &str = "stop";
/// `cutoff N`: rounds above N began after the time bound and are outside the measurement
/// window (C1: the hub catching up once the slow clients are closed).
pub const CMD_CUTOFF: &str = "cutoff";
/// `publish`: start rtcheck's own publisher (`--publish ws` or `POST`) now.
pub const CMD_PUBLISH: &str = "publish";

/// One point of the latency distribution: the latency (ms) at a percentile (50 .. 99.99).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    pub percentile: f64,
    pub ms: f64,
}

/// What rtcheck's publisher achieved against its schedule (`--publish ws` / `POST`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PublisherStat {
    /// `ws` or `POST URL` (redacted).
    pub via: String,
    /// Rounds due on the schedule by the end of the run (the stop, or the last round),
    /// the rounds the whole plan has, and the rounds the timer reached before the stop.
    pub scheduled: u64,
    #[serde(default)]
    pub planned: u64,
    pub timer_rounds: u64,
    /// Sends completed, failed (the first error named), and still blocked at the stop.
    pub sent: u64,
    pub failed: u64,
    pub first_error: Option<String>,
    /// The seqs of the failed sends, inclusive ranges (rehearse: not owed to a client).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_seqs: Vec<(u64, u64)>,
    pub unsent: u64,
    /// The timer's lateness behind the schedule (the load generator's own delay).
    pub timer_late_p99_ms: f64,
    pub timer_late_max_ms: f64,
    /// Mean period between the timer's rounds as achieved.
    pub achieved_period_ms: Option<f64>,
    /// Largest delay behind the schedule at a send's completion: the server holding
    /// the sender (its backpressure), not a load generator fault.
    pub backlog_max_ms: f64,
}

/// One line of load generator output.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// While connecting.
    Connecting { done: u64, failed: u64, total: u64 },
    /// Every client has connected (or failed); measurement starts now.
    Connected { connected: u64, failed: u64 },
    /// Periodically while running.
    Progress {
        received: u64,
        /// Healthy clients that received the last round.
        complete: u64,
        /// Healthy clients closed by the server.
        removed: u64,
    },
    /// Final result, then the process exits.
    Result(Box<LoadgenResult>),
}

/// Per-round view from the clients (healthy clients only: slow ones never read).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundStat {
    pub received: u64,
    /// First and last arrival latency in this round (ms); 0 when nobody received it.
    pub first_ms: f64,
    pub last_ms: f64,
    /// Healthy clients that did not receive it because the server had closed them.
    pub missing_removed: u64,
    /// Healthy, still-open clients that did not receive it.
    pub missing_live: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadgenResult {
    /// A coordinated shard's corrected latencies below 0 (counted as 1 us), and of them
    /// those below by more than the clock correction's uncertainty (`clock_uncertainty_us`).
    #[serde(default)]
    pub below_zero: u64,
    #[serde(default)]
    pub below_uncertainty: u64,
    #[serde(default)]
    pub clock_uncertainty_us: Option<u64>,
    pub connections: u64,
    pub slow: u64,
    pub connected: u64,
    pub connect_failed: u64,
    pub connect_errors: Vec<String>,
    /// Latency over healthy clients' samples (receive time - scheduled send time).
    pub samples: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    pub over_100ms: u64,
    pub over_1s: u64,
    /// The distribution at `stats::PERCENTILES`.
    #[serde(default)]
    pub percentiles: Vec<Percentile>,
    /// Index 0 = seq 1.
    pub rounds: Vec<RoundStat>,
    /// Samples with seq above --rounds (another server publishing more): not in `rounds`.
    pub beyond_rounds: u64,
    /// Last round inside the measurement window (from `cutoff`), and the samples of later
    /// rounds left out.
    pub cutoff: Option<u64>,
    pub after_cutoff: u64,
    /// Per-client seq not strictly increasing (duplicates or reordering).
    pub order_violations: u64,
    /// Of them, frames whose seq the client had already received.
    #[serde(default)]
    pub duplicates: u64,
    /// rtcheck's own publisher (`--publish ws` / `POST`); None when the server publishes.
    #[serde(default)]
    pub publisher: Option<PublisherStat>,
    /// Frames we could not decode as the payload.
    pub undecodable: u64,
    /// The first of them, redacted to its shape (`shape`).
    #[serde(default)]
    pub first_undecodable: Option<String>,
    /// Healthy clients closed by the server before the stop command.
    pub removed_healthy: u64,
    /// Of them, those ended by a close frame (the rest by a reset or EOF).
    #[serde(default)]
    pub closed_by_frame: u64,
    /// The close frame of one of them (the one the lowest client index kept, not the
    /// earliest in time: `close 1008 (policy violation), reason "..."`): the cause, when
    /// the server refused the clients after the handshake.
    #[serde(default)]
    pub first_close: Option<String>,
    /// Client sockets whose TCP_NODELAY was read back with getsockopt, and how many were off.
    pub nodelay_checked: u64,
    pub nodelay_off: u64,
    /// SO_RCVBUF read back on slow clients (the kernel doubles what was asked).
    pub slow_rcvbuf: Option<u64>,
    /// What the server sent, whatever it was asked: sizes and scheduled times seen.
    #[serde(default)]
    pub schedule: ScheduleSeen,
    pub cores: u64,
    pub cpu_connect_s: f64,
    pub cpu_run_s: f64,
    pub wall_run_s: f64,
    /// The healthy clients' latency histogram, V2 base64 (`bench fanout --shard`'s
    /// result carries it for `bench merge`).
    #[serde(default)]
    pub histogram: Option<String>,
    /// The load generator's own RSS before its clients and once they were connected
    /// (its cost per held connection, issue 37).
    #[serde(default)]
    pub rss_start_bytes: Option<u64>,
    #[serde(default)]
    pub rss_connected_bytes: Option<u64>,
}

/// A frame that is not the payload, shown without its content (a foreign server's frame
/// may carry anything): a JSON object as its keys and value kinds, other text as its
/// length and first characters' classes, binary as its length and first bytes in hex.
pub fn shape(payload: &[u8]) -> String {
    const KEYS: usize = 8;
    let n = payload.len();
    let Ok(text) = std::str::from_utf8(payload) else {
        let hex: Vec<String> = payload.iter().take(8).map(|b| format!("{b:02x}")).collect();
        return format!("{n} B binary, starting {}", hex.join(" "));
    };
    if let Ok(serde_json::Value::Object(m)) = serde_json::from_str::<serde_json::Value>(text) {
        let kind = |v: &serde_json::Value| match v {
            serde_json::Value::Null => "null",
            serde_json::Value::Bool(_) => "bool",
            serde_json::Value::Number(_) => "number",
            serde_json::Value::String(_) => "string",
            serde_json::Value::Array(_) => "array",
            serde_json::Value::Object(_) => "object",
        };
        let mut fields: Vec<String> = m
            .iter()
            .take(KEYS)
            .map(|(k, v)| {
                let k: String = k.chars().take(24).filter(|c| !c.is_control()).collect();
                format!("{k}: {}", kind(v))
            })
            .collect();
        if m.len() > KEYS {
            fields.push(format!("… {} more", m.len() - KEYS));
        }
        return format!("{n} B JSON {{{}}}", fields.join(", "));
    }
    format!("{n} B text, not a JSON object")
}

/// Payload sizes and the earliest and latest (seq, scheduled ns) frames seen: enough to
/// tell the server's real size and rate from what the run asked for (`--server`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ScheduleSeen {
    pub bytes_min: Option<u64>,
    pub bytes_max: Option<u64>,
    pub first: Option<(u64, u64)>,
    pub last: Option<(u64, u64)>,
}

impl ScheduleSeen {
    #[inline]
    pub fn see(&mut self, len: u64, seq: u64, sched_ns: u64) {
        self.bytes_min = Some(self.bytes_min.map_or(len, |m| m.min(len)));
        self.bytes_max = Some(self.bytes_max.map_or(len, |m| m.max(len)));
        if self.first.is_none_or(|(s, _)| seq < s) {
            self.first = Some((seq, sched_ns));
        }
        if self.last.is_none_or(|(s, _)| seq > s) {
            self.last = Some((seq, sched_ns));
        }
    }

    pub fn merge(&mut self, o: &ScheduleSeen) {
        for (len, seq) in [(o.bytes_min, o.first), (o.bytes_max, o.last)] {
            if let (Some(len), Some((seq, ns))) = (len, seq) {
                self.see(len, seq, ns);
            }
        }
    }

    /// The server's period between rounds (ms), from scheduled times; None below 2 seqs.
    pub fn period_ms(&self) -> Option<f64> {
        let ((s0, t0), (s1, t1)) = (self.first?, self.last?);
        (s1 > s0).then(|| t1.saturating_sub(t0) as f64 / 1e6 / (s1 - s0) as f64)
    }
}

#[cfg(test)]
mod schedule_tests {
    use super::ScheduleSeen;

    #[test]
    fn period_and_sizes_from_frames_in_any_order() {
        let mut a = ScheduleSeen::default();
        a.see(1024, 5, 1_000_000_000);
        a.see(1024, 3, 600_000_000);
        let mut b = ScheduleSeen::default();
        b.see(512, 11, 2_200_000_000);
        a.merge(&b);
        assert_eq!((a.bytes_min, a.bytes_max), (Some(512), Some(1024)));
        let p = a.period_ms().unwrap();
        assert!((p - 200.0).abs() < 1e-9, "{p}");
        assert_eq!(ScheduleSeen::default().period_ms(), None);
    }
}

#[cfg(test)]
mod shape_tests {
    use super::shape;

    #[test]
    fn shows_the_form_never_the_content() {
        let s = shape(br#"{"type":"tick","n":1,"token":"s3cret"}"#);
        assert_eq!(s, "38 B JSON {n: number, token: string, type: string}");
        assert!(!s.contains("s3cret"));
        assert_eq!(shape(b"hello s3cret"), "12 B text, not a JSON object");
        assert_eq!(shape(&[0xff, 0, 1]), "3 B binary, starting ff 00 01");
        let many: String = format!(
            "{{{}}}",
            (0..10)
                .map(|i| format!("\"k{i}\":{i}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert!(shape(many.as_bytes()).ends_with("… 2 more}"));
    }
}
