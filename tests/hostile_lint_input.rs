//! Hostile input on lint's parsers and loader, and on the duration flags (issue 41, the
//! input half): durations have a range (a flag past ten years is exit 2, a config value the
//! proxy itself refuses is a Fail saying so), input files are regular files inside the
//! given paths, an error never quotes a file that is not a config, YAML depth is refused
//! before parsing, and the total input is bounded.
mod common;
use common::rtcheck;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// `lint PATH --format json --ping 25s`: (exit code, report or Null, stderr).
fn lint_json(path: &Path, extra: &[&str]) -> (Option<i32>, Value, String) {
    let out = rtcheck()
        .arg("lint")
        .arg(path)
        .args(["--format", "json", "--ping", "25s"])
        .args(extra)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code(),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn finding<'a>(v: &'a Value, id: &str) -> Vec<&'a Value> {
    v["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("no findings in {v}"))
        .iter()
        .filter(|f| f["id"] == id)
        .collect()
}

#[test]
fn a_duration_flag_past_ten_years_is_exit_2_not_a_panic() {
    let huge = "9223372036854775807s";
    for args in [
        vec!["audit", "--watch", huge],
        vec!["audit", "--verify", "--verify-timeout", huge],
        vec!["verify", "delivery", "--timeout", huge],
        vec!["choose", "--no-input", "--visible-within", huge],
        vec!["lint", "-", "--kind", "nginx", "--ping", huge],
        vec!["serve", "--listen", "127.0.0.1:0", "--ping", huge],
    ] {
        let out = rtcheck().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("too large"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn timeouts_the_proxy_refuses_are_a_fail_saying_so() {
    let tmp = tempfile::tempdir().unwrap();
    let nginx = tmp.path().join("nginx.conf");
    std::fs::write(
        &nginx,
        "http {\n server {\n  location /ws {\n   proxy_pass http://b;\n   proxy_http_version 1.1;\n   proxy_set_header Upgrade $http_upgrade;\n   proxy_set_header Connection \"upgrade\";\n   proxy_read_timeout 9223372036854776s;\n   proxy_send_timeout 18446744073709551616s;\n  }\n }\n}\n",
    )
    .unwrap();
    let (code, v, err) = lint_json(&nginx, &[]);
    assert_eq!(code, Some(1), "{err}");
    for id in ["nginx-read-timeout", "nginx-send-timeout"] {
        let f = finding(&v, id);
        assert_eq!(f.len(), 1, "{id}: {v}");
        assert_eq!(f[0]["status"], "fail", "{id}");
        let obs = f[0]["observed"].as_str().unwrap();
        assert!(obs.contains("refuses to load"), "{id}: {obs}");
    }
    // Accepted by nginx -t (9223372036854775 s): a long timeout, no finding for it.
    std::fs::write(
        &nginx,
        std::fs::read_to_string(&nginx)
            .unwrap()
            .replace("9223372036854776s", "9223372036854775s"),
    )
    .unwrap();
    let (_, v, _) = lint_json(&nginx, &[]);
    let f = finding(&v, "nginx-read-timeout");
    assert!(f.iter().all(|f| f["status"] == "pass"), "{v}");

    let haproxy = tmp.path().join("haproxy.cfg");
    for (value, refused) in [("30d", true), ("1e9s", true), ("25d", true), ("24d", false)] {
        std::fs::write(
            &haproxy,
            format!("defaults\n  mode http\n  timeout client 30s\n  timeout server 30s\nbackend be_ws\n  timeout tunnel {value}\n  timeout client-fin 30s\n  server s1 127.0.0.1:9\n"),
        )
        .unwrap();
        let (_, v, err) = lint_json(&haproxy, &[]);
        let f = finding(&v, "haproxy-timeout-tunnel");
        let fail = f
            .iter()
            .any(|f| f["status"] == "fail" && f["observed"].as_str().unwrap().contains("refuses"));
        assert_eq!(fail, refused, "{value}: {v} {err}");
    }
}
