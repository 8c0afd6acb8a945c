//! markdown renderers, one file per result kind.
pub mod audit;
pub mod bench;
pub mod cluster;
pub mod delivery;
pub mod load;
pub mod probe;
pub mod rehearse;
pub mod verify;
