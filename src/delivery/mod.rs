//! Delivery guarantees, measured (issue 12): clients that disconnect in the ways real
//! clients do, reconnect, resume, and count from the seq numbers what they lost, saw
//! twice or out of order, and whether every loss was announced by a gap marker.
pub mod account;
pub mod client;
pub mod run;
