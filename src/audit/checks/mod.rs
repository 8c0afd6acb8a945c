//! The audit checks: pure functions of (Workload, Host) -> Finding, one file per group.
//! Ids are a contract (users grep, suppress and alert on them): never rename one.
use super::host::Host;
use crate::evidence::{self, fmt_num};
use crate::findings::{Finding, Fix, Status};
use crate::profile::{Loss, Profile, Role};
use rtcheck_wire::transport::Transport;
use std::collections::BTreeMap;
use std::time::Duration;

mod fds;
mod ids;
pub mod net;
mod resources;
pub(crate) mod tcp;

pub use ids::CheckId;

/// The workload as the checks see it: defaults resolved, per-machine share computed.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    /// Connections this host carries (total / machines, rounded up).
    pub connections: u64,
    pub total_connections: u64,
    pub machines: u64,
    pub transport: Transport,
    pub role: Role,
    pub rate: f64,
    pub size: u64,
    pub max_disconnect: Duration,
    pub loss: Option<Loss>,
    /// The server's own heartbeat interval, when the profile says.
    pub ping: Option<Duration>,
    /// Bytes per connection measured on this server (`bench idle --server --save`) and
    /// the variant it is; None: the seed's figure is used, and said.
    pub measured_per_conn: Option<(u64, &'static str)>,
}

/// Transport audited when the profile names none.
pub const DEFAULT_TRANSPORT: Transport = Transport::Websocket;

impl Workload {
    pub fn of(p: &Profile) -> Workload {
        Workload {
            connections: p.connections_per_machine(),
            total_connections: p.connections,
            machines: p.machines.max(1),
            transport: p.transport.unwrap_or(DEFAULT_TRANSPORT),
            role: p.role,
            rate: p.rate,
            size: p.size,
            max_disconnect: p.max_disconnect,
            loss: p.loss,
            ping: p.ping,
            measured_per_conn: p.memory_per_connection.as_ref().and_then(|m| m.sizing()),
        }
    }

    /// The message rate and size the load is judged at: "at 10 msg/s of 1 KiB per
    /// connection (default: --rate, --size or the profile's rate:/size: set it)". Printed in
    /// every finding that depends on them, so a verdict never rests on an unseen default.
    pub fn basis(&self) -> String {
        let default =
            self.rate == crate::profile::DEFAULT_RATE && self.size == crate::profile::DEFAULT_SIZE;
        format!(
            "at {} msg/s of {} per connection{}",
            crate::evidence::fmt_num(self.rate),
            size_text(self.size),
            if default {
                " (default; set --rate and --size, or rate: and size: in the profile)"
            } else {
                ""
            }
        )
    }

    /// File descriptors (and tracked flows) per connection: a proxy holds the client side
    /// and the upstream side.
    pub fn fds_per_connection(&self) -> u64 {
        match self.role {
            Role::Proxy => 2,
            Role::Server | Role::Loadgen => 1,
        }
    }

    /// "10,000 websocket connections (role server)", naming the per-machine split.
    pub fn describe(&self) -> String {
        let split = if self.machines > 1 {
            format!(
                " ({} over {} machines)",
                fmt_num(self.total_connections as f64),
                self.machines
            )
        } else {
            String::new()
        };
        format!(
            "{} {} connections{split}, role {}",
            fmt_num(self.connections as f64),
            self.transport.name(),
            self.role.as_str()
        )
    }
}

/// Static facts of a check: its stable id, title, evidence and live verification.
pub struct Meta {
    pub id: CheckId,
    pub title: &'static str,
    pub evidence: &'static [&'static str],
    pub verify: Option<&'static str>,
    /// Every Linux host answers it from /proc and /sys: skipped, it means the audit read
    /// the wrong place (e.g. an empty --procfs), so CI must not pass. False for a check
    /// whose absence is a fine answer (conntrack: the module is not loaded).
    pub required: bool,
    pub run: fn(&Workload, &Host) -> Finding,
}

impl Meta {
    /// Its static facts; `explain ID` adds the rule and fixes computed for a host.
    pub fn info(&self) -> crate::findings::CheckInfo {
        crate::findings::CheckInfo {
            id: self.id.as_str().into(),
            kind: "audit check".into(),
            title: self.title.into(),
            why: String::new(),
            fix: String::new(),
            evidence: crate::findings::evidence_ids(self.evidence),
            see: format!(
                "docs/audit.md; computed for a host: rtcheck explain {}",
                self.id
            ),
        }
    }
}

/// Every check, in report order.
pub const CHECKS: &[Meta] = &[
    fds::FD_LIMIT,
    fds::FD_SYSTEM,
    net::EPHEMERAL_PORTS,
    net::TIME_WAIT,
    tcp::TCP_WMEM,
    tcp::TCP_KEEPALIVE,
    net::SOMAXCONN,
    resources::MEMORY,
    resources::CPU,
    net::CONNTRACK,
];

pub fn ids() -> Vec<&'static str> {
    CHECKS.iter().map(|c| c.id.as_str()).collect()
}

/// The checks every Linux host can answer (`Meta::required`).
pub fn required_ids() -> Vec<&'static str> {
    CHECKS
        .iter()
        .filter(|c| c.required)
        .map(|c| c.id.as_str())
        .collect()
}

/// Run every check; ids in `skip` are shown as skipped by request, never hidden.
/// Unknown ids in `skip` are ignored here (the CLI rejects them before).
pub fn run_all(profile: &Profile, host: &Host, skip: &[String]) -> Vec<Finding> {
    let w = Workload::of(profile);
    CHECKS
        .iter()
        .map(|c| {
            let mut f = (c.run)(&w, host);
            if skip.iter().any(|s| s == c.id.as_str()) {
                // Keep what was observed: the user sees what they chose to ignore.
                let was = f.status;
                f.status = Status::Skip;
                f.reason = Some(format!(
                    "skipped by request (--skip {}); the check alone says {}",
                    c.id,
                    was.as_str()
                ));
            }
            f
        })
        .collect()
}

/// Builder shared by the checks so every finding has the same shape.
pub(crate) struct Draft<'a> {
    meta: &'a Meta,
    status: Status,
    observed: String,
    expected: String,
    rule: String,
    reason: Option<String>,
    evidence: Vec<&'static str>,
    fix: Fix,
    numbers: BTreeMap<String, f64>,
}

impl<'a> Draft<'a> {
    pub fn new(meta: &'a Meta) -> Self {
        Draft {
            meta,
            status: Status::Pass,
            observed: String::new(),
            expected: String::new(),
            rule: String::new(),
            reason: None,
            evidence: meta.evidence.to_vec(),
            fix: Fix::default(),
            numbers: BTreeMap::new(),
        }
    }
    pub fn status(mut self, s: Status) -> Self {
        self.status = s;
        self
    }
    pub fn observed(mut self, s: impl Into<String>) -> Self {
        self.observed = s.into();
        self
    }
    pub fn expected(mut self, s: impl Into<String>) -> Self {
        self.expected = s.into();
        self
    }
    pub fn rule(mut self, s: impl Into<String>) -> Self {
        self.rule = s.into();
        self
    }
    pub fn reason(mut self, s: impl Into<String>) -> Self {
        self.reason = Some(s.into());
        self
    }
    pub fn evidence(mut self, ids: &[&'static str]) -> Self {
        for id in ids {
            if !self.evidence.contains(id) {
                self.evidence.push(id);
            }
        }
        self
    }
    pub fn fix(
        mut self,
        summary: impl Into<String>,
        runtime: Vec<String>,
        persistent: Vec<String>,
    ) -> Self {
        self.fix = Fix {
            summary: summary.into(),
            runtime,
            persistent,
        };
        self
    }
    pub fn num(mut self, name: &str, v: f64) -> Self {
        self.numbers.insert(name.to_string(), v);
        self
    }
    pub fn build(self) -> Finding {
        Finding {
            location: None,
            id: self.meta.id.as_str().to_string(),
            title: self.meta.title.to_string(),
            status: self.status,
            observed: self.observed,
            expected: self.expected,
            rule: self.rule,
            reason: self.reason,
            evidence: self
                .evidence
                .iter()
                .map(|id| evidence::reference(id))
                .collect(),
            fix: self.fix,
            verify: self.meta.verify.map(str::to_string),
            verification: None,
            numbers: self.numbers,
        }
    }
}

/// A check that cannot run: skip with the reason (names the file).
pub(crate) fn skipped(
    meta: &Meta,
    reason: impl Into<String>,
    expected: impl Into<String>,
) -> Finding {
    Draft::new(meta)
        .status(Status::Skip)
        .observed("not read")
        .expected(expected)
        .reason(reason)
        .build()
}

/// Runtime and persistent fix for sysctls: `sysctl -w` now, a file in /etc/sysctl.d/.
pub(crate) fn sysctl_fix(file: &str, settings: &[(&str, String)]) -> (Vec<String>, Vec<String>) {
    let runtime = settings
        .iter()
        .map(|(k, v)| {
            if v.contains(' ') {
                format!("sudo sysctl -w {k}=\"{v}\"")
            } else {
                format!("sudo sysctl -w {k}={v}")
            }
        })
        .collect();
    // One quoted word per line of the file (printf repeats its format): a long fix then
    // breaks between lines, never inside one.
    let lines: Vec<String> = settings
        .iter()
        .map(|(k, v)| format!("'{k} = {v}'"))
        .collect();
    let persistent = vec![
        format!(
            "printf '%s\\n' {} | sudo tee /etc/sysctl.d/90-rtcheck-{file}.conf",
            lines.join(" ")
        ),
        "sudo sysctl --system".to_string(),
    ];
    (runtime, persistent)
}

/// Integer with thousands separators, exact for every u64 (f64 is not above 2^53).
pub(crate) fn n(v: u64) -> String {
    rtcheck_base::units::fmt_thousands(v)
}

/// A message size as given: whole KiB / MiB as such (1 KiB, 64 KiB), else bytes.
pub(crate) fn size_text(v: u64) -> String {
    match v {
        v if v >= 1 << 20 && v % (1 << 20) == 0 => format!("{} MiB", v >> 20),
        v if v >= 1 << 10 && v % (1 << 10) == 0 => format!("{} KiB", v >> 10),
        v => format!("{} B", rtcheck_base::units::fmt_thousands(v)),
    }
}

pub(crate) fn bytes(v: u64) -> String {
    rtcheck_base::units::fmt_bytes(v)
}

/// "unlimited" for the u64::MAX sentinel of an unlimited rlimit.
pub(crate) fn lim(v: u64) -> String {
    if v == u64::MAX {
        "unlimited".into()
    } else {
        n(v)
    }
}

pub(crate) fn pct(part: f64, whole: f64) -> f64 {
    if whole <= 0.0 {
        return f64::INFINITY;
    }
    (part / whole * 1000.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::host::*;

    /// A comfortable host; each test degrades one field.
    fn host() -> Host {
        Host {
            process: "self".into(),
            nofile: Ok(NofileLimit {
                soft: 100_000,
                hard: 100_000,
            }),
            open_fds: Ok(5),
            file_max: Ok(1_000_000),
            nr_open: Ok(1_048_576),
            file_nr: Ok(FileNr {
                allocated: 1000,
                max: 1_000_000,
            }),
            port_range: Ok(PortRange {
                low: 32768,
                high: 60999,
            }),
            reserved_in_range: Ok(0),
            tcp_tw_reuse: Ok(2),
            sockstat: Ok(Sockstat {
                tcp_inuse: 1,
                tcp_tw: 0,
            }),
            tcp_wmem: Ok([4096, 16384, 65536]),
            tcp_mem: Ok([1 << 20, 1 << 21, 1 << 22]),
            page_size: 4096,
            keepalive: Ok(Keepalive {
                time_s: 60,
                intvl_s: 10,
                probes: 6,
            }),
            somaxconn: Ok(65535),
            tcp_max_syn_backlog: Ok(65535),
            meminfo: Ok(MemInfo {
                total: 64 << 30,
                available: 60 << 30,
            }),
            cgroup_memory: Ok(CgroupMemory {
                limit: None,
                file: "memory.max".into(),
                version: 2,
            }),
            affinity: Ok(Affinity {
                list: "0-31".into(),
                count: 32,
            }),
            cgroup_cpu: Ok(CgroupCpu {
                cpus: None,
                file: "cpu.max".into(),
                version: 2,
            }),
            conntrack: Ok(None),
            conntrack_file: "nf_conntrack_max".into(),
            group: None,
            backlogs: Err("not read".into()),
        }
    }

    fn status(p: &Profile, h: &Host, id: &str) -> Status {
        run_all(p, h, &[])
            .into_iter()
            .find(|f| f.id == id)
            .unwrap()
            .status
    }

    #[test]
    fn comfortable_host_passes_everything_but_conntrack_skips() {
        let fs = run_all(&Profile::default(), &host(), &[]);
        for f in &fs {
            let want = if f.id == "conntrack" {
                Status::Skip
            } else {
                Status::Pass
            };
            assert_eq!(f.status, want, "{}: {}", f.id, f.observed);
        }
    }

    #[test]
    fn every_check_but_conntrack_is_required() {
        let mut want = ids();
        want.retain(|id| *id != "conntrack");
        assert_eq!(required_ids(), want);
    }

    #[test]
    fn fd_limit_boundaries() {
        let p = Profile::default(); // 10,000: needed 10,000, recommended 12,064
        let mut h = host();
        for (soft, want) in [
            (9_999, Status::Fail),
            (10_000, Status::Warn),
            (12_063, Status::Warn),
            (12_064, Status::Pass),
        ] {
            h.nofile = Ok(NofileLimit {
                soft,
                hard: 100_000,
            });
            assert_eq!(status(&p, &h, "fd-limit"), want, "soft {soft}");
        }
    }

    #[test]
    fn memory_boundaries_and_cgroup_below_mem_available() {
        let p = Profile::default(); // need 270 MB
        let mut h = host();
        for (limit, want) in [
            (269_999_999u64, Status::Fail),
            (270_000_000, Status::Warn),
            (539_999_999, Status::Warn),
            (540_000_000, Status::Pass),
        ] {
            h.cgroup_memory = Ok(CgroupMemory {
                limit: Some(limit),
                file: "memory.max".into(),
                version: 2,
            });
            assert_eq!(status(&p, &h, "memory"), want, "limit {limit}");
        }
    }

    #[test]
    fn ports_time_wait_keepalive_and_per_machine_share() {
        let mut p = Profile {
            role: Role::Loadgen,
            connections: 14_116, // 2 x 14,116 = 28,232: exactly the range
            ..Profile::default()
        };
        let mut h = host();
        assert_eq!(status(&p, &h, "ephemeral-ports"), Status::Pass);
        p.connections += 1;
        assert_eq!(status(&p, &h, "ephemeral-ports"), Status::Warn);
        p.connections = 28_233;
        assert_eq!(status(&p, &h, "ephemeral-ports"), Status::Fail);
        // Over two machines each host carries half.
        p.machines = 2;
        assert_eq!(status(&p, &h, "ephemeral-ports"), Status::Warn);

        h.sockstat = Ok(Sockstat {
            tcp_inuse: 1,
            tcp_tw: 14_116,
        });
        assert_eq!(status(&p, &h, "time-wait"), Status::Pass);
        h.sockstat = Ok(Sockstat {
            tcp_inuse: 1,
            tcp_tw: 14_117,
        });
        assert_eq!(status(&p, &h, "time-wait"), Status::Warn);

        h.keepalive = Ok(Keepalive {
            time_s: 240,
            intvl_s: 10,
            probes: 6,
        });
        assert_eq!(status(&p, &h, "tcp-keepalive"), Status::Pass);
        h.keepalive = Ok(Keepalive {
            time_s: 241,
            intvl_s: 10,
            probes: 6,
        });
        assert_eq!(status(&p, &h, "tcp-keepalive"), Status::Warn);
    }

    #[test]
    fn tcp_wmem_against_tcp_mem_and_memory() {
        let p = Profile::default();
        let mut h = host();
        // 4 MB x 10,000 = 41.9 GB > tcp_mem (16 GB), pinned 16 GB < 30 GB: warn.
        h.tcp_wmem = Ok([4096, 16384, 4_194_304]);
        assert_eq!(status(&p, &h, "tcp-wmem"), Status::Warn);
        // Kernel may pin more than is available: fail.
        h.meminfo = Ok(MemInfo {
            total: 16 << 30,
            available: 8 << 30,
        });
        assert_eq!(status(&p, &h, "tcp-wmem"), Status::Fail);
    }

    fn finding(p: &Profile, h: &Host, id: &str) -> Finding {
        run_all(p, h, &[]).into_iter().find(|f| f.id == id).unwrap()
    }

    #[test]
    fn role_server_ports_and_time_wait_follow_one_rule() {
        let mut h = host();
        // 57% of the range in TIME_WAIT: a proxy/loadgen warns, a server does not need ports.
        h.sockstat = Ok(Sockstat {
            tcp_inuse: 1,
            tcp_tw: 16_100,
        });
        for (role, want) in [
            (Role::Server, Status::Pass),
            (Role::Proxy, Status::Warn),
            (Role::Loadgen, Status::Warn),
        ] {
            let p = Profile {
                role,
                connections: 1000,
                ..Profile::default()
            };
            let tw = finding(&p, &h, "time-wait");
            assert_eq!(tw.status, want, "{role:?}: {}", tw.rule);
            if role == Role::Server {
                assert_eq!(status(&p, &h, "ephemeral-ports"), Status::Pass);
                assert!(tw.rule.contains("role server") && tw.rule.contains("pass"));
                assert!(tw.expected.contains("role server"));
            } else {
                assert!(tw.rule.contains("warn above 50%"));
            }
        }
    }

    #[test]
    fn keepalive_verdict_per_transport_and_server_heartbeat() {
        let mut h = host();
        h.keepalive = Ok(Keepalive {
            time_s: 7200,
            intvl_s: 75,
            probes: 9,
        }); // 7,875 s
        let at = |t: Transport, ping: Option<u64>| {
            let p = Profile {
                transport: Some(t),
                ping: ping.map(Duration::from_secs),
                ..Profile::default()
            };
            finding(&p, &h, "tcp-keepalive")
        };
        // Nothing pings: only keepalive notices, 7,875 s > 300 s: warn, and the rule says so.
        for t in [Transport::Websocket, Transport::Sse] {
            let f = at(t, None);
            assert_eq!(f.status, Status::Warn);
            assert!(f.rule.contains("warn above 300 s"), "{}", f.rule);
        }
        // The server pings under the bound: pass, and the rule says why.
        for t in [Transport::Websocket, Transport::Sse] {
            let f = at(t, Some(25));
            assert_eq!(f.status, Status::Pass, "{}", f.rule);
            assert!(f.rule.contains("pass whatever keepalive is"), "{}", f.rule);
        }
        // A heartbeat above the bound does not count.
        assert_eq!(at(Transport::Websocket, Some(301)).status, Status::Warn);
        // Polling: the printed rule is the pass rule, not "warn above 300 s".
        let f = at(Transport::Polling, None);
        assert_eq!(f.status, Status::Pass);
        assert!(f.rule.contains("Transport polling") && !f.rule.contains("warn above"));
        // SSE has no pong: its fix never cites pong wait; WebSocket's does.
        let sse = at(Transport::Sse, None);
        let text = format!("{} {:?}", sse.fix.summary, sse.fix.persistent);
        assert!(!text.to_lowercase().contains("pong"), "{text}");
        assert!(text.contains("comment line"));
        assert!(at(Transport::Websocket, None)
            .fix
            .summary
            .contains("pongWait"));
    }

    #[test]
    fn polling_is_not_charged_websocket_memory_nor_push_cpu() {
        let mut h = host();
        h.cgroup_memory = Ok(CgroupMemory {
            limit: Some(300_000_000),
            file: "memory.max".into(),
            version: 2,
        });
        h.affinity = Ok(Affinity {
            list: "0".into(),
            count: 1,
        });
        let p = |t: Transport| Profile {
            transport: Some(t),
            connections: 100_000,
            rate: 10.0,
            ..Profile::default()
        };
        // 100,000 WebSocket connections x 27 KB = 2.7 GB > 300 MB: fail; 1 CPU for a
        // 1,000,000 msg/s fan-out: fail.
        assert_eq!(status(&p(Transport::Websocket), &h, "memory"), Status::Fail);
        assert_eq!(status(&p(Transport::Websocket), &h, "cpu"), Status::Fail);
        // Without a measured figure the seed's Go figure is used, and named as such.
        let seed = finding(&p(Transport::Websocket), &h, "memory");
        assert!(
            seed.rule.contains("the seed's Go + gorilla reference"),
            "{}",
            seed.rule
        );
        // Measured on the user's server (bench idle --server --save): that figure, said.
        let mut measured = p(Transport::Websocket);
        measured.memory_per_connection = Some(crate::profile::MemoryPerConnection {
            plain: Some(2_000),
            tls: None,
            deflate: None,
            activity: "idle".into(),
            how: "rtcheck bench idle --server ws://127.0.0.1:1/ws on h".into(),
        });
        let m = finding(&measured, &h, "memory");
        assert_eq!(m.numbers["per_connection_bytes"], 2_000.0, "{}", m.rule);
        assert!(
            m.rule
                .contains("measured on your server, its plain variant"),
            "{}",
            m.rule
        );
        // 200 MB of a 300 MB limit: warn, where the seed's 2.7 GB failed.
        assert_eq!(m.status, Status::Warn, "{}", m.rule);
        let m = finding(&p(Transport::Polling), &h, "memory");
        assert_eq!(m.status, Status::Pass, "{}", m.rule);
        assert_eq!(m.numbers["connection_bytes"], 0.0);
        assert!(m.rule.contains("transport polling"));
        let c = finding(&p(Transport::Polling), &h, "cpu");
        assert_eq!(c.status, Status::Pass, "{}", c.rule);
        assert!(c.rule.contains("transport polling") && c.rule.contains("warn below 1"));
        h.cgroup_cpu = Ok(CgroupCpu {
            cpus: Some(0.5),
            file: "cpu.max".into(),
            version: 2,
        });
        assert_eq!(status(&p(Transport::Polling), &h, "cpu"), Status::Warn);
    }

    #[test]
    fn tcp_wmem_advice_names_the_host_wide_cost_and_the_per_socket_fix() {
        assert_eq!(tcp::mbit_at_rtt(233_472, 0.1), "18.7 Mbit/s");
        let p = Profile::default();
        let mut h = host();
        h.tcp_wmem = Ok([4096, 16384, 4_194_304]);
        let f = finding(&p, &h, "tcp-wmem");
        assert_eq!(f.status, Status::Warn);
        assert!(f.fix.summary.contains("SO_SNDBUF"), "{}", f.fix.summary);
        assert!(
            f.fix.summary.contains("Mbit/s at 100 ms RTT"),
            "{}",
            f.fix.summary
        );
        assert!(f.fix.persistent[0].contains("SO_SNDBUF"));
    }

    #[test]
    fn fd_limit_title_names_the_process() {
        let mut h = host();
        let f = finding(&Profile::default(), &h, "fd-limit");
        assert!(f.title.contains("process self") && f.title.contains("--pid"));
        h.process = "4242".into();
        let f = finding(&Profile::default(), &h, "fd-limit");
        assert!(f.title.ends_with("of process 4242"), "{}", f.title);
    }
}
