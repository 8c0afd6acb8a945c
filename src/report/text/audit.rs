//! text rendering of audit results.
