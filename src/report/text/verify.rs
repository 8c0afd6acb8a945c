//! text rendering of verify results.
