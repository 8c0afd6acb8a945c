//! `rtcheck bench merge FILES...` (issue 37): the shards' results of one run made into one
//! report, its validity and `--threshold` judged after the merge.
use super::{emit_bench, Ctx};
use crate::bench::shard::{self, ShardFile, ShardResult};
use crate::cmd::output::{BenchFormats, OutputArgs};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "\
Examples:
  two machines, then one report:
    rtcheck bench fanout --allow-remote --server wss://staging.example.com/ws \\
      --publish ws --connections 20000 --shard 1/2 --start-at 1765051200 \\
      --save-json shard1.json
    (the same with --shard 2/2 --save-json shard2.json on the other)
    rtcheck bench merge shard1.json shard2.json --threshold 'p999 < 100ms'

A shard missing (not given, killed), invalid, or whose clock was beyond the tolerance
makes the merged run invalid, with the reason: never a pass.
Exit codes: 0 valid (and every --threshold held), 1 invalid or a --threshold crossed,
2 error (a file unreadable or not a shard's result).")]
pub struct MergeArgs {
    /// The shards' JSON results (`bench fanout --shard I/N --save-json FILE`).
    #[arg(required = true, value_name = "FILES")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs<BenchFormats>,
    /// Fail (exit 1) when a merged figure crosses EXPR, e.g. 'p999 < 45ms': keys of the
    /// merged JSON report; an invalid merge fails every threshold. Repeatable.
    #[arg(long = "threshold", value_name = "EXPR", value_parser = crate::findings::threshold::parse)]
    pub thresholds: Vec<crate::findings::threshold::Threshold>,
    /// Also write the merged JSON report here (atomically).
    #[arg(long, value_name = "PATH")]
    pub save_json: Option<PathBuf>,
    /// Text: every validity check, the full latency table.
    #[arg(long)]
    pub explain: bool,
}

/// One file: bounded, JSON, a shard's result; any other is one line naming the file.
fn read(path: &std::path::Path) -> anyhow::Result<ShardFile> {
    let shown = path.display().to_string();
    // rtcheck's reader for a report read back: bounded, a regular file, the nesting too.
    let text = rtcheck_base::input::report("bench merge", path)?;
    let result: ShardResult = serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "{shown}: not a shard's result (bench fanout --shard I/N --format json): line {}: {}",
            e.line(),
            e.to_string().split(" at line").next().unwrap_or_default()
        )
    })?;
    result
        .shard
        .check()
        .map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
    Ok(ShardFile {
        path: shown,
        result,
    })
}

pub fn run(a: MergeArgs, ctx: Ctx) -> anyhow::Result<ExitCode> {
    a.out.validate()?;
    let files = a
        .files
        .iter()
        .map(|p| read(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let report = shard::merge(&files);
    emit_bench(
        &report,
        &a.out,
        &a.thresholds,
        a.save_json.as_deref(),
        a.explain,
        ctx,
    )
}
