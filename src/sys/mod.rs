//! Launchers of the real processes rtcheck runs beside itself, each a child that never
//! outlives the run: its own `rtcheck serve` (and the server's control client), and a
//! real `redis-server` (feature `redis`); the one TLS client setup ([`tls`]); and the
//! watcher of a server rtcheck did not start ([`procwatch`]: found by its port, sampled
//! through a run). The OS primitives under them are [`rtcheck_base::os`].
pub mod control;
pub mod netstat;
pub mod procwatch;
#[cfg(feature = "redis")]
pub mod redis;
pub mod serve;
pub mod tls;
