//! markdown renderers, one file per result kind.
pub mod bench;
pub mod probe;
pub mod rehearse;
