//! markdown renderers, one file per result kind.
pub mod bench;
pub mod rehearse;
