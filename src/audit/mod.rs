//! The preflight audit of a Linux host (or a mounted host, or one process) for N realtime
//! connections. `host` reads the snapshot once; `checks` are pure. Flags, `--verify` and
//! rendering live in `crate::cmd::audit`.
pub mod checks;
pub mod host;
pub mod netns;
pub mod process;

use crate::findings::Finding;
use crate::profile::Profile;
pub use host::{Host, Roots};

/// The pure audit: every check of `host` against `profile`, in report order. Ids in
/// `skip` are reported as skipped by request (the `audit --verify` hook reuses this).
pub fn audit(profile: &Profile, host: &Host, skip: &[String]) -> Vec<Finding> {
    checks::run_all(profile, host, skip)
}

/// Every stable check id, in report order.
pub fn check_ids() -> Vec<&'static str> {
    checks::ids()
}

/// Reject unknown ids in --skip, naming them.
pub fn validate_skip(skip: &[String]) -> anyhow::Result<()> {
    let ids = check_ids();
    let unknown: Vec<&str> = skip
        .iter()
        .map(String::as_str)
        .filter(|s| !ids.contains(s))
        .collect();
    if !unknown.is_empty() {
        anyhow::bail!(
            "--skip: unknown check id{} `{}` (known: {})",
            if unknown.len() > 1 { "s" } else { "" },
            unknown.join("`, `"),
            ids.join(", ")
        );
    }
    Ok(())
}

/// What was examined, for the report.
pub fn describe_target(roots: &Roots, host: &Host) -> String {
    let process = match &host.group {
        Some(g) => format!(
            "{} (a worker of {} master {}; workers {})",
            host.process,
            g.name,
            g.master,
            g.workers
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => host.process.clone(),
    };
    let mut t = format!(
        "procfs {}, sysfs {}, process {process}",
        roots.procfs.display(),
        roots.sysfs.display(),
    );
    if !roots.others.is_empty() {
        let list: Vec<String> = roots.others.iter().map(u32::to_string).collect();
        t.push_str(&format!(
            "; also given, not audited: {} (another server: audit it with its own --pid)",
            list.join(", ")
        ));
    }
    t
}
