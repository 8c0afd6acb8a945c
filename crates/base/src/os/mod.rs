//! OS primitives: child processes that never outlive the run, Ctrl-C and SIGTERM, a run's
//! deadline, rlimits, /proc readings (this process, another one, listeners and their
//! backlog through sock_diag), poll(2), the loopback check, random bytes.
pub mod addr;
pub mod child;
pub mod clock;
pub mod deadline;
pub mod fd;
pub mod limits;
pub mod proc;
pub mod process;
pub mod random;
pub mod signal;
pub mod sockdiag;
pub mod tcpinfo;
