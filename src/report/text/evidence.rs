//! text rendering of evidence results.
