//! text rendering of choose results.
