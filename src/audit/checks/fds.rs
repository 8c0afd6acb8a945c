//! File descriptors: the process limit (fd-limit) and the system-wide limits (fd-system).
use super::CheckId;
use super::{lim, n, skipped, sysctl_fix, Draft, Meta, Workload};
use crate::audit::host::{Host, NofileLimit};
use crate::evidence::num;
use crate::findings::{Finding, Status};

pub const FD_LIMIT: Meta = Meta {
    id: CheckId::FdLimit,
    title: "Open-files limit (RLIMIT_NOFILE) of the audited process",
    evidence: &["ulimit-n", "fds-goroutines"],
    verify: Some("fd-limit"),
    required: true,
    run: fd_limit_of_process,
};

pub const FD_SYSTEM: Meta = Meta {
    id: CheckId::FdSystem,
    title: "System-wide file handles (fs.file-max, fs.nr_open, fs/file-nr)",
    evidence: &["ulimit-n", "fds-goroutines"],
    verify: None,
    required: true,
    run: fd_system,
};

/// The title names the process audited: rtcheck's own limits are not the service's.
fn fd_limit_of_process(w: &Workload, h: &Host) -> Finding {
    let mut f = fd_limit(w, h);
    f.title = process_title(&h.process);
    f
}

pub(crate) fn process_title(process: &str) -> String {
    if process == "self" {
        "Open-files limit of process self (rtcheck itself; --pid PID audits your service)".into()
    } else {
        format!("Open-files limit (RLIMIT_NOFILE) of process {process}")
    }
}

/// fds the workload needs, and the recommended limit with headroom for listeners,
/// log files and upstreams: 1.2 x needed + 64.
pub fn fd_need(w: &Workload) -> (u64, u64) {
    let needed = w.connections * w.fds_per_connection();
    let recommended = (needed as f64 * 1.2).ceil() as u64 + 64;
    (needed, recommended)
}

fn need_rule(w: &Workload) -> String {
    let (needed, recommended) = fd_need(w);
    let per = if w.fds_per_connection() == 2 {
        "2 fds per connection for a proxy (client side + upstream side)".to_string()
    } else {
        "1 fd per connection".to_string()
    };
    format!(
        "{per}: needed = {}; recommended = 1.2 x {} + 64 (listeners, files, upstreams) = {}",
        n(needed),
        n(needed),
        n(recommended)
    )
}

fn fd_limit(w: &Workload, h: &Host) -> Finding {
    let (needed, recommended) = fd_need(w);
    let expected = format!("soft >= {} (fail below {})", n(recommended), n(needed));
    let l = match &h.nofile {
        Ok(l) => *l,
        Err(e) => return skipped(&FD_LIMIT, e.clone(), expected),
    };
    let status = limit_status(l.soft, needed, recommended);
    let can_raise = l.hard >= recommended;
    let mut observed = limit_observed(l, h, status, can_raise);
    let (summary, runtime, persistent) =
        limit_fix(h, l, status, can_raise, recommended, &mut observed);
    let mut d = Draft::new(&FD_LIMIT)
        .status(status)
        .observed(observed)
        .expected(expected)
        .rule(limit_rule(w, needed, recommended))
        .fix(summary, runtime, persistent)
        .num("soft", l.soft as f64)
        .num("hard", l.hard as f64)
        .num("needed", needed as f64)
        .num("recommended", recommended as f64);
    if let Ok(open) = h.open_fds {
        d = d.num("open_fds", open as f64);
    }
    d.build()
}

/// Pure: fail below what the workload needs, warn below the recommended headroom.
fn limit_status(soft: u64, needed: u64, recommended: u64) -> Status {
    if soft < needed {
        Status::Fail
    } else if soft < recommended {
        Status::Warn
    } else {
        Status::Pass
    }
}

/// The fix (summary, commands now, lines that persist): a worker of a master/worker
/// server is raised through its master (named in `observed`), else the process itself.
fn limit_fix(
    h: &Host,
    l: NofileLimit,
    status: Status,
    can_raise: bool,
    recommended: u64,
    observed: &mut String,
) -> (String, Vec<String>, Vec<String>) {
    // Commands carry plain numbers (no separators) so they can be pasted.
    let target = if status == Status::Pass {
        l.soft
    } else {
        recommended
    };
    let t = plain(target);
    match &h.group {
        Some(g) => {
            observed.push_str(&format!(
                "; a worker of {} master {} (workers {})",
                g.name,
                g.master,
                list(&g.workers)
            ));
            worker_fix(g, status, &t)
        }
        None => {
            let (runtime, persistent) = limit_fix_lines(&h.process, &t, target.max(l.hard));
            (
                limit_summary(status, can_raise, l, recommended),
                runtime,
                persistent,
            )
        }
    }
}

fn limit_rule(w: &Workload, needed: u64, recommended: u64) -> String {
    format!(
        "fail when soft < {}; warn when soft < {}. {}. The 1024 default stopped a server at {} connections.",
        n(needed),
        n(recommended),
        need_rule(w),
        n(num("ulimit-n", "connections_reached") as u64)
    )
}

/// Pure: the limits, the fds open now, and whether the process can raise them itself.
fn limit_observed(l: NofileLimit, h: &Host, status: Status, can_raise: bool) -> String {
    let mut observed = format!(
        "soft {}, hard {} (process {})",
        lim(l.soft),
        lim(l.hard),
        h.process
    );
    if let Ok(open) = h.open_fds {
        observed.push_str(&format!(", {} fds open now", n(open)));
    }
    if status != Status::Pass {
        observed.push_str(if can_raise {
            "; hard allows it: the process can raise soft to hard by itself"
        } else {
            "; hard is too low as well: needs root"
        });
    }
    observed
}

/// Pure: the fix's summary for a single process.
fn limit_summary(status: Status, can_raise: bool, l: NofileLimit, recommended: u64) -> String {
    match (status, can_raise) {
        (Status::Pass, _) => format!(
            "Nothing to do: soft {} covers {} with headroom.",
            lim(l.soft),
            n(recommended)
        ),
        (_, true) => format!(
            "The process can raise its soft limit to the hard limit ({}) by itself with setrlimit(RLIMIT_NOFILE), no root needed; or raise the soft limit before it starts.",
            lim(l.hard)
        ),
        (_, false) => format!(
            "The hard limit ({}) is below {} too: only root can raise it (limits.conf, systemd LimitNOFILE=, docker --ulimit).",
            lim(l.hard),
            n(recommended)
        ),
    }
}

/// Pure: the runtime and persistent lines setting the limit to `t` (the hard one to
/// `hard`) for `process` (`self`: a PID to fill in).
fn limit_fix_lines(process: &str, t: &str, hard: u64) -> (Vec<String>, Vec<String>) {
    let pid = if process == "self" { "PID" } else { process };
    let runtime = vec![
        format!("ulimit -n {t}   # in the shell that starts the server"),
        format!("sudo prlimit --pid {pid} --nofile={t}:{}", plain(hard)),
    ];
    let persistent = vec![
        format!("/etc/security/limits.conf: `<user> soft nofile {t}` and `<user> hard nofile {t}`"),
        format!(
            "systemd unit, [Service]: LimitNOFILE={t}  then systemctl daemon-reload and restart"
        ),
        format!("docker run --ulimit nofile={t}:{t}"),
    ];
    (runtime, persistent)
}

fn fd_system(w: &Workload, h: &Host) -> Finding {
    let (needed, recommended) = fd_need(w);
    let expected = format!(
        "fs.nr_open and free handles (file-max - allocated) >= {} (fail below {})",
        n(recommended),
        n(needed)
    );
    let (file_max, nr_open) = match (&h.file_max, &h.nr_open) {
        (Ok(a), Ok(b)) => (*a, *b),
        (Err(e), _) | (_, Err(e)) => return skipped(&FD_SYSTEM, e.clone(), expected),
    };
    let allocated = h.file_nr.as_ref().map(|f| f.allocated).unwrap_or(0);
    let free = file_max.saturating_sub(allocated);
    let worst = nr_open.min(free);
    let status = if worst < needed {
        Status::Fail
    } else if worst < recommended {
        Status::Warn
    } else {
        Status::Pass
    };
    let alloc_txt = match &h.file_nr {
        Ok(f) => format!("{} allocated now", n(f.allocated)),
        Err(e) => format!("allocated unknown ({e})"),
    };
    let (runtime, persistent) = sysctl_fix(
        "fd",
        &[
            (
                "fs.file-max",
                n_plain(file_max.max(allocated.saturating_add(recommended.saturating_mul(2)))),
            ),
            ("fs.nr_open", n_plain(nr_open.max(recommended))),
        ],
    );
    let summary = if status == Status::Pass {
        "Nothing to do: the kernel allows enough handles.".to_string()
    } else if nr_open < recommended {
        format!(
            "fs.nr_open ({}) caps every process's hard limit: raise it first, then the process limit (fd-limit).",
            n(nr_open)
        )
    } else {
        "Raise fs.file-max: the whole host shares it.".to_string()
    };
    Draft::new(&FD_SYSTEM)
        .status(status)
        .observed(format!(
            "fs.file-max {}, fs.nr_open {}, {alloc_txt}: {} free",
            n(file_max),
            n(nr_open),
            n(free)
        ))
        .expected(expected)
        .rule(format!(
            "no process can hold more fds than fs.nr_open, and all processes share fs.file-max; fail when either leaves < {}, warn when < {}. {}.",
            n(needed),
            n(recommended),
            need_rule(w)
        ))
        .fix(summary, runtime, persistent)
        .num("file_max", file_max as f64)
        .num("nr_open", nr_open as f64)
        .num("allocated", allocated as f64)
        .num("free", free as f64)
        .num("needed", needed as f64)
        .num("recommended", recommended as f64)
        .build()
}

fn list(pids: &[u32]) -> String {
    pids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A master/worker server: the workers carry the connections, and each got its limit
/// from the master when forked (or from the server's own directive); prlimit on the
/// master reaches none of the running workers. The server's directive, or its unit.
fn worker_fix(
    g: &crate::audit::process::Group,
    status: Status,
    t: &str,
) -> (String, Vec<String>, Vec<String>) {
    let unit = format!(
        "systemd unit of {}, [Service]: LimitNOFILE={t}  then systemctl daemon-reload and restart (workers inherit it from the master)",
        g.name
    );
    let directive = match g.name.as_str() {
        "nginx" => Some(format!("nginx.conf, main context: `worker_rlimit_nofile {t};` then `sudo nginx -s reload` (new workers start with it); worker_connections stays below it")),
        "haproxy" => Some(format!("haproxy.cfg, global: `maxconn N` (HAProxy sizes its own open-files limit from it; `fd-hard-limit {t}` caps it), then reload")),
        n if n.starts_with("php-fpm") => Some(format!("php-fpm.conf (global or the pool): `rlimit_files = {t}` then reload php-fpm")),
        _ => None,
    };
    let summary = if status == Status::Pass {
        format!("Nothing to do: the {} workers have enough.", g.name)
    } else {
        format!(
            "The {} workers ({}) carry the connections: raise their limit {}; `prlimit` on the master ({}) does not reach running workers.",
            g.name,
            list(&g.workers),
            if directive.is_some() { "with the server's directive, or the service unit" } else { "in the service unit and restart" },
            g.master
        )
    };
    let runtime = directive.into_iter().collect();
    (summary, runtime, vec![unit])
}

/// Numbers for commands: no thousands separators.
fn plain(v: u64) -> String {
    if v == u64::MAX {
        "unlimited".into()
    } else {
        v.to_string()
    }
}

fn n_plain(v: u64) -> String {
    plain(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fix lines carry plain numbers and keep the command as written (its comment
    /// after three spaces); the audited process's pid, or PID for rtcheck's own.
    #[test]
    fn limit_fix_lines_are_pasteable() {
        let (now, keep) = limit_fix_lines("self", "20000", 65536);
        assert_eq!(
            now[0],
            "ulimit -n 20000   # in the shell that starts the server"
        );
        assert_eq!(now[1], "sudo prlimit --pid PID --nofile=20000:65536");
        assert!(keep[1].contains("LimitNOFILE=20000"));
        let (now, _) = limit_fix_lines("4242", "20000", 65536);
        assert!(now[1].contains("--pid 4242 "), "{}", now[1]);
        let l = NofileLimit {
            soft: 1024,
            hard: 4096,
        };
        let s = limit_summary(Status::Fail, false, l, 20000);
        assert!(s.contains("only root can raise it"), "{s}");
    }
}
