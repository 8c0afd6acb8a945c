//! `rtcheck choose` through the binary: flags, answers files, --save, formats.
use crate::common;
use common::rtcheck_isolated;
use rtcheck::profile::{Loss, Profile, Upstream};
use rtcheck_wire::transport::Transport;
use serde_json::Value;
use std::time::Duration;

fn choose_json(args: &[&str]) -> Value {
    let out = rtcheck_isolated()
        .arg("choose")
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn ids(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn flags_give_the_three_decisions_with_reasons_sizing_and_must_haves() {
    let v = choose_json(&[
        "--visible-within",
        "200ms",
        "--upstream",
        "sparse",
        "--loss",
        "shared",
        "--connections",
        "20000",
        "--machines",
        "2",
    ]);
    assert_eq!(v["transport"], "sse");
    assert_eq!(v["delivery"], "seq-ring");
    assert_eq!(v["topology"], "pubsub");

    let reasons = v["reasons"].as_array().unwrap();
    let decisions: Vec<&str> = reasons
        .iter()
        .map(|r| r["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["push", "sse", "seq-ring", "pubsub"]);
    assert_eq!(
        reasons[0]["question"],
        "How often does the data change, and how soon must the user see it?"
    );
    assert_eq!(reasons[0]["answer"], "visible within 200ms");
    assert_eq!(
        ids(&reasons[3]["evidence"]),
        ["redis-pubsub", "single-path", "presence-ttl"]
    );
    let pubsub = &reasons[3]["evidence"][0];
    assert_eq!(pubsub["value"], "p50_added 0.4 ms; p99_added 12 ms");

    // 3 s x 10 msg/s x 1024 B, 20,000 connections over 2 machines.
    let z = &v["sizing"];
    assert_eq!(z["ring_bytes"], 30_720);
    assert_eq!(z["session_bytes_per_client"], 30_720);
    assert_eq!(z["sessions_worst_case_bytes"], 20_000 * 30_720);
    assert_eq!(z["ram_bytes_per_machine"], 10_000 * 27_000);

    let must = v["must_haves"].as_array().unwrap();
    assert_eq!(must.len(), 6);
    assert!(must.iter().all(|m| m["applies"] == true));
    assert_eq!(must[0]["id"], "write-deadline");
    assert_eq!(must[0]["evidence"][0]["id"], "write-deadline");

    // Connections and machines were given; rate, size and max_disconnect defaulted.
    let defaulted: Vec<&str> = v["defaulted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert_eq!(defaulted, ["rate", "size", "max_disconnect"]);
    assert_eq!(v["profile"]["transport"], "sse");
}

#[test]
fn defaulted_connections_and_machines_are_said() {
    let v = choose_json(&[
        "--visible-within",
        "2m",
        "--upstream",
        "none",
        "--loss",
        "replaceable",
    ]);
    assert_eq!(v["transport"], "polling");
    assert_eq!(v["poll_interval_ms"], 120_000);
    let defaulted: Vec<&str> = v["defaulted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert_eq!(defaulted[..2], ["connections", "machines"]);
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes
            .contains(&"connections = 10,000 is the default; set --connections for your workload."),
        "{notes:?}"
    );

    // Text says it too.
    let out = rtcheck_isolated()
        .args([
            "--color",
            "never",
            "choose",
            "--visible-within",
            "2m",
            "--upstream",
            "none",
            "--loss",
            "replaceable",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    // The recommendation first: transport, delivery, topology.
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("polling every 2m"), "{text}");
    assert!(
        first.contains("delivery snapshot") && first.contains("topology single-process"),
        "{text}"
    );
    assert!(
        text.contains("  - machines = 1 is the default; set --machines for your workload.\n"),
        "{text}"
    );
    assert!(text.contains("  [-] ping-pong"), "{text}");
}

#[test]
fn sizing_reproduces_the_830_mb_reference() {
    // 1 s x 83 msg/s x 1,000 B = 83 KB per client; 10,000 clients = 830 MB (session-expiry).
    let v = choose_json(&[
        "--visible-within",
        "100ms",
        "--binary",
        "--loss",
        "per-user",
        "--connections",
        "10000",
        "--rate",
        "83",
        "--size",
        "1000",
        "--max-disconnect",
        "1s",
    ]);
    assert_eq!(v["transport"], "websocket");
    assert_eq!(v["delivery"], "session-ack");
    assert_eq!(v["sizing"]["session_bytes_per_client"], 83_000);
    assert_eq!(v["sizing"]["sessions_worst_case_bytes"], 830_000_000);
}

#[test]
fn between_1s_and_60s_both_options_are_costed() {
    let v = choose_json(&[
        "--visible-within",
        "10s",
        "--upstream",
        "sparse",
        "--loss",
        "replaceable",
        "--connections",
        "5000",
    ]);
    assert_eq!(v["transport"], "polling");
    let alts = v["alternatives"].as_array().unwrap();
    assert_eq!(alts.len(), 2);
    assert_eq!(alts[0]["transport"], "polling");
    assert_eq!(alts[0]["recommended"], true);
    assert_eq!(alts[0]["requests_per_s"], 500.0);
    assert_eq!(alts[0]["delivery_p50_ms"], 5000.0);
    assert_eq!(alts[0]["idle_bytes_per_client_minute"], 840);
    assert_eq!(alts[1]["transport"], "sse");
    assert_eq!(alts[1]["open_connections"], 5000);
    let must = v["must_haves"].as_array().unwrap();
    let not_applicable: Vec<&str> = must
        .iter()
        .filter(|m| m["applies"] == false)
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        not_applicable,
        [
            "write-deadline",
            "writer-isolation",
            "ping-pong",
            "proxy-config"
        ]
    );
}

#[test]
fn answers_file_flags_override_and_save_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let answers = dir.path().join("answers.yaml");
    std::fs::write(
        &answers,
        "visible_within: 200ms\nupstream: sparse\nloss: shared\nconnections: 5000\nmachines: 3\nrate: 2\n",
    )
    .unwrap();
    let save = dir.path().join("profile.yaml");
    let out = rtcheck_isolated()
        .arg("choose")
        .arg("--answers")
        .arg(&answers)
        .args([
            "--upstream",
            "dense",
            "--machines",
            "1",
            "--format",
            "json",
            "--save",
        ])
        .arg(&save)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["transport"], "websocket");
    assert_eq!(v["topology"], "single-process");
    // The file's connections and rate were given: only size and max_disconnect defaulted.
    assert_eq!(
        v["defaulted"],
        serde_json::json!(["size", "max_disconnect"])
    );

    let saved = Profile::load("--answers", &save).unwrap();
    assert_eq!(
        saved,
        Profile {
            visible_within: Some(Duration::from_millis(200)),
            upstream: Some(Upstream::Dense),
            binary: false,
            loss: Some(Loss::Shared),
            connections: 5000,
            machines: 1,
            rate: 2.0,
            size: 1024,
            max_disconnect: Duration::from_secs(3),
            transport: Some(Transport::Websocket),
            ..Profile::default()
        }
    );
    // The saved profile answers every question: reusing it needs no flags and no terminal.
    let out = rtcheck_isolated()
        .arg("choose")
        .arg("--answers")
        .arg(&save)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["transport"], "websocket");
    assert_eq!(again["defaulted"], serde_json::json!([]));
}

#[test]
fn yaml_and_markdown_formats() {
    let args = [
        "choose",
        "--visible-within",
        "1s",
        "--upstream",
        "none",
        "--loss",
        "per-user",
        "--machines",
        "4",
    ];
    let out = rtcheck_isolated()
        .args(args)
        .args(["--format", "yaml"])
        .output()
        .unwrap();
    let y: serde_yaml::Value = serde_yaml::from_slice(&out.stdout).unwrap();
    assert_eq!(y["transport"].as_str(), Some("sse"));
    assert_eq!(y["delivery"].as_str(), Some("session-ack"));
    assert_eq!(y["topology"].as_str(), Some("pubsub"));
    assert_eq!(y["sizing"]["ring_bytes"].as_u64(), Some(30_720));

    let out = rtcheck_isolated()
        .args(args)
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(
        md.starts_with("# rtcheck choose\n\n**sse, delivery session-ack, topology pubsub**\n"),
        "{md}"
    );
    // Each question with its decision, each must-have by its id, from the JSON.
    let v: serde_json::Value = serde_json::from_slice(
        &rtcheck_isolated()
            .args(args)
            .args(["--format", "json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let reasons = v["reasons"].as_array().unwrap();
    assert_eq!(reasons.len(), 4);
    for q in reasons {
        let id = q["id"].as_str().unwrap().to_uppercase();
        let decision = q["decision"].as_str().unwrap();
        let at = md
            .find(&format!("\n- **{id}** "))
            .unwrap_or_else(|| panic!("{id}: {md}"));
        assert!(
            md[at..].contains(&format!("decision: **{decision}**")),
            "{id}: {md}"
        );
    }
    let musts = v["must_haves"].as_array().unwrap();
    assert_eq!(musts.len(), 6);
    for m in musts {
        let id = m["id"].as_str().unwrap();
        assert!(md.contains(&format!("] **{id}**: ")), "{id}: {md}");
    }
}

#[test]
fn output_file_and_help() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.json");
    let out = rtcheck_isolated()
        .args([
            "choose",
            "--visible-within",
            "3s",
            "--binary",
            "--loss",
            "shared",
            "--format",
            "json",
            "-o",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["transport"], "websocket");

    let out = rtcheck_isolated()
        .args(["choose", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(
        help.contains("Examples:\n  ask the questions (on a terminal):\n    rtcheck choose\n"),
        "{help}"
    );
    assert!(help.contains("--visible-within <DUR>"), "{help}");
    let out = rtcheck_isolated().arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("rtcheck {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let args = [
        "choose",
        "--visible-within",
        "3s",
        "--binary",
        "--loss",
        "shared",
    ];
    let out = rtcheck_isolated()
        .args(["--color", "always"])
        .args(args)
        .output()
        .unwrap();
    assert!(String::from_utf8(out.stdout).unwrap().contains("\x1b["));
    let out = rtcheck_isolated().args(args).output().unwrap();
    assert!(!String::from_utf8(out.stdout).unwrap().contains("\x1b["));
}

#[test]
fn a_saturated_worst_case_says_so() {
    // Shared loss: a design with a replay ring, whose text shows the sizing rows (a
    // snapshot design sizes no ring or session).
    let args = [
        "--visible-within",
        "1s",
        "--upstream",
        "none",
        "--loss",
        "shared",
        "--connections",
        "100000000",
        "--rate",
        "1000000",
        "--size",
        "67108864",
        "--max-disconnect",
        "1d",
    ];
    let v = choose_json(&args);
    let z = &v["sizing"];
    assert_eq!(z["sessions_worst_case_bytes"].as_u64(), Some(u64::MAX));
    assert_eq!(
        z["saturated"],
        serde_json::json!(["sessions_worst_case_bytes", "sessions_per_machine_bytes"])
    );
    let out = rtcheck_isolated()
        .arg("choose")
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("(saturated)"), "{text}");
    assert!(!text.contains("18446744"), "{text}");
    let md = rtcheck_isolated()
        .arg("choose")
        .args(args)
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&md.stdout).contains("(saturated)"));
}
