//! Safety rails shared by every experiment, from the process layer (`crate::sys`):
//! loopback-only targets, Ctrl-C, a total time budget, child processes that are always
//! terminated and reaped. Only `--target` parsing is verify's own.
use anyhow::anyhow;
use std::net::SocketAddr;

pub use crate::sys::addr::{ensure_loopback, is_loopback};
pub use crate::sys::budget::Budget;
pub use crate::sys::child::{exe, ChildGuard};
pub use crate::sys::signal::{install_interrupt_handler, interrupted};

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
