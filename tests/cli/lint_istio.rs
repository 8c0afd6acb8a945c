//! lint on Istio objects (issue 40): a DestinationRule's tcp.idleTimeout and an
//! EnvoyFilter's stream_idle_timeout against the heartbeat, read back from the JSON report
//! with their file:line; 0s passes, a value that is not a duration fails, and a declared
//! path with istio-sidecar supplies the heartbeat when --ping is not given.
use serde_json::Value;
use std::process::Command;

const OBJECTS: &str = "\
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: chat
  namespace: prod
spec:
  host: chat.prod.svc.cluster.local
  trafficPolicy:
    connectionPool:
      tcp:
        idleTimeout: 20s
      http:
        idleTimeout: 5s
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata:
  name: stream-idle
  namespace: prod
spec:
  configPatches:
    - applyTo: NETWORK_FILTER
      patch:
        operation: MERGE
        value:
          typed_config:
            stream_idle_timeout: 0s
";

fn lint(text: &str, args: &[&str]) -> (Value, i32) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("istio.yaml");
    std::fs::write(&f, text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rtcheck"))
        .arg("lint")
        .arg(&f)
        .args(["--format", "json"])
        .args(args)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&o.stderr));
    });
    (v, o.status.code().unwrap_or(-1))
}

fn with_id<'a>(v: &'a Value, id: &str) -> Vec<&'a Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == id)
        .collect()
}

#[test]
fn a_tcp_idle_timeout_under_the_heartbeat_fails_at_its_line() {
    let (v, code) = lint(OBJECTS, &["--ping", "30s"]);
    assert_eq!(code, 1, "{v}");
    let tcp = with_id(&v, "istio-tcp-idle-timeout");
    assert_eq!(tcp.len(), 1, "{v}");
    assert_eq!(tcp[0]["status"], "fail");
    let observed = tcp[0]["observed"].as_str().unwrap();
    assert!(observed.contains("istio.yaml:11"), "{observed}");
    assert!(observed.contains("tcp.idleTimeout: 20s"), "{observed}");
    // http.idleTimeout (no active request) is not judged; 0s disables the stream timer.
    assert!(!v.to_string().contains("http.idleTimeout: 5s"), "{v}");
    for f in with_id(&v, "istio-stream-idle-timeout") {
        assert_ne!(f["status"], "fail", "{f}");
    }
    // Above the heartbeat (twice it and more): no failure.
    let (v, _) = lint(&OBJECTS.replace("20s", "1h"), &["--ping", "30s"]);
    for f in with_id(&v, "istio-tcp-idle-timeout") {
        assert_eq!(f["status"], "pass", "{f}");
    }
}

#[test]
fn a_stream_idle_timeout_is_judged_against_the_paths_heartbeat() {
    let text = OBJECTS.replace("stream_idle_timeout: 0s", "stream_idle_timeout: 60s");
    // cloudflare's 100 s idle needs a heartbeat of at most 50 s: 60 s is under twice it.
    let (v, _) = lint(&text, &["--path", "cloudflare,istio-sidecar"]);
    let s = with_id(&v, "istio-stream-idle-timeout");
    assert_eq!(s.len(), 1, "{v}");
    assert_ne!(s[0]["status"], "pass", "{v}");
    assert!(s[0]["observed"]
        .as_str()
        .unwrap()
        .contains("stream_idle_timeout: 60s"));
    let (v, code) = lint(
        &OBJECTS.replace("idleTimeout: 20s", "idleTimeout: soon"),
        &["--ping", "30s"],
    );
    assert_eq!(code, 1);
    let bad = with_id(&v, "istio-tcp-idle-timeout");
    assert!(bad[0]["observed"]
        .as_str()
        .unwrap()
        .contains("not a duration"));
}
