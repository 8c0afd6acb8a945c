//! markdown renderers, one file per result kind.
pub mod audit;
pub mod bench;
pub mod probe;
