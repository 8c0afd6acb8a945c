//! Launchers of the real processes rtcheck runs beside itself, each a child that never
//! outlives the run: its own `rtcheck serve` (and the server's control client), and a
//! real `redis-server` (feature `redis`); and the one TLS client setup ([`tls`]). The OS
//! primitives under them are [`rtcheck_base::os`].
pub mod control;
#[cfg(feature = "redis")]
pub mod redis;
pub mod serve;
pub mod tls;
