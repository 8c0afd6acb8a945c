//! Shared by the verify_* tests: run `rtcheck verify ... --format json` and read the
//! measurements back from verify's own report (verifications[]).
#![allow(dead_code)]
use assert_cmd::Command;
use serde_json::Value;

pub struct Out {
    pub code: i32,
    pub json: Value,
    pub stderr: String,
}

pub fn verify_json(args: &[&str]) -> Out {
    let out = Command::cargo_bin("rtcheck")
        .unwrap()
        .arg("verify")
        .args(args)
        .args(["--format", "json", "--quiet", "--color", "never"])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let json = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\nstderr: {stderr}"));
    Out {
        code: out.status.code().unwrap_or(-1),
        json,
        stderr,
    }
}

/// The verification of experiment `name` (panics with the whole report if absent).
pub fn verification<'a>(json: &'a Value, name: &str) -> &'a Value {
    json["verifications"]
        .as_array()
        .expect("verifications array")
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no `{name}` in {json:#}"))
}

pub fn measured(v: &Value) -> f64 {
    v["measured"]
        .as_f64()
        .unwrap_or_else(|| panic!("no number: {v:#}"))
}

pub fn assert_valid(v: &Value) {
    assert_eq!(v["valid"], true, "invalid measurement: {v:#}");
}

pub fn sysctl(path: &str) -> String {
    std::fs::read_to_string(format!("/proc/sys/{path}")).unwrap()
}

pub fn nofile_hard() -> u64 {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    line.split_whitespace().nth(4).unwrap().parse().unwrap()
}
