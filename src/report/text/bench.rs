//! text rendering of bench results.
