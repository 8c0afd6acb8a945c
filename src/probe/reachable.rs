//! `reachable`: the URL could not be probed at all: DNS, connect, TLS, sending the request
//! or its response head failed (or outlived `--timeout`). Reported for that URL only; the
//! other URLs of the run are probed and reported in full.
use super::client::Step;
use super::{finding, Meta, UrlObs};
use crate::findings::{Finding, Fix, Status};

pub const ID: &str = super::CheckId::Reachable.as_str();

pub const META: Meta = Meta {
    id: super::CheckId::Reachable,
    title: "URL reachable",
    evidence: &[],
    run: check,
};

/// Why a URL could not be probed, and the step that failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreached {
    pub step: Step,
    pub timed_out: bool,
    /// The error, naming the peer (host:port), never the path or a secret.
    pub reason: String,
}

fn fix_for(step: Step) -> Fix {
    let summary = match step {
        Step::Dns => "the host name does not resolve from here: check the name (and the resolver)",
        Step::Connect => "nothing accepts connections at this host and port from here: check the port, that the proxy or server runs, and firewalls",
        Step::Tls => "the TLS handshake failed: check the certificate chain and name (--ca for a private CA), or that the port speaks TLS",
        Step::Request => "the connection broke while sending the request: check the port speaks HTTP",
        Step::Head => "no HTTP response head came back: check the port speaks HTTP and the server answers",
    };
    Fix {
        summary: summary.to_string(),
        ..Fix::default()
    }
}

pub fn check(u: &UrlObs) -> Option<Finding> {
    let n = u.unreached.as_ref()?;
    let how = if n.timed_out { "timed out" } else { "failed" };
    let mut f = finding(
        &META,
        u,
        Status::Fail,
        format!("{} step {how}: {}", n.step.as_str(), n.reason),
        "DNS, connect, TLS and an HTTP response head, each within --timeout",
        "a URL that cannot be reached measures nothing: no check of it ran",
        fix_for(n.step),
    );
    f.reason = Some(format!("failed at {}", n.step.as_str()));
    Some(f)
}
