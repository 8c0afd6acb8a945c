//! rtcheck: choose, audit and verify realtime transports against measured numbers.
pub mod app;
pub mod audit;
pub mod bench;
pub mod catalog;
pub mod checklist;
pub mod choose;
pub mod cli;
pub mod evidence;
pub mod guided;
pub mod net;
pub mod probe;
pub mod profile;
pub mod report;
pub mod units;
pub mod verify;
