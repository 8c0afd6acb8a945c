//! markdown rendering of bench results.
