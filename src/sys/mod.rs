//! The process layer, just above data and below the domain (verify, bench, net): child
//! processes that never outlive the run, Ctrl-C, rlimits, /proc readings, loopback-only
//! addresses, the `rtcheck serve` child and its control client. No policy lives here:
//! callers decide what a reading means.
pub mod addr;
pub mod budget;
pub mod child;
pub mod clock;
pub mod control;
pub mod fd;
pub mod limits;
pub mod proc;
pub mod redis;
pub mod serve;
pub mod signal;
