//! markdown rendering of choose results.
