//! `audit` on a proxy host: nginx, HAProxy or Caddy found by their processes in the procfs
//! under audit (`comm`) or their config at the usual path under the audited root. Their
//! config is read read-only and linted (the findings keep lint's ids); each running proxy's
//! own open-files limit (`<procfs>/PID/limits`) is judged against 2 fds per connection
//! (`proxy-fd-limit`). Nothing outside `root` and `procfs` is read.
use super::load::load_under;
use super::{lint, Kind, Workload};
use crate::findings::{Finding, Fix, Status};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each proxy: process name, config kind, usual config path (relative to the root).
const PROXIES: &[(&str, Kind, &str)] = &[
    ("nginx", Kind::Nginx, "etc/nginx/nginx.conf"),
    ("haproxy", Kind::Haproxy, "etc/haproxy/haproxy.cfg"),
    ("caddy", Kind::Caddy, "etc/caddy/Caddyfile"),
];

/// The ids of the findings about the running proxies themselves (`explain` knows them).
pub const FD_LIMIT: &str = "proxy-fd-limit";
pub const CONFIG_READ: &str = "proxy-config-read";

/// What `explain` says about [`FD_LIMIT`] and [`CONFIG_READ`]: (id, title, rule).
pub const EXPLAINED: &[(&str, &str, &str)] = &[
    (
        FD_LIMIT,
        "a running proxy's open-files limit holds 2 fds per connection",
        "audit on a proxy host (--role proxy, or --root DIR): a proxy holds a client and an \
         upstream socket per proxied connection, so each worker process needs 2 fds per \
         connection it serves (the connections shared among the workers; the lowest \
         worker's soft limit from PROC/PID/limits is judged). Raise it in the service unit \
         (LimitNOFILE=) or the proxy's own setting (nginx: worker_rlimit_nofile).",
    ),
    (
        CONFIG_READ,
        "a running proxy's config was linted",
        "audit on a proxy host (--role proxy, or --root DIR): a proxy that runs but whose \
         config is not at its usual path under the root (etc/nginx/nginx.conf, \
         etc/haproxy/haproxy.cfg, etc/caddy/Caddyfile) is a skip naming the path looked at; \
         lint the config where it is with `rtcheck lint PATH`.",
    ),
];

/// Processes of one proxy: pid -> (parent pid, soft open-files limit or why unread).
type Proc = (u32, Result<u64, String>);
type Procs = BTreeMap<u32, Proc>;

fn small(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut s = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(64 << 10)
        .read_to_string(&mut s)
        .ok()?;
    Some(s)
}

/// The processes under `procfs` whose `comm` is `name`.
fn processes(procfs: &Path, name: &str) -> Procs {
    let mut out = Procs::new();
    let Ok(dir) = std::fs::read_dir(procfs) else {
        return out;
    };
    for e in dir.flatten().take(1 << 20) {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let p = e.path();
        if small(&p.join("comm")).is_none_or(|c| c.trim() != name) {
            continue;
        }
        // stat: "pid (comm) state ppid ..."; comm may hold spaces, so split after ')'.
        let ppid = small(&p.join("stat"))
            .and_then(|s| {
                s.rsplit_once(')')
                    .and_then(|(_, r)| r.split_whitespace().nth(1)?.parse().ok())
            })
            .unwrap_or(0);
        let lp = p.join("limits");
        let soft = small(&lp)
            .ok_or_else(|| format!("{}: unreadable", lp.display()))
            .and_then(|t| crate::audit::host::parse_limits(&lp, &t).map(|l| l.soft));
        out.insert(pid, (ppid, soft));
    }
    out
}

fn fd_finding(
    name: &str,
    pid: u32,
    status: Status,
    observed: String,
    expected: String,
    reason: Option<String>,
) -> Finding {
    Finding {
        id: FD_LIMIT.into(),
        title: format!("{name}'s open-files limit holds 2 fds per connection"),
        status,
        observed,
        expected,
        rule: "a proxy holds a client and an upstream socket per proxied connection: 2 fds each"
            .into(),
        reason,
        evidence: vec![crate::evidence::reference("ulimit-n")],
        fix: Fix {
            summary: format!("raise {name}'s open-files limit (pid {pid})"),
            runtime: vec![],
            persistent: vec![format!(
                "systemd unit of {name}, [Service]: LimitNOFILE=<2 x connections + margin>"
            )],
        },
        verify: None,
        verification: None,
        numbers: BTreeMap::new(),
        location: None,
    }
}

/// Worker processes' limit against their share (nginx: workers are children of the master).
fn fd_limit(name: &str, procs: &Procs, connections: u64) -> Option<Finding> {
    let workers: Vec<(&u32, &Proc)> = procs
        .iter()
        .filter(|(_, (pp, _))| procs.contains_key(pp))
        .collect();
    let judged: Vec<_> = if workers.is_empty() {
        procs.iter().collect()
    } else {
        workers
    };
    let n = judged.len().max(1) as u64;
    let need = (connections * 2).div_ceil(n);
    let (pid, (_, soft)) = judged
        .iter()
        .min_by_key(|(_, (_, s))| *s.as_ref().unwrap_or(&0))?;
    let expected = format!(
        ">= {need} per process ({n} process{} share {connections} connections, 2 fds each)",
        if n == 1 { "" } else { "es" }
    );
    Some(match soft {
        Err(why) => fd_finding(
            name,
            **pid,
            Status::Skip,
            "limit not read".into(),
            expected,
            Some(why.clone()),
        ),
        Ok(s) => {
            let status = if *s >= need {
                Status::Pass
            } else {
                Status::Fail
            };
            fd_finding(
                name,
                **pid,
                status,
                format!("pid {pid}: soft open-files limit {s}"),
                expected,
                None,
            )
        }
    })
}

/// The proxies running under `procfs` (by `comm`): named when an audit does not judge them.
pub fn running(procfs: &Path) -> Vec<&'static str> {
    PROXIES
        .iter()
        .filter(|(name, ..)| !processes(procfs, name).is_empty())
        .map(|(name, ..)| *name)
        .collect()
}

/// Findings of `id` (one per proxy) as one finding that lists each: an id is printed
/// once per run, so JUnit testcases and SARIF results do not repeat.
fn one_finding(findings: Vec<Finding>, id: &str, title: &str) -> Option<Finding> {
    let mut it = findings.into_iter().filter(|f| f.id == id);
    let mut one = it.next()?;
    for f in it {
        one.title = title.to_string();
        one.status = one.status.max(f.status);
        one.observed = format!("{}; {}", one.observed, f.observed);
        one.expected = format!("{}; {}", one.expected, f.expected);
        one.reason = match (one.reason.take(), f.reason) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        one.fix.summary = format!("{}; {}", one.fix.summary, f.fix.summary);
        one.fix.persistent.extend(f.fix.persistent);
    }
    Some(one)
}

/// The proxy findings of an audit: lint findings of each proxy's config under `root`
/// (None: only configs of running proxies, and those only if a root is known) and the
/// running proxies' fd limits.
pub fn findings(procfs: &Path, root: Option<&Path>, w: &Workload) -> anyhow::Result<Vec<Finding>> {
    let mut out = Vec::new();
    for (name, kind, rel) in PROXIES {
        let procs = processes(procfs, name);
        let config = root.map(|r| r.join(rel)).filter(|p| p.is_file());
        if let Some(f) = fd_limit(name, &procs, w.connections) {
            out.push(f);
        }
        let Some(file) = config else {
            if !procs.is_empty() {
                let where_ = root.map_or("no --root given".into(), |r| {
                    format!("no {} under {}", rel, r.display())
                });
                let mut f = fd_finding(
                    name,
                    *procs.keys().next().unwrap_or(&0),
                    Status::Skip,
                    format!("{name} running, config not read"),
                    "its config linted".into(),
                    Some(where_),
                );
                f.id = CONFIG_READ.into();
                f.title = format!("{name}'s config linted");
                out.push(f);
            }
            continue;
        };
        let dir: PathBuf = file.parent().unwrap_or(Path::new("/")).to_path_buf();
        let loaded = load_under(&file, *kind, &dir, root.unwrap_or(Path::new("/")))?;
        out.extend(lint(&loaded.configs, w, &[]));
        out.extend(loaded.skipped);
    }
    let per_proxy = [
        (
            FD_LIMIT,
            "the proxies' open-files limits hold 2 fds per connection",
        ),
        (CONFIG_READ, "the proxies' configs linted"),
    ];
    let (mine, mut out): (Vec<_>, Vec<_>) = out
        .into_iter()
        .partition(|f| per_proxy.iter().any(|(id, _)| f.id == *id));
    for (id, title) in per_proxy {
        out.extend(one_finding(mine.clone(), id, title));
    }
    Ok(out)
}
