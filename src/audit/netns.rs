//! `audit --netns PID` (issue 40): the network sysctls a process's sockets actually get.
//! Keepalive, the local port range and somaxconn are per network namespace (keepalive since
//! Linux 4.13), so a pod does not inherit the host's. The namespace's values are read in a
//! dedicated thread that joins the namespace (setns) and reads /proc/sys/net, which answers
//! for the namespace of the reading thread; the process running rtcheck never moves.
use super::host::{self, Host, Keepalive, PortRange, Read};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The per-namespace values audit judges.
#[derive(Debug, Clone)]
pub struct NetSysctls {
    pub keepalive: Read<Keepalive>,
    pub port_range: Read<PortRange>,
    pub somaxconn: Read<u64>,
}

/// One value of the namespace beside the host's (rtcheck's own namespace).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    pub sysctl: String,
    pub namespace: String,
    pub host: String,
}

/// What `--netns` read, for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetnsReport {
    pub pid: u32,
    /// The namespace's identity (`net:[4026532...]`), as /proc/PID/ns/net links to it.
    pub namespace: String,
    /// The same namespace as rtcheck's: nothing to compare.
    pub same_as_host: bool,
    pub differences: Vec<Difference>,
    /// Values read in the namespace, one `sysctl = value` each (or why not).
    pub values: Vec<String>,
}

/// Read the sysctls of `pid`'s network namespace (`procfs` is /proc). Errors (no such
/// process, no permission to join) name the pid and what failed.
pub fn read(procfs: &Path, pid: u32) -> Result<(String, NetSysctls), String> {
    let ns_path = procfs.join(pid.to_string()).join("ns/net");
    let id = std::fs::read_link(&ns_path)
        .map_err(|e| format!("--netns {pid}: {}: {e}", ns_path.display()))?
        .display()
        .to_string();
    let file = std::fs::File::open(&ns_path)
        .map_err(|e| format!("--netns {pid}: {}: {e}", ns_path.display()))?;
    let sys = procfs.join("sys");
    let worker = std::thread::Builder::new()
        .name("netns".into())
        .spawn(move || -> Result<NetSysctls, String> {
            // This thread alone changes namespace and ends with it.
            nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET).map_err(|e| {
                format!("--netns {pid}: joining its network namespace: {e} (needs CAP_SYS_ADMIN: run as root)")
            })?;
            Ok(read_sys(&sys))
        })
        .map_err(|e| format!("--netns {pid}: {e}"))?;
    let values = worker
        .join()
        .map_err(|_| format!("--netns {pid}: the reading thread failed"))??;
    Ok((id, values))
}

/// The values under a sysctl root (`/proc/sys`, or a fixture tree).
pub fn read_sys(sys: &Path) -> NetSysctls {
    let (port_range, _) = host::read_ports(sys);
    NetSysctls {
        keepalive: host::read_keepalive(sys),
        port_range,
        somaxconn: host::read_u64(&sys.join("net/core/somaxconn")),
    }
}

/// The values as `name = value` lines (a value not read says why).
fn lines(s: &NetSysctls) -> Vec<(String, String)> {
    let show = |r: Result<String, &String>| r.unwrap_or_else(|e| format!("not read: {e}"));
    let ka = s.keepalive.as_ref();
    vec![
        (
            "net.ipv4.tcp_keepalive_time".into(),
            show(ka.map(|k| k.time_s.to_string())),
        ),
        (
            "net.ipv4.tcp_keepalive_intvl".into(),
            show(ka.map(|k| k.intvl_s.to_string())),
        ),
        (
            "net.ipv4.tcp_keepalive_probes".into(),
            show(ka.map(|k| k.probes.to_string())),
        ),
        (
            "net.ipv4.ip_local_port_range".into(),
            show(
                s.port_range
                    .as_ref()
                    .map(|p| format!("{} {}", p.low, p.high)),
            ),
        ),
        (
            "net.core.somaxconn".into(),
            show(s.somaxconn.as_ref().map(u64::to_string)),
        ),
    ]
}

/// Compare the namespace's values with the host's (pure): one difference per sysctl whose
/// values were both read and differ.
pub fn compare(ns: &NetSysctls, host: &NetSysctls) -> Vec<Difference> {
    lines(ns)
        .into_iter()
        .zip(lines(host))
        .filter(|((_, a), (_, b))| {
            a != b && !a.starts_with("not read") && !b.starts_with("not read")
        })
        .map(|((name, a), (_, b))| Difference {
            sysctl: name,
            namespace: a,
            host: b,
        })
        .collect()
}

/// The report part, and `host` with the namespace's values in place of its own, so every
/// check judges what the process's sockets get.
pub fn apply(
    pid: u32,
    id: String,
    own_id: Option<String>,
    ns: NetSysctls,
    host: &mut Host,
) -> NetnsReport {
    let mine = NetSysctls {
        keepalive: host.keepalive.clone(),
        port_range: host.port_range.clone(),
        somaxconn: host.somaxconn.clone(),
    };
    let report = NetnsReport {
        pid,
        same_as_host: own_id.as_deref() == Some(id.as_str()),
        namespace: id,
        differences: compare(&ns, &mine),
        values: lines(&ns)
            .into_iter()
            .map(|(n, v)| format!("{n} = {v}"))
            .collect(),
    };
    host.keepalive = ns.keepalive;
    host.port_range = ns.port_range;
    host.somaxconn = ns.somaxconn;
    report
}

/// rtcheck's own network namespace, to tell "the same" from "equal values".
pub fn own(procfs: &Path) -> Option<String> {
    std::fs::read_link(procfs.join("self/ns/net"))
        .ok()
        .map(|p: PathBuf| p.display().to_string())
}

/// Whether rtcheck itself runs in a Kubernetes pod (pure over what the caller looked at):
/// the service host variable every pod gets, or the mounted service account.
pub fn in_pod(service_host_env: Option<&str>, service_account_dir: bool) -> Option<String> {
    match (service_host_env, service_account_dir) {
        (Some(_), _) => Some("KUBERNETES_SERVICE_HOST is set".into()),
        (None, true) => Some("a Kubernetes service account is mounted".into()),
        (None, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sys(ka: u64, range: &str) -> NetSysctls {
        NetSysctls {
            keepalive: Ok(Keepalive {
                time_s: ka,
                intvl_s: 75,
                probes: 9,
            }),
            port_range: {
                let v: Vec<u32> = range.split(' ').map(|x| x.parse().unwrap()).collect();
                Ok(PortRange {
                    low: v[0],
                    high: v[1],
                })
            },
            somaxconn: Err("net/core/somaxconn: missing".into()),
        }
    }

    #[test]
    fn only_values_read_on_both_sides_and_different_are_differences() {
        let d = compare(&sys(600, "1024 65535"), &sys(7200, "1024 65535"));
        assert_eq!(
            d,
            vec![Difference {
                sysctl: "net.ipv4.tcp_keepalive_time".into(),
                namespace: "600".into(),
                host: "7200".into()
            }]
        );
        assert!(compare(&sys(7200, "1024 65535"), &sys(7200, "1024 65535")).is_empty());
    }

    #[test]
    fn a_pod_is_noticed_by_its_service_variable_or_account() {
        assert!(in_pod(Some("10.0.0.1"), false).is_some());
        assert!(in_pod(None, true).unwrap().contains("service account"));
        assert_eq!(in_pod(None, false), None);
    }
}
