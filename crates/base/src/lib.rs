//! The leaf of rtcheck's crates: units (durations, sizes), output files written safely,
//! input files read within bounds, the one escaping of outside text, the one redaction of secrets, and the OS primitives
//! (child processes, signals, rlimits, /proc readings, loopback addresses). It holds no
//! policy: callers decide what a reading means.
pub mod escape;
pub mod ids;
pub mod input;
pub mod names;
pub mod os;
pub mod outfile;
pub mod redact;
pub mod units;
