//! `audit` on a proxy host (issue 25): an nginx master and worker in a mounted procfs, its
//! config under the mounted --root. The config's lint findings (lint's ids, file:line under
//! the root) and the worker's own open-files limit are in the audit; `--no-proxy-config`
//! turns both off; a mounted procfs without --root reads no config (a skip says so).
use crate::common;
use common::rtcheck;
use serde_json::Value;
use std::path::Path;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}

fn process(proc: &Path, pid: u32, ppid: u32, soft: u64) {
    let d = proc.join(pid.to_string());
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("comm"), "nginx\n").unwrap();
    std::fs::write(
        d.join("stat"),
        format!("{pid} (nginx) S {ppid} {pid} {pid} 0 -1\n"),
    )
    .unwrap();
    std::fs::write(
        d.join("limits"),
        format!("Limit                     Soft Limit           Hard Limit           Units\nMax open files            {soft}                 524288               files\n"),
    )
    .unwrap();
}

fn audit(tmp: &Path, extra: &[&str]) -> Value {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stock-distro");
    let out = rtcheck()
        .arg("audit")
        .arg("--procfs")
        .arg(tmp.join("proc"))
        .arg("--sysfs")
        .arg(fixtures.join("sys"))
        .args([
            "--format",
            "json",
            "--fail-on",
            "never",
            "--connections",
            "10000",
        ])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn find<'a>(v: &'a Value, id: &str) -> Option<&'a Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
}

#[test]
fn audit_reads_the_proxys_config_under_the_root_and_its_fd_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stock-distro/proc");
    copy_dir(&fixtures, &tmp.path().join("proc"));
    process(&tmp.path().join("proc"), 400, 1, 65536);
    process(&tmp.path().join("proc"), 401, 400, 1024);
    let etc = tmp.path().join("root/etc/nginx");
    std::fs::create_dir_all(etc.join("conf.d")).unwrap();
    std::fs::write(
        etc.join("nginx.conf"),
        "events {}\nhttp {\n  include /etc/nginx/conf.d/*.conf;\n}\n",
    )
    .unwrap();
    std::fs::write(
        etc.join("conf.d/app.conf"),
        "server {\n  location /ws {\n    proxy_pass http://127.0.0.1:9;\n  }\n}\n",
    )
    .unwrap();
    let root = tmp.path().join("root");

    let v = audit(tmp.path(), &["--root", root.to_str().unwrap()]);
    let ws = find(&v, "nginx-ws-upgrade").expect("the config's lint findings are in the audit");
    assert_eq!(ws["status"], "fail");
    assert_eq!(
        ws["location"]["file"],
        etc.join("conf.d/app.conf").display().to_string()
    );
    assert_eq!(ws["location"]["line"], 2);
    let fd = find(&v, "proxy-fd-limit").unwrap();
    assert_eq!(fd["status"], "fail", "{fd:#}");
    assert!(
        fd["observed"]
            .as_str()
            .unwrap()
            .contains("pid 401: soft open-files limit 1024"),
        "{fd:#}"
    );
    assert!(
        fd["expected"].as_str().unwrap().contains(">= 20000"),
        "{fd:#}"
    );

    let off = audit(
        tmp.path(),
        &["--root", root.to_str().unwrap(), "--no-proxy-config"],
    );
    assert!(find(&off, "nginx-ws-upgrade").is_none() && find(&off, "proxy-fd-limit").is_none());

    // The profile's path reaches the proxy's lint rules: a 40 s ping behind Cloudflare
    // wants twice it from nginx, and the default 60 s proxy_read_timeout is short of that
    // (without the path, 60 s above the ping passes).
    let profile = tmp.path().join("profile.yaml");
    std::fs::write(&profile, "ping: 40s\npath: [cloudflare, nginx]\n").unwrap();
    let with = ["--root", root.to_str().unwrap(), "--profile"];
    let v = audit(
        tmp.path(),
        &[&with[..], &[profile.to_str().unwrap()]].concat(),
    );
    let rt = find(&v, "nginx-read-timeout").expect("checked under the path");
    assert_eq!(rt["status"], "warn", "{rt:#}");
    assert!(
        rt["expected"]
            .as_str()
            .unwrap()
            .contains("cloudflare -> nginx"),
        "{rt:#}"
    );
    std::fs::write(&profile, "ping: 40s\n").unwrap();
    let v = audit(
        tmp.path(),
        &[&with[..], &[profile.to_str().unwrap()]].concat(),
    );
    let rt = find(&v, "nginx-read-timeout").unwrap();
    assert_eq!(rt["status"], "pass", "{rt:#}");

    // A mounted procfs and no --root: this machine's /etc is not read.
    let v = audit(tmp.path(), &["--role", "proxy"]);
    assert!(find(&v, "nginx-ws-upgrade").is_none());
    let skip = find(&v, "proxy-config-read").unwrap();
    assert_eq!(skip["status"], "skip");
    assert!(skip["reason"].as_str().unwrap().contains("no --root"));

    // The proxy's checks belong to the proxy role: a server audit only names it.
    let v = audit(tmp.path(), &["--role", "server"]);
    for id in ["proxy-fd-limit", "proxy-config-read"] {
        assert!(find(&v, id).is_none(), "{id} on a server audit");
    }
    let target = v["target"].as_str().unwrap();
    assert!(
        target.contains("nginx running here, not audited"),
        "{target}"
    );
}

#[test]
fn two_proxies_on_one_host_make_one_finding_per_id() {
    let tmp = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stock-distro/proc");
    let proc = tmp.path().join("proc");
    copy_dir(&fixtures, &proc);
    process(&proc, 400, 1, 65536);
    process(&proc, 401, 400, 1024);
    process(&proc, 500, 1, 100_000);
    std::fs::write(proc.join("500/comm"), "haproxy\n").unwrap();
    std::fs::write(proc.join("500/stat"), "500 (haproxy) S 1 500 500 0 -1\n").unwrap();
    let v = audit(tmp.path(), &["--role", "proxy"]);
    let ids: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["location"].is_null())
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(ids.len(), unique.len(), "an id twice in one run: {ids:?}");
    let fd = find(&v, "proxy-fd-limit").unwrap();
    assert_eq!(fd["status"], "fail", "the worst of the two: {fd:#}");
    let observed = fd["observed"].as_str().unwrap();
    assert!(
        observed.contains("pid 401: soft open-files limit 1024")
            && observed.contains("pid 500: soft open-files limit 100000"),
        "{fd:#}"
    );
    let read = find(&v, "proxy-config-read").unwrap();
    let observed = read["observed"].as_str().unwrap();
    assert!(
        observed.contains("nginx") && observed.contains("haproxy"),
        "{read:#}"
    );
}
