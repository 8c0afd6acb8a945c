//! markdown renderers, one file per result kind.
pub mod audit;
pub mod probe;
