//! `rtcheck load`: a closed-loop (or open-loop) concurrency sweep against an HTTP endpoint.
pub mod client;
