//! The embedded server (`rtcheck serve`) as a child process for the experiments, through
//! the process layer: [`crate::sys::serve`] starts it, [`crate::sys::control`] reads it.
use crate::sys::control;
use crate::sys::serve::{self, Scratch, ServeChild};
use rtcheck_base::os::deadline::Deadline;
use rtcheck_wire::stats::ServerStats;
use std::net::SocketAddr;

pub struct Server {
    pub addr: SocketAddr,
    child: ServeChild,
    // Dropped after the child: the log stays until the server is gone.
    _dir: Scratch,
}

impl Server {
    /// Start `rtcheck serve` on 127.0.0.1:0 with `extra` flags and wait for its address.
    pub fn start(extra: &[String], budget: &Deadline) -> anyhow::Result<Server> {
        let dir = Scratch::new("verify")?;
        let child = serve::start(extra, &dir.0, 1, budget)?;
        Ok(Server {
            addr: child.addrs[0],
            child,
            _dir: dir,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.guard.pid()
    }

    pub fn stats(&self) -> anyhow::Result<ServerStats> {
        control::stats(self.addr)
    }
}
