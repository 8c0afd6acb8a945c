//! `--baseline FILE` and `--write-baseline FILE` (issue 28), flattened into audit, lint,
//! review, probe and verify delivery: the file read through rtcheck_base::input, today's date
//! taken once, the pure decisions in `crate::findings::baseline`.
use crate::findings::baseline::{self, Baseline, Date, Subject};
use crate::findings::Finding;
use std::path::PathBuf;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct BaselineArgs {
    /// Accepted findings (rtcheck.baseline.yaml): each by check id (and url, host or
    /// file) with a reason and an expiry. One it names is shown as `suppressed` with its
    /// reason; an entry expired or without a reason fails the run (check `baseline`).
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Write a baseline of this run's warn and fail findings to FILE, with placeholder
    /// reasons that fail until filled in (entries of --baseline that hold are kept).
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
}

/// The baseline of a run, read before the run so a bad file is exit 2 at once.
pub struct Loaded {
    pub baseline: Baseline,
    pub today: Date,
}

impl BaselineArgs {
    /// Read --baseline (an empty baseline without it). `known`: the command's check ids
    /// (empty: any id).
    pub fn load(&self, known: &[&str]) -> anyhow::Result<Loaded> {
        let today = baseline::today().map_err(anyhow::Error::msg)?;
        let baseline = match &self.baseline {
            Some(p) => {
                let text = rtcheck_base::input::yaml("--baseline", p)?;
                let what = format!("--baseline {}", p.display());
                baseline::parse(&what, &text, known).map_err(anyhow::Error::msg)?
            }
            None => Baseline::default(),
        };
        Ok(Loaded { baseline, today })
    }
}

impl Loaded {
    /// Suppress what the baseline accepts and add its own findings; then the file
    /// `--write-baseline` asked for (path and text), to be written with the reports.
    pub fn apply(
        &self,
        a: &BaselineArgs,
        findings: &mut Vec<Finding>,
        subject: impl Fn(&Finding) -> Subject,
    ) -> anyhow::Result<Option<(PathBuf, String)>> {
        baseline::apply(&self.baseline, findings, self.today, &subject);
        let Some(path) = &a.write_baseline else {
            return Ok(None);
        };
        let b = baseline::write(&self.baseline, findings, self.today, &subject);
        Ok(Some((path.clone(), baseline::to_yaml(&b)?)))
    }
}

/// What an audited host's finding is about: the host's name (from the audited procfs),
/// and the config file of a proxy finding.
pub fn host_subject(hostname: Option<String>) -> impl Fn(&Finding) -> Subject {
    move |f| Subject {
        host: hostname.clone(),
        file: f.location.as_ref().map(|l| l.file.clone()),
        url: None,
    }
}

/// The host name under a procfs root (`sys/kernel/hostname`), when it can be read.
pub fn hostname(procfs: &std::path::Path) -> Option<String> {
    let p = procfs.join("sys/kernel/hostname");
    // Kernel state under a procfs root: the raw bounded reader (user-file rules refuse /proc).
    let text = String::from_utf8(rtcheck_base::input::read_bounded(&p).ok()?).ok()?;
    let h = text.trim();
    (!h.is_empty()).then(|| h.to_string())
}

/// A finding about a URL (probe): its URL and the URL's host.
pub fn url_subject(url_of: fn(&Finding) -> Option<String>) -> impl Fn(&Finding) -> Subject {
    move |f| {
        let url = url_of(f);
        let host = url.as_deref().and_then(|u| {
            let rest = u.split_once("://")?.1;
            let auth = rest.split(['/', '?', '#']).next()?;
            let host = auth.rsplit('@').next()?;
            Some(match host.rsplit_once(':') {
                Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h.to_string(),
                _ => host.to_string(),
            })
        });
        Subject {
            url,
            host,
            file: f.location.as_ref().map(|l| l.file.clone()),
        }
    }
}
