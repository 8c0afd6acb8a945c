//! Issue 35 item 5: every id any command prints is known to `explain`. The commands run in
//! JSON on fixtures (audit, audit on a proxy host, lint, review, hops, choose) and against
//! `serve` (probe); every `id` in their output is asked of `explain` (exit 0).
use crate::common;
use common::{rtcheck, Server};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// The JSON a command printed; the exit code may be 0 or 1 (findings), never 2.
fn json(args: &[&str]) -> Value {
    let out = rtcheck().args(args).output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// Every string under a key `id`, anywhere in the document.
fn ids(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("id", Value::String(s)) => {
                        out.insert(s.clone());
                    }
                    _ => ids(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| ids(x, out)),
        _ => {}
    }
}

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

fn nginx(proc: &Path, pid: u32, ppid: u32) {
    let d = proc.join(pid.to_string());
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("comm"), "nginx\n").unwrap();
    let stat = format!("{pid} (nginx) S {ppid} {pid} {pid} 0 -1\n");
    std::fs::write(d.join("stat"), stat).unwrap();
    std::fs::write(
        d.join("limits"),
        "Limit                     Soft Limit           Hard Limit           Units\n\
         Max open files            1024                 524288               files\n",
    )
    .unwrap();
}

#[test]
fn every_id_printed_is_known_to_explain() {
    let mut all = BTreeSet::new();
    let proc = fixture("stock-distro/proc");
    let sys = fixture("stock-distro/sys");
    let (proc, sys) = (proc.to_str().unwrap(), sys.to_str().unwrap());
    let audit = [
        "audit", "--format", "json", "--procfs", proc, "--sysfs", sys,
    ];
    ids(&json(&audit), &mut all);
    // A proxy host: an nginx master and worker in a copy of the procfs, its config at the
    // usual path under the root.
    let tmp = tempfile::tempdir().unwrap();
    let hostproc = tmp.path().join("proc");
    copy_dir(&fixture("stock-distro/proc"), &hostproc);
    nginx(&hostproc, 400, 1);
    nginx(&hostproc, 401, 400);
    let etc = tmp.path().join("root/etc/nginx");
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::copy(fixture("docs/lint/nginx.conf"), etc.join("nginx.conf")).unwrap();
    let root = tmp.path().join("root");
    let mut on_proxy = audit.to_vec();
    on_proxy[4] = hostproc.to_str().unwrap();
    on_proxy.extend(["--role", "proxy", "--root", root.to_str().unwrap()]);
    ids(&json(&on_proxy), &mut all);
    for f in [
        "docs/lint/nginx.conf",
        "docs/lint/haproxy.cfg",
        "lint/guides",
    ] {
        let p = fixture(f);
        ids(
            &json(&["lint", "--format", "json", p.to_str().unwrap()]),
            &mut all,
        );
    }
    let answers = fixture("docs/review.yaml");
    let profile = fixture("docs/review-profile.yaml");
    ids(
        &json(&[
            "review",
            "--format",
            "json",
            "--answers",
            answers.to_str().unwrap(),
            "--profile",
            profile.to_str().unwrap(),
        ]),
        &mut all,
    );
    ids(&json(&["hops", "--format", "json"]), &mut all);
    let choose = [
        "choose",
        "--format",
        "json",
        "--visible-within",
        "200ms",
        "--upstream",
        "sparse",
        "--loss",
        "per-user",
        "--path",
        "aws-alb,nginx",
    ];
    ids(&json(&choose), &mut all);
    let s = Server::start(&[]);
    let (ws, sse) = (
        format!("ws://{}/ws", s.addr),
        format!("http://{}/sse", s.addr),
    );
    let probe = ["probe", "--quick", "--format", "json", "--path", "nginx"];
    ids(&json(&[&probe[..], &[&ws, &sse]].concat()), &mut all);
    // Ids that name a run's own expression are not catalogue ids.
    all.retain(|id| !id.starts_with("threshold:") && !id.starts_with("validity:"));
    assert!(all.len() > 40, "the runs printed ids: {all:?}");
    for must in [
        "proxy-fd-limit",
        "idle-timeout",
        "nginx-ws-upgrade",
        "aws-alb",
    ] {
        assert!(all.contains(must), "{must} printed: {all:?}");
    }
    // One process per id, four at a time: each run is mostly start-up latency on a
    // loaded host, not CPU, so the waits overlap (one at a time took ~25 s).
    let known = |id: &str| {
        let out = rtcheck()
            .args(["explain", id, "--procfs", proc, "--sysfs", sys])
            .output()
            .unwrap();
        out.status.code() == Some(0)
    };
    let asked: Vec<&String> = all.iter().collect();
    let known = &known;
    let unknown: Vec<&String> = std::thread::scope(|s| {
        let workers: Vec<_> = asked
            .chunks(asked.len().div_ceil(4))
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .filter(|id| !known(id.as_str()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .copied()
            .collect()
    });
    assert!(unknown.is_empty(), "explain does not know: {unknown:?}");
}

/// A rule found at two places in one run: two JUnit testcases, each named by its place.
#[test]
fn junit_testcases_never_share_a_name() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("nginx.conf");
    std::fs::write(
        &conf,
        "events {}\nhttp {\n  server {\n    location /ws {\n      proxy_pass http://127.0.0.1:9;\n    }\n    location /chat/ws {\n      proxy_pass http://127.0.0.1:9;\n    }\n  }\n}\n",
    )
    .unwrap();
    let out = rtcheck()
        .args(["lint", "--format", "junit"])
        .arg(&conf)
        .output()
        .unwrap();
    let xml = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = xml
        .split("<testcase name=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .collect();
    let upgrade = names
        .iter()
        .filter(|n| n.starts_with("nginx-ws-upgrade"))
        .count();
    assert_eq!(upgrade, 2, "{xml}");
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "{names:?}");
}
