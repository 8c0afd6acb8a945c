//! The seed's scenarios ("Tail latency at 10,000 connections") as server flags and client mixes.
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Scenario {
    /// Raw-TCP floor: what this host can do at best.
    F,
    A,
    C1,
    C2,
    C3,
    G1,
    G3,
    P1,
}

pub const ALL: [Scenario; 8] = [
    Scenario::F,
    Scenario::A,
    Scenario::C1,
    Scenario::C2,
    Scenario::C3,
    Scenario::G1,
    Scenario::G3,
    Scenario::P1,
];

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Scenario::F => "F",
            Scenario::A => "A",
            Scenario::C1 => "C1",
            Scenario::C2 => "C2",
            Scenario::C3 => "C3",
            Scenario::G1 => "G1",
            Scenario::G3 => "G3",
            Scenario::P1 => "P1",
        }
    }

    pub fn parse(s: &str) -> Result<Scenario, String> {
        ALL.iter()
            .copied()
            .find(|x| x.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                let names: Vec<_> = ALL.iter().map(|x| x.name()).collect();
                format!(
                    "unknown scenario `{}` (one of {}; G2 and P2 tune Go's GC, which Rust has not)",
                    s.trim(),
                    names.join(", ")
                )
            })
    }

    pub fn describe(self) -> &'static str {
        match self {
            Scenario::F => "floor: raw TCP, length-prefixed frames, one write per client per round",
            Scenario::A => "baseline: per-client queue 64 + drop, write deadline 1s (server default: one direct write per idle client, the queue for the rest)",
            Scenario::C1 => "slow clients, 10 shard writers, no write deadline",
            Scenario::C2 => "slow clients, 10 shard writers, write deadline 1s",
            Scenario::C3 => "slow clients, per-client queue 64 + drop, write deadline 1s",
            Scenario::G1 => "a copy of each message per client + 100 MB/s background allocation",
            Scenario::G3 => "one shared buffer + 100 MB/s background allocation",
            Scenario::P1 => "baseline with the server on 1 worker thread",
        }
    }

    /// Evidence id of the seed's row for this scenario.
    pub fn evidence(self) -> Option<&'static str> {
        match self {
            Scenario::F => None,
            Scenario::A => Some("scenario-a"),
            Scenario::C1 => Some("scenario-c1"),
            Scenario::C2 => Some("scenario-c2"),
            Scenario::C3 => Some("scenario-c3"),
            Scenario::G1 => Some("scenario-g1"),
            Scenario::G3 => Some("scenario-g3"),
            Scenario::P1 => Some("scenario-p1"),
        }
    }

    pub fn has_slow_clients(self) -> bool {
        matches!(self, Scenario::C1 | Scenario::C2 | Scenario::C3)
    }

    /// A hub that waits on slow clients is the point of C1/C2: incomplete rounds there are
    /// the result, not a measurement failure.
    pub fn stall_expected(self) -> bool {
        matches!(self, Scenario::C1 | Scenario::C2)
    }

    pub fn is_floor(self) -> bool {
        self == Scenario::F
    }

    /// Hidden `serve` flags for this scenario (contract: contracts/net.md, scenario knobs).
    pub fn server_flags(self) -> Vec<String> {
        let v: &[&str] = match self {
            Scenario::F => &["--protocol", "raw", "--control-listen", "127.0.0.1:0"],
            Scenario::A => &[
                "--strategy",
                "per-client",
                "--queue",
                "64",
                "--write-deadline",
                "1s",
            ],
            Scenario::C1 => &[
                "--strategy",
                "shards",
                "--shards",
                "10",
                "--write-deadline",
                "0",
                "--sndbuf",
                "4096",
            ],
            Scenario::C2 => &[
                "--strategy",
                "shards",
                "--shards",
                "10",
                "--write-deadline",
                "1s",
                "--sndbuf",
                "4096",
            ],
            Scenario::C3 => &[
                "--strategy",
                "per-client",
                "--queue",
                "64",
                "--write-deadline",
                "1s",
                "--sndbuf",
                "4096",
            ],
            Scenario::G1 => &["--percopy", "--garbage-mbps", "100"],
            Scenario::G3 => &["--garbage-mbps", "100"],
            Scenario::P1 => &["--threads", "1"],
        };
        v.iter().map(|s| s.to_string()).collect()
    }
}

/// A run on `--server` (a foreign server, whose design rtcheck does not choose): A all
/// healthy, C slow clients among the healthy ones; which of the seed's C1, C2, C3 shapes
/// the server has is what the run finds out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ForeignRun {
    A,
    C,
}

impl ForeignRun {
    pub fn name(self) -> &'static str {
        match self {
            ForeignRun::A => "A",
            ForeignRun::C => "C",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            ForeignRun::A => "all clients healthy, on the server as it is",
            ForeignRun::C => "slow clients (connect, subscribe, never read, small receive buffer) among the healthy ones",
        }
    }
}

/// `--scenario` with `--server`: A and C only (C1, C2, C3 are shapes read from C).
pub fn parse_foreign_list(s: &str) -> Result<Vec<ForeignRun>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let r = match part.to_ascii_uppercase().as_str() {
            "A" => ForeignRun::A,
            "C" => ForeignRun::C,
            _ => {
                return Err(format!(
                    "--scenario `{part}` with --server: one of A (all healthy), C (slow clients among them); C1, C2 and C3 are the shapes a C run reports"
                ))
            }
        };
        if !out.contains(&r) {
            out.push(r);
        }
    }
    if out.is_empty() {
        return Err("empty scenario list (with --server: A, C or A,C)".into());
    }
    Ok(out)
}

/// The parsed `--scenario` value (one clap value holding the whole list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioList(pub Vec<Scenario>);

pub fn parse_list_arg(s: &str) -> Result<ScenarioList, String> {
    parse_list(s).map(ScenarioList)
}

/// `--scenario A,C1,C3`: order kept, duplicates removed, F first when present (the other
/// rows are printed as ratios to it).
pub fn parse_list(s: &str) -> Result<Vec<Scenario>, String> {
    let mut out: Vec<Scenario> = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let sc = Scenario::parse(part)?;
        if !out.contains(&sc) {
            out.push(sc);
        }
    }
    if out.is_empty() {
        return Err("empty scenario list (e.g. --scenario A,C1,C3)".into());
    }
    if let Some(i) = out.iter().position(|s| s.is_floor()) {
        let f = out.remove(i);
        out.insert(0, f);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_with_floor_first() {
        assert_eq!(
            parse_list("A,c1, C3").unwrap(),
            vec![Scenario::A, Scenario::C1, Scenario::C3]
        );
        assert_eq!(parse_list("A,F,A").unwrap(), vec![Scenario::F, Scenario::A]);
        let e = parse_list("A,G2").unwrap_err();
        assert!(e.contains("`G2`") && e.contains("GC"), "{e}");
        assert!(parse_list(" , ").is_err());
    }

    #[test]
    fn foreign_lists_take_a_and_c_only() {
        assert_eq!(
            parse_foreign_list("a, C,A").unwrap(),
            vec![ForeignRun::A, ForeignRun::C]
        );
        let e = parse_foreign_list("A,C1").unwrap_err();
        assert!(e.contains("`C1`") && e.contains("shapes"), "{e}");
        assert!(parse_foreign_list(",").is_err());
    }

    #[test]
    fn every_scenario_has_evidence_but_the_floor() {
        for s in ALL {
            if let Some(id) = s.evidence() {
                assert_eq!(crate::evidence::get(id).id, id);
            } else {
                assert!(s.is_floor());
            }
        }
        assert!(Scenario::C1.server_flags().contains(&"shards".to_string()));
        assert!(Scenario::F.server_flags().contains(&"raw".to_string()));
    }
}
