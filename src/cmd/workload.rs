//! The workload flags several commands share, declared once and flattened where they
//! apply: `WorkloadFlags` (audit, lint) and `PathFlags` (lint, probe, choose, hops). A
//! command whose help words a flag for itself sets it with [`EditArg::edit_arg`] (the
//! name, value and parser stay these).
use super::parse_count;
use crate::hops::chain::{self, Overrides};
use crate::profile::Profile;
use rtcheck_wire::transport::Transport;
use std::path::PathBuf;

/// `--profile`, `--connections`, `--transport`: the workload a host or a config is judged at.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkloadFlags {
    /// Workload profile (from `rtcheck choose --save`); flags override its values.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// Concurrent connections in total [default: 10000].
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub connections: Option<u64>,
    /// Transport in use [default: websocket].
    #[arg(long, value_parser = super::named::<Transport>(), value_delimiter = ',')]
    pub transport: Vec<Transport>,
}

impl WorkloadFlags {
    /// The profile (or the defaults) with --connections and --transport on top; the caller
    /// adds its own flags, then validates.
    pub fn profile(&self) -> anyhow::Result<Profile> {
        let mut p = match &self.profile {
            Some(path) => Profile::load("--profile", path)?,
            None => Profile::default(),
        };
        if let Some(c) = self.connections {
            p.connections = c;
        }
        // Several (lint: `--transport websocket,sse`): the first is the transport, the
        // rest are what the same routes carry too.
        if let Some((first, rest)) = self.transport.split_first() {
            p.transport = Some(*first);
            p.transports = rest.to_vec();
        }
        Ok(p)
    }

    /// What a validation error is named after: the profile file, else the flags.
    pub fn origin(&self) -> String {
        self.profile
            .as_ref()
            .map_or("flags".to_string(), |f| f.display().to_string())
    }
}

/// `--path a,b,c` as one value (clap would take a Vec for several occurrences).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathArg(pub Vec<String>);

pub fn parse_path_arg(s: &str) -> Result<PathArg, String> {
    chain::parse_path(s).map(PathArg)
}

/// `--path` and `--override`: the hops between the users and the server, with values
/// configured instead of their documented defaults.
#[derive(Debug, Clone, clap::Args)]
pub struct PathFlags {
    /// The hops between the users and the server, outermost first (`rtcheck hops`): the
    /// timeouts must carry the heartbeat their chain needs. Wins over the profile's `path:`.
    #[arg(long, value_name = "IDS", value_parser = parse_path_arg)]
    pub path: Option<PathArg>,
    /// A value a hop of the path is configured with instead of its documented default:
    /// HOP.FIELD=DURATION (aws-alb.idle=300s).
    #[arg(long = "override", value_name = "HOP.FIELD=DUR")]
    pub overrides: Vec<String>,
}

impl PathFlags {
    /// The path of --path (or the profile's `path:`, with its declared values) and
    /// --override: None when neither declares one.
    pub fn declared(&self, profile: &Profile) -> anyhow::Result<Option<(Vec<String>, Overrides)>> {
        let (ids, mut over) = match (&self.path, profile.hop_path()) {
            (Some(ids), _) => (ids.0.clone(), Overrides::new()),
            (None, Some(p)) => p,
            (None, None) if self.overrides.is_empty() => return Ok(None),
            (None, None) => anyhow::bail!("--override needs --path (or `path:` in --profile)"),
        };
        for o in &self.overrides {
            chain::parse_override(o, &mut over).map_err(|e| anyhow::anyhow!("--override {e}"))?;
        }
        Ok(Some((ids, over)))
    }
}

/// `#[command(edit_arg("id", |a| a.help("...")))]`: one flattened flag changed for one
/// command. Unlike clap's `mut_arg`, which moves the flag last, it stays where it is, so
/// the completion scripts list the flags as before.
pub trait EditArg {
    fn edit_arg(self, id: &str, f: impl FnOnce(clap::Arg) -> clap::Arg) -> Self;
}

impl EditArg for clap::Command {
    fn edit_arg(self, id: &str, f: impl FnOnce(clap::Arg) -> clap::Arg) -> Self {
        // A misspelt id is a programming error, caught when any test builds the command.
        assert!(
            self.get_arguments().any(|a| a.get_id() == id),
            "edit_arg: no argument `{id}`"
        );
        let mut f = Some(f);
        self.mut_args(|a| match f.take() {
            Some(g) if a.get_id() == id => g(a),
            g => {
                f = g;
                a
            }
        })
    }
}
