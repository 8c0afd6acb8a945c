//! markdown rendering of evidence results.
