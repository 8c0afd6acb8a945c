//! Interactive prompts under a pseudo-terminal.
//! One binary per cost class (see docs/ARCHITECTURE.md, Tests): each file below
//! is a module; helpers are shared once from tests/common.
#[path = "../common/mod.rs"]
mod common;
#[path = "../probe_common/mod.rs"]
mod probe_common;

mod choose_pty;
mod guided_pty;
mod probe_pty;
mod review_pty;
