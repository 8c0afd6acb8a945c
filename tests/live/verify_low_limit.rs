//! `audit --verify` under `ulimit -n 1024` (set in the child before exec): experiments that
//! need more descriptors scale down and say so instead of coming back invalid, and the exit
//! code agrees with the summary and the measurements.
use std::os::unix::process::CommandExt;
use std::process::Command;

#[test]
fn audit_verify_scales_down_under_ulimit_1024_and_exit_code_follows_the_summary() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtcheck"));
    cmd.args(["audit", "--verify", "--format", "json"]);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, 1024, 1024)
                .map_err(std::io::Error::from)
        });
    }
    let out = cmd.output().expect("run rtcheck");
    let code = out.status.code().expect("exit code");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "exit {code}, stdout not JSON ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let mut invalid = Vec::new();
    let mut scaled = Vec::new();
    for f in r["findings"].as_array().unwrap() {
        let Some(v) = f.get("verification") else {
            continue;
        };
        let verdict = v["verdict"].as_str().unwrap();
        if v["valid"] != true {
            invalid.push(format!("{}: {verdict}", f["id"]));
        }
        if verdict.starts_with("scaled down to ") {
            assert!(verdict.contains("hard 1,024"), "{verdict}");
            scaled.push(f["id"].as_str().unwrap().to_string());
        }
    }
    assert!(invalid.is_empty(), "invalid under ulimit 1024: {invalid:?}");
    for id in ["time-wait", "ephemeral-ports", "memory"] {
        assert!(
            scaled.contains(&id.to_string()),
            "{id} not scaled: {scaled:?}"
        );
    }
    // fd-limit fails at 1024 for the default 10,000 connections: the exit code is 1
    // exactly because the summary counts a fail.
    let fails = r["summary"]["fail"].as_u64().unwrap();
    assert!(fails >= 1, "{}", r["summary"]);
    assert_eq!(code, 1);
}
