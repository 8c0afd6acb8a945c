//! The audit rules against fixture procfs/sysfs trees (tests/fixtures/<tree>/{proc,sys})
//! and against this machine's real /proc. Statuses AND numbers are checked.
use rtcheck::audit::{audit, check_ids, Host, Roots};
use rtcheck::findings::{Finding, Status};
use rtcheck::profile::{Loss, Profile, Role};
use rtcheck_wire::transport::Transport;
use std::path::PathBuf;

fn tree(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn roots(name: &str, pid: Option<u32>) -> Roots {
    Roots {
        procfs: tree(name).join("proc"),
        sysfs: tree(name).join("sys"),
        pid,
        group: None,
        others: vec![],
    }
}

fn run(name: &str, pid: Option<u32>, p: &Profile) -> Vec<Finding> {
    let host = Host::read(&roots(name, pid)).expect("fixture roots exist");
    audit(p, &host, &[])
}

fn get<'a>(fs: &'a [Finding], id: &str) -> &'a Finding {
    fs.iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no finding {id}"))
}

fn num(f: &Finding, key: &str) -> f64 {
    *f.numbers
        .get(key)
        .unwrap_or_else(|| panic!("{}: no number `{key}` in {:?}", f.id, f.numbers))
}

fn statuses(fs: &[Finding]) -> Vec<(&str, Status)> {
    fs.iter().map(|f| (f.id.as_str(), f.status)).collect()
}

fn profile(connections: u64, role: Role) -> Profile {
    Profile {
        connections,
        role,
        ..Profile::default()
    }
}

#[test]
fn every_check_reports_once_in_order_with_evidence_and_fix() {
    let fs = run("stock-distro", None, &Profile::default());
    let ids: Vec<&str> = fs.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, check_ids());
    assert_eq!(
        ids,
        [
            "fd-limit",
            "fd-system",
            "ephemeral-ports",
            "time-wait",
            "tcp-wmem",
            "tcp-keepalive",
            "somaxconn",
            "memory",
            "cpu",
            "conntrack"
        ]
    );
    for f in &fs {
        assert!(!f.evidence.is_empty(), "{} has no evidence", f.id);
        for e in &f.evidence {
            assert!(
                e.source.starts_with('"') && e.source.contains("\", part"),
                "{}: {}",
                f.id,
                e.source
            );
        }
        assert!(!f.rule.is_empty() && !f.expected.is_empty(), "{}", f.id);
        if matches!(f.status, Status::Warn | Status::Fail) {
            assert!(!f.fix.runtime.is_empty(), "{} has no runtime fix", f.id);
            assert!(
                !f.fix.persistent.is_empty(),
                "{} has no persistent fix",
                f.id
            );
        }
    }
    let verify: Vec<(&str, Option<&str>)> = fs
        .iter()
        .map(|f| (f.id.as_str(), f.verify.as_deref()))
        .filter(|(_, v)| v.is_some())
        .collect();
    assert_eq!(
        verify,
        [
            ("fd-limit", Some("fd-limit")),
            ("ephemeral-ports", Some("ephemeral-ports")),
            ("time-wait", Some("time-wait")),
            ("tcp-wmem", Some("tcp-wmem")),
            ("tcp-keepalive", Some("tcp-keepalive")),
            ("memory", Some("memory")),
        ]
    );
}

#[test]
fn stock_distro_with_ulimit_1024() {
    let fs = run("stock-distro", None, &Profile::default());
    use Status::*;
    assert_eq!(
        statuses(&fs),
        [
            ("fd-limit", Fail),
            ("fd-system", Pass),
            ("ephemeral-ports", Pass),
            ("time-wait", Pass),
            ("tcp-wmem", Warn),
            ("tcp-keepalive", Warn),
            ("somaxconn", Warn),
            ("memory", Pass),
            ("cpu", Pass),
            ("conntrack", Pass),
        ]
    );
    let fd = get(&fs, "fd-limit");
    assert_eq!(
        (num(fd, "soft"), num(fd, "hard"), num(fd, "open_fds")),
        (1024.0, 524288.0, 4.0)
    );
    assert_eq!(
        (num(fd, "needed"), num(fd, "recommended")),
        (10000.0, 12064.0)
    );
    // hard >= recommended: the process can raise soft itself.
    assert!(
        fd.fix
            .summary
            .contains("raise its soft limit to the hard limit (524,288)"),
        "{}",
        fd.fix.summary
    );
    assert!(fd
        .fix
        .persistent
        .iter()
        .any(|c| c.contains("LimitNOFILE=12064")));
    assert!(fd.fix.persistent.iter().any(|c| c.contains("limits.conf")));
    let sys = get(&fs, "fd-system");
    assert_eq!(num(sys, "nr_open"), 1048576.0);
    assert!(
        sys.observed.contains("9,223,372,036,854,775,807"),
        "{}",
        sys.observed
    );
    let ep = get(&fs, "ephemeral-ports");
    assert_eq!(num(ep, "range_size"), 28232.0);
    assert!(ep.rule.starts_with("role server"), "{}", ep.rule);
    let ka = get(&fs, "tcp-keepalive");
    assert_eq!(num(ka, "detect_s"), 7200.0 + 75.0 * 9.0);
    let wm = get(&fs, "tcp-wmem");
    assert_eq!(num(wm, "worst_case_bytes"), 4194304.0 * 10000.0);
    assert_eq!(num(wm, "events_per_dead_connection"), 4096.0);
    let so = get(&fs, "somaxconn");
    assert_eq!((num(so, "somaxconn"), num(so, "burst")), (4096.0, 10000.0));
    let mem = get(&fs, "memory");
    assert_eq!(num(mem, "need_bytes"), 270_000_000.0);
    assert_eq!(num(mem, "mem_available"), 11534336.0 * 1024.0);
    let cpu = get(&fs, "cpu");
    assert_eq!(
        (num(cpu, "usable_cpus"), num(cpu, "starved_cpus")),
        (8.0, 4.0)
    );
    assert_eq!(num(get(&fs, "conntrack"), "max"), 262144.0);
}

#[test]
fn tuned_server_service_pid_passes_while_the_shell_does_not() {
    let p = Profile::from_yaml("connections: 50000\nrate: 2\ntransport: sse\n", "p.yaml").unwrap();
    let fs = run("tuned-server", Some(4242), &p);
    assert!(
        fs.iter().all(|f| f.status == Status::Pass),
        "{:?}",
        statuses(&fs)
    );
    let fd = get(&fs, "fd-limit");
    assert_eq!((num(fd, "soft"), num(fd, "open_fds")), (200000.0, 7.0));
    assert_eq!(num(fd, "recommended"), 60064.0);
    // The service's cgroup v2 limits, resolved through /proc/4242/cgroup.
    let mem = get(&fs, "memory");
    assert_eq!(num(mem, "cgroup_limit"), 8589934592.0);
    assert_eq!(num(mem, "limit_bytes"), 8589934592.0);
    assert!(
        mem.observed.contains("rtserver.service/memory.max"),
        "{}",
        mem.observed
    );
    let cpu = get(&fs, "cpu");
    assert_eq!(
        (
            num(cpu, "affinity_cpus"),
            num(cpu, "quota_cpus"),
            num(cpu, "usable_cpus")
        ),
        (16.0, 8.0, 8.0)
    );
    assert_eq!(num(get(&fs, "tcp-keepalive"), "detect_s"), 120.0);
    assert_eq!(
        num(get(&fs, "tcp-wmem"), "worst_case_bytes"),
        262144.0 * 50000.0
    );
    let ep = get(&fs, "ephemeral-ports");
    assert_eq!((num(ep, "usable"), num(ep, "tcp_tw_reuse")), (55294.0, 1.0));

    // The same host audited as the login shell: ulimit 1024 with hard 1024.
    let shell = run("tuned-server", None, &p);
    let fd = get(&shell, "fd-limit");
    assert_eq!(
        (fd.status, num(fd, "soft"), num(fd, "hard")),
        (Status::Fail, 1024.0, 1024.0)
    );
    assert!(
        fd.fix.summary.contains("only root can raise it"),
        "{}",
        fd.fix.summary
    );
    assert_eq!(get(&shell, "memory").numbers.get("cgroup_limit"), None);
}

#[test]
fn small_container_with_cgroup_v1_memory_and_cpu_limits() {
    let fs = run("small-container", None, &Profile::default());
    let mem = get(&fs, "memory");
    assert_eq!(mem.status, Status::Fail);
    assert_eq!(num(mem, "cgroup_limit"), 268435456.0);
    assert_eq!(num(mem, "limit_bytes"), 268435456.0);
    assert_eq!(num(mem, "need_bytes"), 270_000_000.0);
    let cpu = get(&fs, "cpu");
    assert_eq!(cpu.status, Status::Fail);
    assert_eq!(
        (num(cpu, "quota_cpus"), num(cpu, "usable_cpus")),
        (0.5, 0.5)
    );
    assert_eq!(num(cpu, "demand_cpus"), 1.7);
    assert_eq!(get(&fs, "fd-limit").status, Status::Pass);

    // Half the connections fit the memory (warn above 50%) and a shared ring adds
    // max_disconnect x rate x size.
    let p = Profile {
        connections: 5000,
        loss: Some(Loss::Shared),
        ..Profile::default()
    };
    let fs = run("small-container", None, &p);
    let mem = get(&fs, "memory");
    assert_eq!(num(mem, "delivery_bytes"), 3.0 * 10.0 * 1024.0);
    assert_eq!(num(mem, "need_bytes"), 5000.0 * 27000.0 + 30720.0);
    assert_eq!(mem.status, Status::Warn);
    // Per-user sessions multiply the ring by the connections: over the limit again.
    let p = Profile {
        loss: Some(Loss::PerUser),
        ..p
    };
    let mem_pu = run("small-container", None, &p);
    let mem = get(&mem_pu, "memory");
    assert_eq!(num(mem, "delivery_bytes"), 5000.0 * 30720.0);
    assert_eq!(mem.status, Status::Fail);
    assert!(mem.evidence.iter().any(|e| e.id == "session-expiry"));
}

#[test]
fn proxy_with_narrow_port_range_and_many_time_wait() {
    // 11,000 ports minus 100 reserved in range (8080 is outside it).
    let fs = run("proxy", None, &profile(5000, Role::Proxy));
    let ep = get(&fs, "ephemeral-ports");
    assert_eq!(
        (
            num(ep, "range_size"),
            num(ep, "reserved"),
            num(ep, "usable")
        ),
        (11000.0, 100.0, 10900.0)
    );
    assert_eq!(ep.status, Status::Pass);
    let tw = get(&fs, "time-wait");
    assert_eq!(
        (tw.status, num(tw, "time_wait"), num(tw, "ratio_pct")),
        (Status::Warn, 6200.0, 56.9)
    );
    // A proxy holds two fds and two tracked flows per connection.
    let fd = get(&fs, "fd-limit");
    assert_eq!(num(fd, "needed"), 10000.0);
    let ct = get(&fs, "conntrack");
    // Exactly 2 x flows: enough room for a reconnect storm.
    assert_eq!(
        (ct.status, num(ct, "flows"), num(ct, "max")),
        (Status::Pass, 10000.0, 20000.0)
    );
    assert_eq!(num(ct, "count"), 9000.0);

    let fs = run("proxy", None, &profile(6000, Role::Proxy));
    let ep = get(&fs, "ephemeral-ports");
    assert_eq!((ep.status, num(ep, "outbound")), (Status::Warn, 6000.0));
    let ct = get(&fs, "conntrack");
    assert_eq!((ct.status, num(ct, "flows")), (Status::Warn, 12000.0));
    assert!(
        ep.fix.summary.contains("tcp_tw_reuse=1"),
        "{}",
        ep.fix.summary
    );
    assert!(
        ep.fix.summary.contains("adds no ports"),
        "{}",
        ep.fix.summary
    );
    assert!(ep.fix.runtime[0].contains("ip_local_port_range"));
    assert!(ep.fix.persistent[0].contains("/etc/sysctl.d/"));

    let fs = run("proxy", None, &profile(12000, Role::Proxy));
    assert_eq!(get(&fs, "ephemeral-ports").status, Status::Fail);
    assert_eq!(get(&fs, "conntrack").status, Status::Fail);
    // The same host as a server: inbound connections need no ephemeral port.
    let fs = run("proxy", None, &profile(12000, Role::Server));
    assert_eq!(get(&fs, "ephemeral-ports").status, Status::Pass);
}

#[test]
fn host_without_conntrack_skips_it_and_a_loadgen_runs_out_of_ports() {
    let fs = run("no-conntrack", None, &profile(20000, Role::Loadgen));
    let ct = get(&fs, "conntrack");
    assert_eq!(ct.status, Status::Skip);
    let reason = ct.reason.as_deref().unwrap();
    assert!(
        reason.contains("not loaded") && reason.contains("nf_conntrack_max"),
        "{reason}"
    );
    let ep = get(&fs, "ephemeral-ports");
    assert_eq!(
        (ep.status, num(ep, "outbound"), num(ep, "usable")),
        (Status::Warn, 20000.0, 28232.0)
    );
    let tw = get(&fs, "time-wait");
    assert_eq!((tw.status, num(tw, "time_wait")), (Status::Warn, 15000.0));
    // A load generator accepts nothing: the backlog is not its problem.
    assert_eq!(get(&fs, "somaxconn").status, Status::Pass);
    // 20,000 x 10 msg/s on 2 CPUs: 4 busy on average > 2 usable.
    let cpu = get(&fs, "cpu");
    assert_eq!((cpu.status, num(cpu, "demand_cpus")), (Status::Fail, 3.4));
    // Polling holds no idle connection: keepalive passes whatever its value.
    let p = Profile {
        transport: Some(Transport::Polling),
        ..Profile::default()
    };
    let fs = run("no-conntrack", None, &p);
    assert_eq!(get(&fs, "tcp-keepalive").status, Status::Pass);
}

#[test]
fn garbage_and_missing_files_skip_with_a_reason_naming_the_file() {
    let fs = run("broken", None, &Profile::default());
    let expect = [
        ("fd-limit", "proc/self/limits: unexpected content"),
        (
            "fd-system",
            "proc/sys/fs/file-max: unexpected content `many`",
        ),
        (
            "ephemeral-ports",
            "ip_local_port_range: unexpected content `60999 32768`",
        ),
        ("time-wait", "proc/net/sockstat: unexpected content"),
        ("tcp-wmem", "proc/sys/net/ipv4/tcp_wmem: unexpected content"),
        (
            "tcp-keepalive",
            "tcp_keepalive_intvl: unexpected content `x`",
        ),
        ("somaxconn", "tcp_max_syn_backlog: missing"),
        ("memory", "proc/meminfo: unexpected content"),
        ("cpu", "proc/self/status: unexpected content `zero-seven`"),
        ("conntrack", "nf_conntrack_max: unexpected content"),
    ];
    for (id, needle) in expect {
        let f = get(&fs, id);
        assert_eq!(f.status, Status::Skip, "{id}");
        let r = f.reason.as_deref().unwrap_or_default();
        assert!(r.contains(needle), "{id}: {r}");
    }
}

#[test]
fn skip_by_request_keeps_the_finding_visible() {
    let host = Host::read(&roots("stock-distro", None)).unwrap();
    let fs = audit(&Profile::default(), &host, &["fd-limit".to_string()]);
    assert_eq!(fs.len(), 10);
    let fd = get(&fs, "fd-limit");
    assert_eq!(fd.status, Status::Skip);
    assert_eq!(
        fd.reason.as_deref(),
        Some("skipped by request (--skip fd-limit); the check alone says fail")
    );
    assert_eq!(num(fd, "soft"), 1024.0);
}

#[test]
fn real_proc_of_this_machine_matches_direct_reads() {
    let host = Host::read(&Roots::default()).expect("/proc and /sys exist");
    let fs = audit(&Profile::default(), &host, &[]);
    assert_eq!(fs.len(), 10);
    // Numbers match what the kernel reports through other interfaces.
    let (soft, hard) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    let fd = get(&fs, "fd-limit");
    assert_ne!(fd.status, Status::Skip, "{:?}", fd.reason);
    assert_eq!(
        (num(fd, "soft"), num(fd, "hard")),
        (soft as f64, hard as f64)
    );
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap();
    let v: Vec<f64> = range
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    let ep = get(&fs, "ephemeral-ports");
    assert_eq!((num(ep, "range_low"), num(ep, "range_high")), (v[0], v[1]));
    let cpus = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    let count = (0..nix::sched::CpuSet::count())
        .filter(|i| cpus.is_set(*i).unwrap_or(false))
        .count();
    assert_eq!(num(get(&fs, "cpu"), "affinity_cpus"), count as f64);
    let mem = get(&fs, "memory");
    assert!(
        num(mem, "mem_available") > 0.0 && num(mem, "limit_bytes") <= num(mem, "mem_available")
    );
    for f in &fs {
        if f.status == Status::Skip {
            assert!(
                f.reason.as_deref().is_some_and(|r| !r.is_empty()),
                "{}",
                f.id
            );
        }
    }
}
