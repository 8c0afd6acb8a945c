//! A decision's reason, shared by the four questions (`decide`) and the declared path
//! (`path`), which `decide` consults.
use crate::evidence::EvidenceRef;
use serde::{Deserialize, Serialize};

/// One answered question: what was asked, what the profile says, what follows, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reason {
    /// q1 .. q4.
    pub id: String,
    pub question: String,
    pub answer: String,
    pub decision: String,
    /// One or two sentences: the consequence and the numbers behind it.
    pub detail: String,
    pub evidence: Vec<EvidenceRef>,
}
