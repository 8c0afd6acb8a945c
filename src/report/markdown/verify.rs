//! markdown rendering of verify results.
