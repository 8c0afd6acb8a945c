//! What bench fanout and bench cluster share after a run: `--threshold` on the report's
//! own JSON, and the exit code (an invalid run or a crossed threshold is 1).
use std::process::ExitCode;

/// Why a run is invalid for its thresholds: the first invalid scenario and its notes.
pub fn invalid_scenarios<'a>(
    mut s: impl Iterator<Item = (&'a str, bool, &'a [String])>,
) -> Option<String> {
    s.find(|(_, valid, _)| !valid)
        .map(|(name, _, notes)| format!("scenario {name} invalid: {}", notes.join("; ")))
}

/// `--threshold` on a bench report's own JSON (at the top, or in each of `scenarios`).
/// Err: a usage error (an unknown name), reported after the measured report is written,
/// so a run of minutes is never thrown away for a typo.
pub fn gates<T: serde::Serialize>(
    ts: &[crate::findings::threshold::Threshold],
    report: &T,
    invalid: Option<&str>,
) -> Result<Vec<crate::findings::Finding>, String> {
    if ts.is_empty() {
        return Ok(Vec::new());
    }
    let json = serde_json::to_value(report).map_err(|e| e.to_string())?;
    crate::findings::threshold::evaluate(ts, &json, &["scenarios"], invalid)
}

/// The report's JSON with its threshold findings under `thresholds` (absent without any).
pub fn with_thresholds<T: serde::Serialize>(
    report: &T,
    found: &[crate::findings::Finding],
) -> anyhow::Result<serde_json::Value> {
    let mut v = serde_json::to_value(report)?;
    if !found.is_empty() {
        v["thresholds"] = serde_json::to_value(found)?;
    }
    Ok(v)
}

/// Exit: 2 for an unknown threshold name (after the report), 1 for an invalid run or a
/// crossed threshold, else 0.
pub fn gate_exit(
    valid: bool,
    gated: Result<Vec<crate::findings::Finding>, String>,
) -> anyhow::Result<ExitCode> {
    let found = gated.map_err(anyhow::Error::msg)?;
    let crossed = found
        .iter()
        .any(|f| f.status == crate::findings::Status::Fail);
    Ok(crate::cmd::exit::verdict(crossed, !valid))
}
