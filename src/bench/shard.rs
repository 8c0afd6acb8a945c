//! Shards of one `bench fanout` run (issue 37): `--shard I/N` holds its share of the
//! connections and slow clients, writes its result with its full latency histogram
//! (HdrHistogram V2, base64), and `bench merge` adds them back into one report whose
//! validity and thresholds are judged after the merge. Pure: the command layer reads the
//! files.
use super::model::{Accounting, BenchReport, Check, RoundPoint, ScenarioResult};
use crate::findings::Status;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// `--shard I/N`: this process is shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// Most shards one run may have.
pub const MAX_SHARDS: u32 = 1024;

impl Shard {
    /// `I/N` with 1 <= I <= N <= [`MAX_SHARDS`].
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad = || format!("{s}: expected I/N, e.g. 1/4 (shard I of N, 1-based)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u32, u32) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || count > MAX_SHARDS || index == 0 || index > count {
            return Err(format!(
                "{s}: I must be 1..=N and N 1..={MAX_SHARDS} (shard I of N)"
            ));
        }
        Ok(Shard { index, count })
    }

    /// The same bounds as [`Shard::parse`], for a shard read back from a file (serde
    /// builds it without them).
    pub fn check(self) -> Result<Shard, String> {
        if self.count == 0 || self.count > MAX_SHARDS || self.index == 0 || self.index > self.count
        {
            return Err(format!(
                "shard {}/{}: I must be 1..=N and N 1..={MAX_SHARDS}",
                self.index, self.count
            ));
        }
        Ok(self)
    }

    /// This shard's share of `total`: the first `total % N` shards hold one more, so the
    /// shares add up to `total` exactly.
    pub fn share(self, total: u64) -> u64 {
        let n = u64::from(self.count);
        total / n + u64::from(u64::from(self.index) <= total % n)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Latest `--start-at` in unix seconds (year 2286): its ns and a margin fit a u64.
const MAX_START_AT_S: f64 = 1e10;

/// `--start-at TIME`: unix seconds (fractions allowed) or RFC 3339, as ns since the epoch.
pub fn parse_start_at(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<f64>() {
        if secs.is_finite() && secs > 0.0 && secs < MAX_START_AT_S {
            return Ok((secs * 1e9) as u64);
        }
        return Err(format!("{s}: not a unix time in seconds"));
    }
    let at = humantime::parse_rfc3339(t).map_err(|e| {
        format!("{s}: expected unix seconds or RFC 3339 in UTC (2026-12-06T20:00:00Z): {e}")
    })?;
    let d = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| format!("{s}: before 1970"))?;
    if d.as_secs_f64() >= MAX_START_AT_S {
        return Err(format!("{s}: too far in the future"));
    }
    Ok(d.as_nanos() as u64)
}

/// A histogram as base64 of its V2 serialization (what a shard's JSON carries).
pub fn encode(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    // V2 into a Vec cannot fail but for a histogram too large to count: none here.
    if V2Serializer::new().serialize(h, &mut buf).is_err() {
        return String::new();
    }
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// The histogram a shard's JSON carries; errors name what is wrong, not the blob.
pub fn decode(s: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|e| format!("histogram: not base64 ({e})"))?;
    check_v2_header(&bytes)?;
    let h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("histogram: not an HdrHistogram V2 ({e:?})"))?;
    Ok(h)
}

/// The V2 header's own claims against the bytes present, before hdrhistogram trusts them
/// (it sizes its buffer by the header's payload length: up to 4 GiB from a few bytes).
/// Only the plain V2 encoding [`encode`] writes is accepted.
fn check_v2_header(bytes: &[u8]) -> Result<(), String> {
    const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
    const HEADER: usize = 40;
    let be32 = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (Some(cookie), Some(payload_len)) = (be32(0), be32(4)) else {
        return Err("histogram: not an HdrHistogram V2 (too short)".into());
    };
    if cookie != V2_COOKIE {
        return Err("histogram: not an HdrHistogram V2 (unknown cookie)".into());
    }
    let present = bytes.len().saturating_sub(HEADER);
    if bytes.len() < HEADER || payload_len as usize > present {
        return Err(format!(
            "histogram: truncated HdrHistogram V2 (header says {payload_len} payload bytes, {present} present)"
        ));
    }
    Ok(())
}

/// What `bench fanout --shard I/N` writes (JSON, `--save-json`): its report (one run),
/// which shard it is, its full histogram and, when coordinated, its clock offset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardResult {
    #[serde(flatten)]
    pub report: BenchReport,
    pub shard: Shard,
    /// The run's latency histogram (us), HdrHistogram V2, base64; None when it had none.
    pub histogram: Option<String>,
    /// When the shards started: ns since the epoch (`--start-at`), if given.
    #[serde(default)]
    pub start_at_ns: Option<u64>,
    #[serde(default)]
    pub clock: Option<ClockOffset>,
    /// `--run-id` of a coordinated run (`--coordinate`): shards of one run share it.
    #[serde(default)]
    pub run_id: Option<String>,
}

/// One shard's file as `bench merge` read it.
pub struct ShardFile {
    pub path: String,
    pub result: ShardResult,
}

/// Why the merged run cannot be trusted, shard by shard (empty: every shard is there,
/// valid, with its histogram, and all ran the same load).
pub fn problems(files: &[ShardFile]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(first) = files.first() else {
        return vec!["no shard files".into()];
    };
    let count = first.result.shard.count;
    if let Err(e) = first.result.shard.check() {
        return vec![format!("{}: {e}", first.path)];
    }
    let mut seen = vec![false; count as usize];
    for f in files {
        let (r, s) = (&f.result.report, f.result.shard);
        if s.count != count {
            out.push(format!(
                "{}: shard {s}, but the first file says N = {count}",
                f.path
            ));
            continue;
        }
        // The reader checked 1 <= I <= N; a result built otherwise is refused, not indexed.
        let slot = (s.index as usize)
            .checked_sub(1)
            .and_then(|i| seen.get_mut(i));
        let Some(slot) = slot else {
            out.push(format!("{}: shard {s}: I must be 1..=N", f.path));
            continue;
        };
        if std::mem::replace(slot, true) {
            out.push(format!("{}: shard {s} given twice", f.path));
        }
        let f0 = &first.result.report;
        // Connections differ by the shares (1,201 over 2: 601 and 600).
        let same = r.server == f0.server
            && r.rounds == f0.rounds
            && r.size == f0.size
            && r.rate == f0.rate;
        if !same {
            out.push(format!(
                "{}: shard {s} ran another load (server, rounds, size or rate differ)",
                f.path
            ));
        }
        // The merged run keeps the shards' own name (`external`, or a --scenario letter):
        // a shard of another run would be judged under a name it never ran.
        let name0 = f0.scenarios.first().map(|x| x.name.as_str());
        if let Some(n) = r.scenarios.first().map(|x| x.name.as_str()) {
            if Some(n) != name0 {
                out.push(format!(
                    "{}: shard {s} ran `{n}`, the first file `{}` (another run)",
                    f.path,
                    name0.unwrap_or("-")
                ));
            }
        }
        match r.scenarios.as_slice() {
            [one] if !one.valid => out.push(format!(
                "shard {s} invalid: {}",
                one.notes.first().map_or("see its report", String::as_str)
            )),
            [_] if f.result.histogram.is_none() => {
                out.push(format!("shard {s}: no histogram in {}", f.path))
            }
            [_] => {}
            _ => out.push(format!("{}: shard {s} has not exactly one run", f.path)),
        }
        if let Some(o) = f.result.clock.as_ref().filter(|o| !o.within_tolerance) {
            out.push(format!(
                "shard {s}: clock offset {:.1} ms +/- {:.1} ms beyond the tolerance",
                o.offset_ms, o.uncertainty_ms
            ));
        }
    }
    out.extend(other_runs(files));
    for (i, _) in seen.iter().enumerate().filter(|(_, s)| !**s) {
        out.push(format!(
            "shard {}/{count} missing (not given, killed, or it wrote no result)",
            i + 1
        ));
    }
    out
}

/// Shards that cannot be of one run: another start time or run id than the first's, or
/// connection / slow-client counts that are not the shares of one total (the first
/// `total % N` shards hold one more: by index, never rising, at most 1 apart).
fn other_runs(files: &[ShardFile]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(first) = files.first() else {
        return out;
    };
    let f0 = &first.result;
    for f in &files[1..] {
        let (r, s) = (&f.result, f.result.shard);
        if r.start_at_ns != f0.start_at_ns {
            out.push(format!(
                "{}: shard {s} started at another time than {} (another run)",
                f.path, first.path
            ));
        }
        if r.run_id != f0.run_id {
            out.push(format!(
                "{}: shard {s} has another run id than {} (another run)",
                f.path, first.path
            ));
        }
    }
    let mut by_index: Vec<(u32, &ScenarioResult, &str)> = files
        .iter()
        .filter_map(|f| {
            let one = f.result.report.scenarios.first()?;
            Some((f.result.shard.index, one, f.path.as_str()))
        })
        .collect();
    by_index.sort_by_key(|(i, _, _)| *i);
    type Count = fn(&ScenarioResult) -> u64;
    let counts: [(&str, Count); 2] = [
        ("connections", |s| s.connections),
        ("slow clients", |s| s.slow_clients),
    ];
    for (what, get) in counts {
        let (Some(hi), Some(lo)) = (by_index.first(), by_index.last()) else {
            continue;
        };
        let rising = by_index.windows(2).find(|w| get(w[1].1) > get(w[0].1));
        if let Some(w) = rising {
            out.push(format!(
                "{}: {} {what}, more than shard {} ({}): not the shares of one total",
                w[1].2,
                get(w[1].1),
                w[0].0,
                get(w[0].1)
            ));
        } else if get(hi.1) - get(lo.1) > 1 {
            out.push(format!(
                "{}: {} {what} against {} in {}: not the shares of one total",
                lo.2,
                get(lo.1),
                get(hi.1),
                hi.2
            ));
        }
    }
    out
}

/// A shard's clock against the coordinator's, NTP-style: offset and its bound (half the
/// round trip), and whether that is within the run's tolerance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    pub offset_ms: f64,
    pub uncertainty_ms: f64,
    pub within_tolerance: bool,
}

/// The merged report: histograms added (exact at their precision), counters summed,
/// per round the maximum of the shards' last clients; invalid with every reason when
/// [`problems`] found any. `None` in the figures rather than a number from nothing.
pub fn merge(files: &[ShardFile]) -> BenchReport {
    let why = problems(files);
    let runs: Vec<&ScenarioResult> = files
        .iter()
        .filter_map(|f| f.result.report.scenarios.first())
        .collect();
    let mut hist = super::stats::new_hist();
    let mut hist_err = Vec::new();
    for f in files {
        match f.result.histogram.as_deref().map(decode) {
            Some(Ok(h)) => {
                if let Err(e) = hist.add(&h) {
                    hist_err.push(format!("histogram: cannot add ({e:?})"));
                }
            }
            Some(Err(e)) => hist_err.push(e),
            None => {}
        }
    }
    let mut notes: Vec<String> = why.into_iter().chain(hist_err).collect();
    let first = files.first().map(|f| &f.result.report);
    let count = files.first().map_or(0, |f| f.result.shard.count);
    let mut r = merged_run(&runs, &hist);
    r.valid = notes.is_empty() && !runs.is_empty() && r.samples > 0;
    if notes.is_empty() && r.samples == 0 {
        notes.push("no samples in any shard".into());
    }
    r.checks.push(Check {
        name: "shards".into(),
        status: if notes.is_empty() {
            Status::Pass
        } else {
            Status::Fail
        },
        detail: format!(
            "{} of {} shard(s) merged{}",
            runs.len(),
            count,
            if notes.is_empty() {
                String::new()
            } else {
                format!(": {}", notes.join("; "))
            }
        ),
    });
    if !r.valid {
        // An invalid run has no figures to judge (as bench's own invalid runs).
        (r.p50_ms, r.p99_ms, r.p999_ms, r.max_ms) = (None, None, None, None);
    }
    r.notes = notes;
    BenchReport {
        command: "bench merge".into(),
        server: first.map_or_else(String::new, |f| f.server.clone()),
        connections: runs.iter().map(|s| s.connections).sum(),
        rounds: first.map_or(0, |f| f.rounds),
        size: first.map_or(0, |f| f.size),
        rate: first.map_or(0.0, |f| f.rate),
        slow: runs.iter().map(|s| s.slow_clients).sum(),
        host_cores: first.map_or(0, |f| f.host_cores),
        valid: r.valid,
        // The shards spoke the same protocol (the same flags); the first one says which.
        app_protocol: first.and_then(|f| f.app_protocol.clone()),
        scenarios: vec![r],
    }
}

/// The figures of the shards' runs, added.
fn merged_run(runs: &[&ScenarioResult], hist: &Histogram<u64>) -> ScenarioResult {
    let q = super::stats::quantiles(hist);
    let some = |v: f64| (!hist.is_empty()).then_some(v);
    let sum = |f: fn(&ScenarioResult) -> u64| runs.iter().map(|s| f(s)).sum::<u64>();
    let mut acc = Accounting::default();
    for s in runs {
        let a = &s.accounting;
        acc.expected += a.expected;
        acc.received += a.received;
        acc.dropped += a.dropped;
        acc.after_removal += a.after_removal;
        acc.unpublished += a.unpublished;
        acc.stalled += a.stalled;
        acc.never_connected += a.never_connected;
        acc.unexplained += a.unexplained;
    }
    let per_round = max_per_round(runs);
    let last: Vec<f64> = per_round.iter().filter_map(|p| p.last_client_ms).collect();
    let fmax = |v: &[f64]| {
        v.iter()
            .copied()
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
    };
    let mut sorted = last.clone();
    sorted.sort_by(f64::total_cmp);
    ScenarioResult {
        name: runs
            .first()
            .map_or_else(|| "merged".into(), |s| s.name.clone()),
        description: format!("{} shard(s) merged", runs.len()),
        connections: sum(|s| s.connections),
        slow_clients: sum(|s| s.slow_clients),
        p50_ms: some(q.p50_ms),
        p99_ms: some(q.p99_ms),
        p999_ms: some(q.p999_ms),
        max_ms: some(q.max_ms),
        over_100ms: Some(q.over_100ms),
        over_1s: Some(q.over_1s),
        samples: q.count,
        rounds_completed: runs.iter().map(|s| s.rounds_completed).min().unwrap_or(0),
        rounds_total: runs.first().map_or(0, |s| s.rounds_total),
        rounds_published_at_bound: None,
        last_client_median_ms: sorted.get(sorted.len() / 2).copied(),
        last_client_max_ms: fmax(&last),
        hub_median_ms: None,
        hub_max_ms: fmax(&runs.iter().filter_map(|s| s.hub_max_ms).collect::<Vec<_>>()),
        drops: runs.iter().map(|s| s.drops).sum(),
        removed: runs.iter().map(|s| s.removed).sum(),
        server_rss_mb: None,
        server_cpu_s: None,
        client_cpu_s: runs.iter().map(|s| s.client_cpu_s).sum(),
        p99_vs_floor: None,
        p999_vs_floor: None,
        round_start_drift_median_ms: None,
        round_start_drift_max_ms: fmax(
            &runs
                .iter()
                .filter_map(|s| s.round_start_drift_max_ms)
                .collect::<Vec<_>>(),
        ),
        duration_s: fmax(&runs.iter().map(|s| s.duration_s).collect::<Vec<_>>()).unwrap_or(0.0),
        time_bound_s: fmax(&runs.iter().map(|s| s.time_bound_s).collect::<Vec<_>>()).unwrap_or(0.0),
        valid: true,
        notes: Vec::new(),
        checks: Vec::new(),
        accounting: acc,
        reference: None,
        percentiles: super::stats::percentiles(hist),
        per_round,
        shape: None,
        server_process: None,
        server_unmeasured: None,
        publisher: None,
        loadgen_cost: merged_cost(runs),
    }
}

/// The shards' load generator cost together: CPU per message weighted by samples, RSS
/// per connection by connections.
fn merged_cost(runs: &[&ScenarioResult]) -> Option<super::model::LoadgenCost> {
    type Get = fn(&super::model::LoadgenCost) -> Option<f64>;
    let weighted = |f: Get, w: fn(&ScenarioResult) -> u64| {
        let (mut num, mut den) = (0.0, 0u64);
        for s in runs {
            let v = s.loadgen_cost.as_ref().and_then(f)?;
            num += v * w(s) as f64;
            den += w(s);
        }
        (den > 0).then(|| num / den as f64)
    };
    Some(super::model::LoadgenCost {
        cpu_us_per_message: weighted(|c| c.cpu_us_per_message, |s| s.samples),
        rss_bytes_per_connection: weighted(|c| c.rss_bytes_per_connection, |s| s.connections),
    })
}

/// Per round, the slowest last client of any shard (the round ends when its last client
/// anywhere has it).
pub fn max_per_round(runs: &[&ScenarioResult]) -> Vec<RoundPoint> {
    let n = runs.iter().map(|s| s.per_round.len()).max().unwrap_or(0);
    (0..n)
        .map(|i| {
            let at = |f: fn(&RoundPoint) -> Option<f64>| {
                runs.iter()
                    .filter_map(|s| s.per_round.get(i).and_then(f))
                    .reduce(f64::max)
            };
            RoundPoint {
                round: i as u64 + 1,
                last_client_ms: at(|p| p.last_client_ms),
                hub_ms: at(|p| p.hub_ms),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_bad_shards_are_refused() {
        for (total, n) in [(1200u64, 2u32), (1201, 2), (7, 3), (2, 4)] {
            let sum: u64 = (1..=n)
                .map(|i| Shard { index: i, count: n }.share(total))
                .sum();
            assert_eq!(sum, total, "{total}/{n}");
        }
        assert_eq!(Shard::parse("2/4").unwrap(), Shard { index: 2, count: 4 });
        for bad in ["0/2", "3/2", "1/0", "x", "1/", "1/2000"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_start_at("1700000000").unwrap(),
            1_700_000_000_000_000_000
        );
        assert_eq!(
            parse_start_at("2023-11-14T22:13:20Z").unwrap(),
            1_700_000_000_000_000_000
        );
        assert!(parse_start_at("tomorrow").is_err());
        // ns of these would not fit a u64 (or leave no room to add a second).
        for far in ["99999999999", "1e11", "9999-12-31T23:59:59Z"] {
            assert!(parse_start_at(far).is_err(), "{far}");
        }
        assert!(parse_start_at("9999999999").unwrap() < u64::MAX - 4_000_000_000_000);
    }

    #[test]
    fn histograms_round_trip_and_add_exactly() {
        let (mut a, mut b, mut all) = (
            super::super::stats::new_hist(),
            super::super::stats::new_hist(),
            super::super::stats::new_hist(),
        );
        for v in 1..5000u64 {
            let x = v * 37 % 90_001 + 1;
            if v % 3 == 0 {
                a.record(x).unwrap()
            } else {
                b.record(x).unwrap()
            }
            all.record(x).unwrap();
        }
        let mut m = decode(&encode(&a)).unwrap();
        m.add(decode(&encode(&b)).unwrap()).unwrap();
        for q in [0.5, 0.99, 0.999, 1.0] {
            assert_eq!(m.value_at_quantile(q), all.value_at_quantile(q), "{q}");
        }
        assert_eq!(m.len(), all.len());
        assert!(decode("not base64!").is_err());
        assert!(decode("aGVsbG8=").is_err());
    }

    #[test]
    fn a_header_claiming_more_payload_than_present_is_refused() {
        let mut bytes = base64::engine::general_purpose::STANDARD
            .decode(encode(&super::super::stats::new_hist()))
            .unwrap();
        // payload_len = u32::MAX: hdrhistogram would allocate 4 GiB before reading.
        bytes[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let e = decode(&base64::engine::general_purpose::STANDARD.encode(&bytes)).unwrap_err();
        assert!(e.contains("truncated"), "{e}");
        // Compressed V2 (another cookie) is not what shards write: refused.
        bytes[0..4].copy_from_slice(&(0x1c84_9304u32 | 0x10).to_be_bytes());
        let e = decode(&base64::engine::general_purpose::STANDARD.encode(&bytes)).unwrap_err();
        assert!(e.contains("cookie"), "{e}");
    }

    fn file(index: u32, count: u32, connections: u64, slow: u64) -> ShardFile {
        let mut one = merged_run(&[], &super::super::stats::new_hist());
        (one.connections, one.slow_clients) = (connections, slow);
        ShardFile {
            path: format!("s{index}.json"),
            result: ShardResult {
                report: BenchReport {
                    command: "bench fanout".into(),
                    server: "ws://10.0.0.1/ws".into(),
                    connections,
                    rounds: 20,
                    size: 64,
                    rate: 10.0,
                    slow,
                    host_cores: 2,
                    scenarios: vec![one],
                    valid: true,
                    app_protocol: None,
                },
                shard: Shard { index, count },
                histogram: Some(encode(&super::super::stats::new_hist())),
                start_at_ns: Some(1),
                clock: None,
                run_id: Some("r1".into()),
            },
        }
    }

    #[test]
    fn shards_of_other_runs_or_inconsistent_shares_are_named() {
        // 1,201 over 3: 401, 400, 400; 5 slow: 2, 2, 1.
        let ok = || vec![file(1, 3, 401, 2), file(2, 3, 400, 2), file(3, 3, 400, 1)];
        assert!(other_runs(&ok()).is_empty(), "{:?}", other_runs(&ok()));
        // A missing shard leaves the others consistent.
        assert!(other_runs(&ok()[1..]).is_empty());
        let mut v = ok();
        v[2].result.start_at_ns = Some(2);
        v[1].result.run_id = Some("r0".into());
        let why = other_runs(&v).join("; ");
        assert!(
            why.contains("s3.json: shard 3/3 started at another time"),
            "{why}"
        );
        assert!(
            why.contains("s2.json: shard 2/3 has another run id"),
            "{why}"
        );
        let mut v = ok();
        v[2].result.report.scenarios[0].connections = 401;
        let why = other_runs(&v).join("; ");
        assert!(
            why.contains("s3.json: 401 connections, more than shard 2"),
            "{why}"
        );
        let mut v = ok();
        v[0].result.report.scenarios[0].connections = 600;
        let why = other_runs(&v).join("; ");
        assert!(why.contains("not the shares of one total"), "{why}");
        // And the merge is invalid with the reason.
        let r = merge(&v);
        assert!(!r.valid && r.scenarios[0].notes.iter().any(|n| n.contains("shares")));
    }

    #[test]
    fn shards_read_back_out_of_bounds_are_refused_without_panic() {
        for (index, count) in [(0, 2), (3, 2), (1, 0), (1, u32::MAX)] {
            assert!(Shard { index, count }.check().is_err(), "{index}/{count}");
        }
        assert!(Shard { index: 2, count: 2 }.check().is_ok());
    }
}
