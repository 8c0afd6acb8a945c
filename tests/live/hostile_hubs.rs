//! Hostile hubs (issue 41, items 7, 13, 14, 16): `bench fanout` and `verify delivery`
//! against a chat hub that rewrites seqs, invents them, closes clients, or sends frames
//! of its own format (tests/fixtures/foreign/hostile_hub.py, python3-websockets), and
//! against a peer that floods pings and never reads. Every verdict is read back from the
//! JSON; the honest mode of the same hub is the control that shows each check can pass.
use crate::common;
use crate::foreign_common;
use foreign_common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

/// `bench fanout` scenario A with rtcheck's publisher on `url`: (exit, scenario A).
fn bench_a(url: &str) -> (Option<i32>, Value, String) {
    let out = common::rtcheck()
        .args(["bench", "fanout", "--server", url, "--format", "json"])
        .args(["--drain", "2s", "--connections", "20", "--rate", "20"])
        .args(["--rounds", "20", "--scenario", "A", "--publish", "ws"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let v: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}\n{err}"));
    let a = v["scenarios"]
        .as_array()
        .unwrap_or_else(|| panic!("no scenarios: {v:#}"))
        .iter()
        .find(|s| s["name"] == "A")
        .cloned()
        .unwrap_or_else(|| panic!("no scenario A: {v:#}"));
    (out.status.code(), a, err)
}

fn check<'a>(scenario: &'a Value, name: &str) -> Option<&'a Value> {
    scenario["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
}

/// Items 13 and 14 in bench: a hub that rewrites seqs or closes healthy clients makes
/// scenario A invalid, naming the cause; the honest hub passes both checks.
#[test]
fn bench_fanout_invalidates_a_hub_that_rewrites_seqs_or_closes_clients() {
    let _timed = common::timed();
    let honest = hostile_hub("honest");
    let (code, a, err) = bench_a(&honest.url("ws", "/"));
    let ctx = format!("exit {code:?}\n{a:#}\n{err}\n{}", honest.log());
    assert_eq!(check(&a, "seq range").unwrap()["status"], "pass", "{ctx}");
    assert_eq!(
        check(&a, "server-closed clients").unwrap()["status"],
        "pass",
        "{ctx}"
    );

    let rewrite = hostile_hub("rewrite");
    let (code, a, err) = bench_a(&rewrite.url("ws", "/"));
    let ctx = format!("exit {code:?}\n{a:#}\n{err}");
    assert_eq!(a["valid"], false, "{ctx}");
    assert_eq!(code, Some(1), "{ctx}");
    let notes = a["notes"].to_string();
    assert!(notes.contains("rewrote or invented"), "{ctx}");
    assert!(
        a["p50_ms"].is_null(),
        "no figures from an invalid run: {ctx}"
    );

    let close = hostile_hub("close");
    let (code, a, err) = bench_a(&close.url("ws", "/"));
    let ctx = format!("exit {code:?}\n{a:#}\n{err}");
    assert_eq!(a["valid"], false, "{ctx}");
    assert_eq!(code, Some(1), "{ctx}");
    let c = check(&a, "server-closed clients").unwrap_or_else(|| panic!("{ctx}"));
    assert_eq!(c["status"], "fail", "{ctx}");
    let removed = a["removed"].as_u64().unwrap_or_else(|| panic!("{ctx}"));
    assert!(
        removed > 0,
        "the table's removed is what the clients saw: {ctx}"
    );
}

/// Item 16: binary frames of the hub's own format are "not rtcheck's payload", not
/// "seq above --rounds".
#[test]
fn bench_fanout_names_binary_frames_that_are_not_the_payload() {
    let _timed = common::timed();
    let hub = hostile_hub("binary");
    let (code, a, err) = bench_a(&hub.url("ws", "/"));
    let ctx = format!("exit {code:?}\n{a:#}\n{err}");
    assert_eq!(a["valid"], false, "{ctx}");
    let notes = a["notes"].to_string();
    assert!(notes.contains("none was rtcheck's payload"), "{ctx}");
    assert!(!notes.contains("above --rounds"), "{ctx}");
}

/// A hub that accepts the upgrade and then refuses the client with 1008 (an auth check
/// after the 101): bench names that close, code and reason, as why nothing was measured.
#[test]
fn bench_fanout_names_the_close_of_a_hub_that_refuses_after_the_upgrade() {
    let _timed = common::timed();
    let hub = hostile_hub("auth");
    let (code, a, err) = bench_a(&hub.url("ws", "/"));
    let ctx = format!("exit {code:?}\n{a:#}\n{err}\n{}", hub.log());
    assert_eq!(a["valid"], false, "{ctx}");
    assert_eq!(code, Some(1), "{ctx}");
    let c = check(&a, "samples received").unwrap_or_else(|| panic!("{ctx}"));
    assert_eq!(c["status"], "fail", "{ctx}");
    let detail = c["detail"].as_str().unwrap();
    assert!(
        detail.contains("close 1008 (policy violation), reason \"authentication failed\""),
        "{ctx}"
    );
    assert!(!detail.contains("sent nothing"), "{ctx}");
}

/// The same hub under `verify delivery`: the error names the close (code, meaning,
/// reason), not "no message with a seq".
#[test]
fn verify_delivery_names_the_close_of_a_hub_that_refuses_after_the_upgrade() {
    let _timed = common::timed();
    let hub = hostile_hub("auth");
    let out = common::rtcheck()
        .args(["verify", "delivery", "--server", &hub.url("ws", "/")])
        .args(["--publish", "ws", "--format", "json", "--rate", "20"])
        .args(["--max-disconnect", "1500ms", "--connections", "2"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let ctx = format!("exit {:?}\n{err}\n{}", out.status.code(), hub.log());
    assert!(!out.status.success(), "{ctx}");
    assert!(
        err.contains("close 1008 (policy violation), reason \"authentication failed\""),
        "{ctx}"
    );
    assert!(!err.contains("no message with a seq"), "{ctx}");
}

/// A hub that echoes the rejected token in its close reason: neither `bench fanout` nor
/// `verify delivery` shows it, in any format (the reason is still named, masked).
#[test]
fn a_close_reason_that_echoes_the_token_is_masked_in_bench_and_verify() {
    let _timed = common::timed();
    let hub = hostile_hub("auth");
    let token = "wrong-tok-8f3a91";
    let url = format!("{}?token={token}", hub.url("ws", "/"));
    for format in ["json", "text"] {
        let bench = common::rtcheck()
            .args(["bench", "fanout", "--server", &url, "--format", format])
            .args(["--drain", "2s", "--connections", "5", "--rate", "20"])
            .args(["--rounds", "10", "--scenario", "A", "--publish", "ws"])
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        let verify = common::rtcheck()
            .args(["verify", "delivery", "--server", &url, "--publish", "ws"])
            .args(["--format", format, "--rate", "20"])
            .args(["--max-disconnect", "1500ms", "--connections", "2"])
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        for (what, out) in [("bench", bench), ("verify", verify)] {
            let all = format!(
                "{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let ctx = format!(
                "{what} {format}: exit {:?}\n{all}\n{}",
                out.status.code(),
                hub.log()
            );
            assert!(
                all.contains("bad token ***"),
                "the reason is named, masked: {ctx}"
            );
            assert!(!all.contains(token), "{ctx}");
        }
    }
}

/// `verify delivery --server URL --publish ws`, small: (exit, runs, stderr).
/// `verify delivery` of a hostile hub: (exit code, runs, report-level `valid`, stderr).
fn delivery(url: &str) -> (Option<i32>, Vec<Value>, Value, String) {
    let out = common::rtcheck()
        .args(["verify", "delivery", "--server", url, "--publish", "ws"])
        .args(["--format", "json", "--rate", "20", "--size", "256"])
        .args(["--max-disconnect", "1500ms", "--connections", "4"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let v: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}\n{err}"));
    let runs = v["runs"]
        .as_array()
        .unwrap_or_else(|| panic!("no runs: {v:#}"))
        .clone();
    (out.status.code(), runs, v["valid"].clone(), err)
}

/// Item 13 in verify delivery: `seq = 1000000 - seq` and phantom seqs make every run
/// invalid with the reason (they passed with "lost 0"); the honest hub has no such verdict.
#[test]
fn verify_delivery_invalidates_rewritten_and_phantom_seqs() {
    let _timed = common::timed();
    // The honest hub is the control: each run valid and measured. Without --resume it
    // loses what was published during the disconnect and says nothing, so each run is a
    // measured fail (exit 1, "lost silently"), never invalid. Whether a run is valid
    // depends on timing (a live message after each reconnect, within the schedule), so
    // this run goes alone, before the others.
    let (code, honest, valid, err) = delivery(&hostile_hub("honest").url("ws", "/"));
    let ctx = format!("honest: exit {code:?}\n{honest:#?}\n{err}");
    assert_eq!(code, Some(1), "{ctx}");
    assert_eq!(valid, true, "a measured fail is a valid report: {ctx}");
    assert!(!honest.is_empty(), "{ctx}");
    for r in &honest {
        let v = r["verdict"].as_str().unwrap();
        assert!(!v.starts_with("invalid") && !v.contains("rewrote"), "{ctx}");
        assert!(v.contains("lost silently"), "{ctx}");
    }
    // The rewrite and phantom runs at once: their invalid reason is not timing. It is
    // a seq above the highest published (seq_account::stream_invalid), and it replaces
    // whatever verdict the schedule gave (foreign.rs), so a late run still says it.
    let [rewrite, phantom] = std::thread::scope(|sc| {
        ["rewrite", "phantom"]
            .map(|mode| sc.spawn(move || delivery(&hostile_hub(mode).url("ws", "/"))))
            .map(|h| h.join().unwrap())
    });
    for ((mode, says), (code, runs, valid, err)) in
        [("rewrite", "seq 99999"), ("phantom", "were published")]
            .into_iter()
            .zip([rewrite, phantom])
    {
        let ctx = format!("{mode}: exit {code:?}\n{runs:#?}\n{err}");
        assert_eq!(code, Some(1), "{ctx}");
        assert!(!runs.is_empty(), "{ctx}");
        assert_eq!(valid, false, "invalid runs, an invalid report: {ctx}");
        assert!(
            err.contains("could not measure what they set out to"),
            "{ctx}"
        );
        for r in &runs {
            assert_eq!(r["status"], "fail", "{ctx}");
            let v = r["verdict"].as_str().unwrap();
            assert!(v.starts_with("invalid") && v.contains(says), "{ctx}");
        }
    }
}

/// A hub that closes each client with 1011 after 10 messages (the reconnected one too):
/// not a refusal that discards every run, but each client's named cause, its counts kept.
#[test]
fn verify_delivery_counts_loss_past_an_error_close_and_names_it() {
    let _timed = common::timed();
    let hub = hostile_hub("error");
    let (code, runs, _, err) = delivery(&hub.url("ws", "/"));
    let ctx = format!("exit {code:?}\n{runs:#?}\n{err}\n{}", hub.log());
    assert_ne!(code, Some(2), "not an error: {ctx}");
    assert!(!runs.is_empty(), "{ctx}");
    for r in &runs {
        let v = r["verdict"].as_str().unwrap();
        assert!(
            v.contains("close 1011 (internal error), reason \"boom\""),
            "{ctx}"
        );
        assert_ne!(r["status"], "pass", "{ctx}");
    }
}

/// A hub that resumes (`?since=`), sends each connection half a second of live
/// messages, then closes it with 1000: the stream after the resume (a 1 s phase at this
/// rate) ended early, and what was published until the phase's end is the client's loss
/// (it passed with "0 lost": loss was counted only up to the last seq it received).
#[test]
fn verify_delivery_counts_the_rest_of_a_stream_that_ended_early() {
    let _timed = common::timed();
    let hub = hostile_hub("once");
    let out = common::rtcheck()
        .args(["verify", "delivery", "--server", &hub.url("ws", "/")])
        .args(["--publish", "ws", "--resume", "query ?since={seq}"])
        .args(["--format", "json", "--rate", "20", "--size", "256"])
        .args(["--max-disconnect", "1500ms", "--connections", "1"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    let ctx = format!("exit {:?}\n{text}\n{err}\n{}", out.status.code(), hub.log());
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {ctx}"));
    assert_eq!(out.status.code(), Some(1), "{ctx}");
    let runs = v["runs"].as_array().unwrap_or_else(|| panic!("{ctx}"));
    let resumed: Vec<&Value> = runs.iter().filter(|r| r["delivery"] == "foreign").collect();
    assert!(!resumed.is_empty(), "{ctx}");
    for r in resumed {
        let verdict = r["verdict"].as_str().unwrap();
        assert!(!verdict.starts_with("invalid"), "measured: {ctx}");
        assert!(verdict.contains("stream ended early"), "{ctx}");
        assert_eq!(r["status"], "fail", "{ctx}");
        assert!(r["lost_silently"].as_u64().unwrap() > 0, "{ctx}");
    }
}

/// The peak resident memory of a process, sampled until it exits (bounded wait).
fn peak_rss_mb(child: &mut std::process::Child, limit: Duration) -> (f64, bool) {
    let status = format!("/proc/{}/status", child.id());
    let until = Instant::now() + limit;
    let mut peak = 0.0f64;
    while Instant::now() < until {
        if let Ok(Some(_)) = child.try_wait() {
            return (peak, true);
        }
        let text = std::fs::read_to_string(&status).unwrap_or_default();
        let kb = text
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok());
        peak = peak.max(kb.unwrap_or(0.0) / 1024.0);
        std::thread::sleep(Duration::from_millis(50));
    }
    (peak, false)
}

/// Kills the child on drop (a failed assert leaves no process behind).
struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Item 7: `verify delivery` against a server that floods pings and never reads: its
/// clients and publisher hold a bounded queue (it grew to 683 MB), and the run ends.
#[test]
fn verify_delivery_memory_stays_bounded_under_a_ping_flood() {
    let _timed = common::timed();
    let flood = ping_flood();
    let url = flood.url("ws", "/ws");
    let report = tempfile::NamedTempFile::new().unwrap();
    let child = std::process::Command::new(common::binary())
        .args(["verify", "delivery", "--server", &url, "--publish", "ws"])
        .args(["--format", "json", "--rate", "2", "--connections", "4"])
        .args(["--max-disconnect", "1500ms"])
        // A file, not a pipe: a report larger than the pipe's buffer would block the
        // child while the test waits for it to end.
        .stdout(report.reopen().unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut guard = Kill(child);
    let (peak, ended) = peak_rss_mb(&mut guard.0, Duration::from_secs(120));
    assert!(ended, "still running after 120 s (peak {peak:.0} MB)");
    assert!(peak > 0.0, "RSS was read");
    // Unbounded, the pongs owed grew this run past 350 MB in 30 s.
    assert!(peak < 150.0, "peak RSS {peak:.0} MB under a ping flood");
    // What it measured is a report; a server that never reads took no publish: not a pass.
    let out = std::fs::read_to_string(report.path()).unwrap();
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    let runs = v["runs"].as_array().unwrap_or_else(|| panic!("{v:#}"));
    assert!(runs.iter().all(|r| r["status"] == "fail"), "{v:#}");
}
