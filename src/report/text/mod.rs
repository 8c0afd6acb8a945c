//! text renderers, one file per result kind.
pub mod audit;
pub mod bench;
pub mod choose;
pub mod evidence;
pub mod probe;
pub mod review;
pub mod verify;
