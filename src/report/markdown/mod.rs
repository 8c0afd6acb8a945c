//! markdown renderers, one file per result kind.
pub mod audit;
pub mod bench;
pub mod choose;
pub mod evidence;
pub mod hops;
pub mod probe;
pub mod rehearse;
pub mod review;
