//! The four questions (`decide`, pure) and buffer sizing (`sizing`). Flags, prompts and
//! rendering live in `crate::cmd::choose`.
pub mod decide;
pub mod path;
pub mod reason;
pub mod sizing;

pub use decide::{decide, missing_answers, Recommendation, Topology};
