//! `rtcheck hops` and `rtcheck explain HOP` end to end: JSON parsed back, errors as one
//! line with exit 2, text within 80 columns (a setting or URL stays whole on its line).
use std::process::{Command, Output};

fn rtcheck(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtcheck"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run rtcheck")
}

fn json(args: &[&str]) -> serde_json::Value {
    let o = rtcheck(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("JSON")
}

#[test]
fn the_chain_in_json_has_the_contract_keys_and_values() {
    let v = json(&[
        "hops",
        "--path",
        "cloudflare,aws-alb,nginx",
        "--format",
        "json",
    ]);
    assert_eq!(
        v["path"],
        serde_json::json!(["cloudflare", "aws-alb", "nginx"])
    );
    assert_eq!(v["tightest_idle_s"], 60);
    assert_eq!(v["heartbeat_max_s"], 30);
    assert_eq!(v["lifetime_cap_s"], serde_json::Value::Null);
    assert_eq!(v["reconnect_required"], false);
    assert_eq!(v["excluded_transports"], serde_json::json!([]));
    assert!(v["reset_by"]
        .as_array()
        .unwrap()
        .contains(&"server-data".into()));
}

#[test]
fn overrides_and_exclusions_reach_the_output() {
    let v = json(&[
        "hops",
        "--path",
        "azure-front-door,aws-alb",
        "--override",
        "aws-alb.idle=600s",
        "--format",
        "json",
    ]);
    assert_eq!(v["excluded_transports"], serde_json::json!(["sse"]));
    assert_eq!(
        v["tightest_idle_s"], 300,
        "Front Door's 5 min WebSocket idle binds now"
    );
    assert_eq!(v["lifetime_cap_s"], 14400);
    assert_eq!(v["reconnect_required"], true);
}

#[test]
fn a_profile_path_with_inline_values_is_read() {
    let dir = std::env::temp_dir().join(format!("rtcheck-hops-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("p.yaml");
    std::fs::write(
        &f,
        "path:\n  - cloudflare\n  - aws-alb: {idle: 300s}\n  - nginx: {idle: 1h}\n",
    )
    .unwrap();
    let v = json(&["hops", "--profile", f.to_str().unwrap(), "--format", "json"]);
    assert_eq!(
        v["tightest_idle_s"], 100,
        "Cloudflare binds once the others are raised"
    );
    std::fs::write(&f, "path: [cloudflare, albb]\n").unwrap();
    let o = rtcheck(&["hops", "--profile", f.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("p.yaml:1: path: unknown hop `albb`"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for args in [
        &["hops", "--path", "nginx,nope"][..],
        &[
            "hops",
            "--path",
            "aws-alb",
            "--override",
            "aws-alb.idle=9999s",
        ],
        &["hops", "--path", "heroku", "--override", "heroku.idle=2m"],
        &["hops", "--path", "nginx", "--override", "nginx.idle"],
        &["hops", "--override", "nginx.idle=5s"],
        &["explain", "no-such-hop"],
    ] {
        let o = rtcheck(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}: half an output");
    }
}

#[test]
fn text_fits_80_columns_and_explain_shows_sources() {
    for args in [
        &["hops"][..],
        &["hops", "--path", "cloudflare,aws-alb,nginx"],
        &["hops", "--path", "azure-front-door,azure-appgw,haproxy"],
        &["hops", "--path", "cloudflare,render"],
        &["hops", "--path", "fastly,cloud-run"],
        &["explain", "aws-alb"],
        &["explain", "fly"],
        &["explain", "akamai"],
    ] {
        let o = rtcheck(args);
        assert!(o.status.success(), "{args:?}");
        let text = String::from_utf8(o.stdout).unwrap();
        for line in text.lines() {
            let whole = !line.trim().contains("  ") && line.starts_with("    ");
            assert!(
                line.chars().count() <= 80 || whole,
                "{args:?}: {} columns: {line}",
                line.chars().count()
            );
        }
    }
    let o = rtcheck(&["explain", "aws-alb"]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("idle_timeout.timeout_seconds"), "{text}");
    assert!(text.contains("https://docs.aws.amazon.com/"), "{text}");
    assert!(text.contains("read 2026-12-01"), "{text}");
}

#[test]
fn choose_with_a_path_shows_the_chain_and_follows_what_a_hop_forces() {
    let base = [
        "choose",
        "--visible-within",
        "1s",
        "--upstream",
        "sparse",
        "--loss",
        "shared",
        "--no-input",
        "--format",
        "json",
    ];
    let with = |extra: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        json(&a)
    };
    // Azure Front Door does not support SSE: not recommended, WebSocket instead.
    let v = with(&["--path", "azure-front-door"]);
    assert_eq!(v["transport"], "websocket");
    assert_eq!(
        v["chain"]["excluded_transports"],
        serde_json::json!(["sse"])
    );
    let path = v["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "path")
        .unwrap();
    assert!(path["decision"]
        .as_str()
        .unwrap()
        .starts_with("websocket instead of sse"));
    // Cloudflare -> ALB -> nginx: SSE stays, heartbeat 30 s, no lifetime cap, nginx settings.
    let v = with(&["--path", "cloudflare,aws-alb,nginx"]);
    assert_eq!(v["transport"], "sse");
    assert_eq!(v["chain"]["heartbeat_max_s"], 30);
    assert_eq!(v["chain"]["lifetime_cap_s"], serde_json::Value::Null);
    let notes = v["notes"].to_string();
    assert!(notes.contains("proxy_buffering off"), "{notes}");
    assert!(notes.contains("https://docs.aws.amazon.com/"), "{notes}");
    assert_eq!(
        v["profile"]["path"],
        serde_json::json!(["cloudflare", "aws-alb", "nginx"])
    );
    // A declared value moves the binding hop.
    let v = with(&[
        "--path",
        "cloudflare,aws-alb,nginx",
        "--override",
        "aws-alb.idle=300s",
        "--override",
        "nginx.idle=1h",
    ]);
    assert_eq!(v["chain"]["tightest_idle_s"], 100);
    // No path: no chain, no path reason.
    let v = with(&[]);
    assert!(v.get("chain").is_none());
    // Bad input: one line, exit 2.
    let o = rtcheck(&[
        "choose",
        "--visible-within",
        "1s",
        "--upstream",
        "sparse",
        "--loss",
        "shared",
        "--no-input",
        "--override",
        "aws-alb.idle=300s",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--override needs --path"));
}

#[test]
fn review_checks_the_declared_ping_against_the_profile_path() {
    let dir = std::env::temp_dir().join(format!("rtcheck-hops-review-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let profile = dir.join("p.yaml");
    let answers = dir.join("a.yaml");
    let status = |ping: &str, path: &str| {
        std::fs::write(
            &profile,
            format!("visible_within: 200ms\nupstream: sparse\nloss: shared\ntransport: websocket\n{path}"),
        )
        .unwrap();
        std::fs::write(
            &answers,
            format!("answers:\n  - id: ping-interval\n    answer: yes\n    value: {{ping: {ping}, pong_wait: 58s}}\n"),
        )
        .unwrap();
        let v = json(&[
            "review",
            "--profile",
            profile.to_str().unwrap(),
            "--answers",
            answers.to_str().unwrap(),
            "--only",
            "ping-interval",
            "--format",
            "json",
        ]);
        let f = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == "ping-interval")
            .unwrap()
            .clone();
        (
            f["status"].as_str().unwrap().to_string(),
            f["observed"].as_str().unwrap().to_string(),
        )
    };
    let path = "path: [cloudflare, aws-alb, nginx]\n";
    assert_eq!(status("25s", path).0, "pass");
    let (st, why) = status("45s", path);
    assert_eq!(st, "warn", "{why}");
    assert!(
        why.contains("aws-alb") && why.contains("at most 30 s"),
        "{why}"
    );
    assert_eq!(
        status("45s", "").0,
        "warn",
        "without a path only the production range speaks"
    );
    assert!(!status("45s", "").1.contains("aws-alb"));
    let path = "path:\n  - cloudflare\n  - aws-alb: {idle: 600s}\n  - nginx: {idle: 1h}\n";
    // The ALB and nginx raised: Cloudflare's 100 s allows 50 s, so only the production
    // range (20-30 s) still warns.
    let (st, why) = status("45s", path);
    assert_eq!(st, "warn", "{why}");
    assert!(!why.contains("against the path"), "{why}");
    assert!(why.contains("slower than production"), "{why}");
    std::fs::remove_dir_all(&dir).unwrap();
}
