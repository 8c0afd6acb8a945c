//! Huge numbers in /proc (garbage or a hostile mount) never crash the audit and never
//! wrap into a pass: each check either skips naming the file or judges the huge value.
use assert_cmd::Command;
use std::path::Path;

const MAX: &str = "18446744073709551615";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

#[test]
fn huge_proc_values_skip_or_judge_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(Path::new("tests/fixtures/stock-distro"), dir.path());
    let proc = dir.path().join("proc");
    let put = |rel: &str, text: String| std::fs::write(proc.join(rel), text).unwrap();
    put(
        "meminfo",
        format!("MemTotal: {MAX} kB\nMemAvailable: {MAX} kB\n"),
    );
    put("sys/net/ipv4/tcp_keepalive_time", format!("{MAX}\n"));
    put("sys/net/ipv4/tcp_keepalive_probes", format!("{MAX}\n"));
    put(
        "net/sockstat",
        format!("sockets: used 1\nTCP: inuse 1 orphan 0 tw {MAX} alloc 1 mem 1\n"),
    );
    let out = Command::cargo_bin("rtcheck")
        .unwrap()
        .args([
            "audit",
            "--format",
            "json",
            "--fail-on",
            "never",
            // A proxy's TIME_WAIT holds ephemeral ports (a server's does not).
            "--role",
            "proxy",
            "--procfs",
        ])
        .arg(&proc)
        .arg("--sysfs")
        .arg(dir.path().join("sys"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let status = |id: &str| {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id)
            .unwrap()
            .clone()
    };
    // meminfo overflows when converted to bytes: the memory check skips and names the file.
    let mem = status("memory");
    assert_eq!(mem["status"], "skip", "{mem:#}");
    assert!(
        mem["reason"].as_str().unwrap().contains("meminfo"),
        "{mem:#}"
    );
    // Huge keepalive and TIME_WAIT are judged as huge, not wrapped to small.
    assert_eq!(status("tcp-keepalive")["status"], "warn");
    assert_eq!(status("time-wait")["status"], "warn");
}
