//! markdown rendering of audit results.
