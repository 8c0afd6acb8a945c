//! Open-files limits (RLIMIT_NOFILE) and the margin every socket budget leaves.
use anyhow::anyhow;

/// File descriptors a process needs besides its sockets (stdio, epoll, runtime, files).
pub const FD_MARGIN: u64 = 64;

/// Raise the soft RLIMIT_NOFILE to the hard limit. Returns (soft, hard) after the change.
pub fn raise_nofile() -> std::io::Result<(u64, u64)> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(std::io::Error::from)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).map_err(std::io::Error::from)?;
    }
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(std::io::Error::from)?;
    Ok((soft, hard))
}

/// [`raise_nofile`] for experiments that hold many sockets, with the error in one line.
pub fn raise_nofile_to_hard() -> anyhow::Result<(u64, u64)> {
    raise_nofile().map_err(|e| anyhow!("raising RLIMIT_NOFILE: {e}"))
}

/// RLIMIT_NOFILE (soft, hard) of this process.
pub fn nofile() -> anyhow::Result<(u64, u64)> {
    nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map_err(|e| anyhow!("getrlimit(RLIMIT_NOFILE): {e}"))
}

/// Sockets that fit under `hard` with `open_now` descriptors already open.
pub fn socket_room(hard: u64, open_now: u64) -> u64 {
    hard.saturating_sub(open_now + FD_MARGIN)
}

/// Refuse a connection count the limits cannot hold, with the fix in the message.
pub fn check_fd_budget(connections: u64, hard: u64) -> anyhow::Result<()> {
    let need = connections + FD_MARGIN;
    if need > hard {
        anyhow::bail!(
            "--connections {connections}: needs about {need} open files per process but the hard \
             RLIMIT_NOFILE is {hard} (use at most {}, or raise the hard limit: ulimit -Hn, \
             /etc/security/limits.conf, systemd LimitNOFILE)",
            hard.saturating_sub(FD_MARGIN)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fd_budget_refuses_with_the_fix() {
        assert!(check_fd_budget(2000, 20000).is_ok());
        let e = check_fd_budget(20000, 20000).unwrap_err().to_string();
        assert!(e.contains("19936"), "{e}");
        assert!(e.contains("RLIMIT_NOFILE is 20000"), "{e}");
        assert_eq!(socket_room(20000, 10), 20000 - 10 - FD_MARGIN);
        assert_eq!(socket_room(50, 10), 0);
    }

    #[test]
    fn raising_keeps_soft_at_most_hard() {
        let (soft, hard) = raise_nofile().unwrap();
        assert!(soft <= hard);
        assert_eq!(nofile().unwrap(), (soft, hard));
    }
}
