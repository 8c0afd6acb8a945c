//! `--target`: an experiment's own server address, loopback only. The other safety rails
//! (Ctrl-C, the run's deadline, child processes always reaped) are `rtcheck_base::os`.
use anyhow::anyhow;
use rtcheck_base::os::addr::ensure_loopback;
use std::net::SocketAddr;

/// Parse a `--target` and check it is loopback.
pub fn parse_target(s: &str) -> anyhow::Result<SocketAddr> {
    let addr: SocketAddr = s
        .trim()
        .parse()
        .map_err(|e| anyhow!("--target `{s}`: expected IP:PORT ({e})"))?;
    ensure_loopback(&addr)?;
    Ok(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_targets_pass() {
        assert!(parse_target("127.0.0.1:80").is_ok());
        assert!(parse_target("127.3.4.5:1").is_ok());
        assert!(parse_target("[::1]:8080").is_ok());
        let e = parse_target("10.0.0.1:80").unwrap_err().to_string();
        assert!(e.contains("not a loopback"), "{e}");
        assert!(parse_target("192.168.1.1:80").is_err());
        assert!(parse_target("[::ffff:8.8.8.8]:53").is_err());
        assert!(parse_target("localhost").is_err());
    }
}
