//! rtcheck: choose, audit and verify realtime transports against measured numbers.
pub mod app;
pub mod audit;
pub mod bench;
pub mod catalog;
pub mod checklist;
pub mod choose;
pub mod cmd;
pub mod delivery;
pub mod evidence;
pub mod findings;
pub mod net;
pub mod outfile;
pub mod profile;
pub mod report;
pub mod sys;
pub mod units;
pub mod verify;
