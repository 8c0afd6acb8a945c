//! `rtcheck hops`: the documented limits of the hops between users and a server
//! (data/hops.yaml), one hop in full, or the timeout chain of a path.
use super::output::{HumanFormat, HumanFormats, OutputArgs};
use super::workload::{EditArg, PathFlags};
use super::Ctx;
use crate::hops::{self, chain};
use crate::report::Format;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  every hop kind and its documented defaults:
    rtcheck hops
  one hop in full, with its sources (= rtcheck explain aws-alb):
    rtcheck hops aws-alb
  the chain: heartbeat, lifetime cap, exclusions:
    rtcheck hops --path cloudflare,aws-alb,nginx

    rtcheck hops --path aws-alb,nginx --override aws-alb.idle=300s \\
      --override nginx.idle=1h
    rtcheck hops --profile profile.yaml --format json

Paths are outermost first; `direct` is no hop. Override fields: idle, lifetime, first_byte.")]
#[command(
    edit_arg("path", |a| a
        .help("The hops between the users and the server, outermost first (comma-separated ids)")
        .conflicts_with("profile")),
    edit_arg("overrides", |a| a
        .help("A value you configured instead of the documented default: HOP.FIELD=DURATION"))
)]
pub struct HopsArgs {
    /// A hop id to show in full (all when omitted).
    #[arg(conflicts_with_all = ["path", "profile"])]
    pub id: Option<String>,
    #[command(flatten)]
    pub hops: PathFlags,
    /// Read the path (and its declared values) from a profile or answers file (`path:`).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// With a path: the realtime library the app runs (socketio, signalr, phoenix,
    /// actioncable, graphql-ws, stomp, sockjs, mqtt): does its documented heartbeat
    /// hold the path's idle chain?
    #[arg(long, value_name = "NAME", value_parser = super::reach::parse_app_protocol)]
    pub app_protocol: Option<rtcheck_wire::appproto::AppProtocol>,
    #[command(flatten)]
    pub out: OutputArgs<HumanFormats>,
}

/// The path and overrides from --path/--profile and --override (None: no path asked).
fn chain_input(a: &HopsArgs) -> anyhow::Result<Option<(Vec<String>, chain::Overrides)>> {
    let (ids, mut over) = match (&a.hops.path, &a.profile) {
        (Some(ids), _) => (ids.0.clone(), chain::Overrides::new()),
        (None, Some(file)) => {
            let p = crate::profile::Profile::load("--profile", file)?;
            p.hop_path().ok_or_else(|| {
                anyhow::anyhow!(
                    "{}: no `path:` (e.g. path: [cloudflare, aws-alb, nginx])",
                    file.display()
                )
            })?
        }
        (None, None) if a.hops.overrides.is_empty() && a.app_protocol.is_some() => {
            anyhow::bail!(
                "--app-protocol needs --path or --profile (the hops its heartbeat must hold)"
            )
        }
        (None, None) if a.hops.overrides.is_empty() => return Ok(None),
        (None, None) => anyhow::bail!("--override needs --path or --profile"),
    };
    for o in &a.hops.overrides {
        chain::parse_override(o, &mut over).map_err(|e| anyhow::anyhow!("--override {e}"))?;
    }
    Ok(Some((ids, over)))
}

pub fn run(a: HopsArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    use crate::report::{self, doc};
    let render = |f: Format, p: crate::report::Palette| -> anyhow::Result<String> {
        let f = HumanFormat::of(f)?;
        Ok(if let Some((ids, over)) = chain_input(&a)? {
            let mut c = chain::compute(&ids, &over).map_err(|e| anyhow::anyhow!(e))?;
            c.library = a.app_protocol.and_then(|p| hops::library::fit(&c, p));
            match f {
                HumanFormat::Text => doc::text::render(&report::hops::chain_doc(&c)?, &p),
                HumanFormat::Json => crate::report::json::render(&c)?,
                HumanFormat::Yaml => crate::report::yaml::render(&c)?,
                HumanFormat::Markdown => doc::markdown::render(&report::hops::chain_doc(&c)?),
            }
        } else if let Some(id) = &a.id {
            let h = hops::check_id(id).map_err(|e| anyhow::anyhow!(e))?;
            match f {
                HumanFormat::Text => doc::text::render(&report::hops::one_doc(h)?, &p),
                HumanFormat::Json => crate::report::json::render(h)?,
                HumanFormat::Yaml => crate::report::yaml::render(h)?,
                HumanFormat::Markdown => doc::markdown::render(&report::hops::one_doc(h)?),
            }
        } else {
            let all = hops::catalog();
            match f {
                HumanFormat::Text => doc::text::render(&report::hops::list_doc(all)?, &p),
                HumanFormat::Json => crate::report::json::render(&all)?,
                HumanFormat::Yaml => crate::report::yaml::render(&all)?,
                HumanFormat::Markdown => doc::markdown::render(&report::hops::list_doc(all)?),
            }
        })
    };
    a.out.emit_with(ctx.color, render)?;
    Ok(ExitCode::SUCCESS)
}
