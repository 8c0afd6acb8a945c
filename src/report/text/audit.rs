//! Text rendering of a findings report (audit, and verify through the same function):
//! the verdict, one table row per check fitted to the width, then the details of what needs
//! action (fail, warn; the reason of a skip). `--explain` prints every check in full.
use super::wrap;
use crate::findings::{Finding, Status};
use crate::report::{FindingsReport, Palette};

fn header(r: &FindingsReport, pal: Palette) -> String {
    let p = &r.profile;
    let transport = p.transport.map(|t| t.name()).unwrap_or("websocket");
    // lint judges configs, not a host: no role, and the transport may come from names.
    let title = if r.kind == "lint" {
        format!(
            "rtcheck lint: {} connections, transport {}, heartbeat {}{}",
            crate::evidence::fmt_num(p.connections_per_machine() as f64),
            {
                let ts = p.declared_transports();
                if ts.is_empty() {
                    "not declared (routes by evidence)".to_string()
                } else {
                    ts.iter().map(|t| t.name()).collect::<Vec<_>>().join(",")
                }
            },
            p.ping
                .map_or("not declared".into(), rtcheck_base::units::fmt_duration),
            p.hop_path()
                .map_or(String::new(), |(ids, _)| match ids.len() {
                    0 => ", path direct".into(),
                    _ => format!(", path {}", ids.join(" -> ")),
                })
        )
    } else {
        format!(
            "rtcheck {}: {} {} connections{}, role {}",
            r.kind,
            crate::evidence::fmt_num(p.connections as f64),
            transport,
            if p.machines > 1 {
                format!(" over {} machines", p.machines)
            } else {
                String::new()
            },
            p.role.as_str()
        )
    };
    let mut out = pal.bold(wrap(&title, pal.width, "", "  ").trim_end());
    out.push('\n');
    if let Some(t) = &r.target {
        out.push_str(&pal.dim(wrap(t, pal.width, "", "  ").trim_end()));
        out.push('\n');
    }
    if let Some(n) = &r.netns {
        out.push_str(&netns(n, pal.width));
    }
    out.push_str(&routes(r, pal));
    out
}

/// audit --netns: what the process's sockets get, beside the host's values.
fn netns(n: &crate::audit::netns::NetnsReport, width: usize) -> String {
    let head = if n.same_as_host {
        format!(
            "Process {} shares rtcheck's network namespace ({}): the values are the host's.",
            n.pid, n.namespace
        )
    } else if n.differences.is_empty() {
        format!(
            "Network namespace of process {} ({}): the same values as the host.",
            n.pid, n.namespace
        )
    } else {
        format!("Network namespace of process {} ({}) differs from the host; the checks judge its values:", n.pid, n.namespace)
    };
    let mut out = wrap(&head, width, "", "  ");
    for d in &n.differences {
        out.push_str(&wrap(
            &format!("{} = {} (host: {})", d.sysctl, d.namespace, d.host),
            width,
            "  ",
            "    ",
        ));
    }
    out
}

/// lint: each proxied route, what it carries and why, so a user can correct it.
fn routes(r: &FindingsReport, pal: Palette) -> String {
    const SHOWN: usize = 20;
    let mut out = String::new();
    for rt in r.routes.iter().take(SHOWN) {
        let what = if rt.carries.is_empty() {
            "nothing says it carries a stream".to_string()
        } else {
            rt.carries
                .iter()
                .map(|c| format!("{} ({})", c.transport.as_str(), c.why))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let line = format!("route {} at {}:{}: {what}", rt.route, rt.file, rt.line);
        out.push_str(&pal.dim(wrap(&line, pal.width, "", "    ").trim_end()));
        out.push('\n');
    }
    if r.routes.len() > SHOWN {
        let more = format!(
            "and {} more routes (--format json lists all)",
            r.routes.len() - SHOWN
        );
        out.push_str(&pal.dim(&more));
        out.push('\n');
    }
    out
}

/// The verdict line, in the order every format uses: fail, warn, pass, skip.
pub fn summary_line(r: &FindingsReport, pal: Palette) -> String {
    let s = &r.summary;
    // An invalid live measurement makes the exit code 1 too: the verdict line says so.
    let invalid = r
        .findings
        .iter()
        .filter(|f| f.verification.as_ref().is_some_and(|v| !v.valid))
        .count();
    let invalid = if invalid > 0 {
        pal.bad(&format!(", {invalid} measurement(s) invalid"))
    } else {
        String::new()
    };
    // A run with live experiments takes seconds: said in seconds.
    let took = if r.duration_ms >= 1000.0 {
        format!("{:.1} s", r.duration_ms / 1000.0)
    } else {
        format!("{} ms", r.duration_ms)
    };
    format!(
        "{} fail, {} warn, {} pass, {} skip{}{invalid} in {took}\n",
        pal.bad(&s.fail.to_string()),
        pal.warn(&s.warn.to_string()),
        pal.good(&s.pass.to_string()),
        s.skip,
        suppressed_count(s),
    )
}

/// `, N suppressed` when the baseline accepted any (nothing otherwise: most runs have none).
pub fn suppressed_count(s: &crate::findings::Summary) -> String {
    if s.suppressed > 0 {
        format!(", {} suppressed", s.suppressed)
    } else {
        String::new()
    }
}

/// Findings the baseline accepted, one line each with the entry's reason, whole.
pub fn suppressed_lines(findings: &[Finding], pal: Palette) -> String {
    let mut out = String::new();
    for f in findings.iter().filter(|f| f.status == Status::Suppressed) {
        let reason = f.reason.as_deref().unwrap_or("accepted by the baseline");
        out.push_str(&wrap(
            &format!("{}: {}", f.id, crate::report::plain(reason)),
            pal.width,
            &format!("{} ", pal.status(Status::Suppressed)),
            "       ",
        ));
    }
    if !out.is_empty() {
        out.insert(0, '\n');
    }
    out
}

/// What the table shows as observed: the reason for a check that read nothing.
fn observed(f: &Finding) -> &str {
    match (&f.status, &f.reason) {
        (Status::Skip | Status::Suppressed, Some(reason)) => reason,
        _ => &f.observed,
    }
}

/// One row per check: status, id, observed. Nothing is cut: the id keeps its column whole
/// and the observed value wraps between words, a path in it after a `/` (the fix of a fail
/// or warn is in its details block right below, so the table does not repeat it).
fn table(r: &FindingsReport, pal: Palette) -> String {
    use super::table::Frame;
    let rows: Vec<Vec<String>> = r
        .findings
        .iter()
        .map(|f| {
            let obs = crate::report::plain(observed(f)).into_owned();
            vec![f.status.as_str().to_string(), f.id.clone(), obs]
        })
        .collect();
    let statuses: Vec<Status> = r.findings.iter().map(|f| f.status).collect();
    let mut out = super::table::findings(&statuses, &rows, Frame::Rule, &pal);
    out.push('\n');
    out
}

/// The compact block of a fail or warn: what was seen, what is needed, the fix and the
/// commands to run now.
fn details(f: &Finding, pal: Palette) -> String {
    let w = pal.width;
    let mut out = wrap(
        &format!("{} {}: {}", f.status.as_str(), f.id, f.title),
        w,
        "",
        "  ",
    );
    out = out.replacen(f.status.as_str(), &pal.status(f.status), 1);
    out.push_str(&wrap(&f.observed, w, "  observed: ", "            "));
    out.push_str(&wrap(&f.expected, w, "  expected: ", "            "));
    if !f.fix.summary.is_empty() {
        out.push_str(&wrap(&f.fix.summary, w, "  fix:      ", "            "));
    }
    for c in &f.fix.runtime {
        // Broken only between words, with ` \` continuations: still runs when pasted.
        out.push_str(&super::wrap_command(c, w, "    $ ", "      "));
    }
    // A finding in a config file (lint): the lines to write there, whole (copyable).
    if f.location.is_some() {
        for c in &f.fix.persistent {
            out.push_str(&format!("    {c}\n"));
        }
    }
    if let Some(v) = &f.verification {
        out.push_str(&measured_line(v, w));
    }
    out
}

fn measured_line(v: &crate::findings::Verification, w: usize) -> String {
    wrap(
        &format!(
            "{} live on loopback ({}): {}",
            crate::report::verify::measured(v),
            v.name,
            v.verdict
        ),
        w,
        "  measured: ",
        "            ",
    )
}

/// A fix line: a command stays whole (to be copied), prose wraps.
fn fix_line(label: &str, line: &str, w: usize) -> String {
    let first = format!("    {:<8}", format!("{label}:"));
    if crate::report::is_shell_command(line) {
        super::wrap_command(line, w, &first, "            ")
    } else {
        wrap(line, w, &first, "            ")
    }
}

/// Everything about one check: the rule, the evidence, every fix line, the experiment.
pub fn explain(f: &Finding, pal: Palette) -> String {
    let w = pal.width;
    let ind = "            ";
    let mut out = wrap(
        &format!("{} {}: {}", f.status.as_str(), f.id, f.title),
        w,
        "",
        "  ",
    );
    out = out.replacen(f.status.as_str(), &pal.status(f.status), 1);
    if let Some(reason) = &f.reason {
        out.push_str(&wrap(reason, w, "  reason:   ", ind));
    }
    out.push_str(&wrap(&f.observed, w, "  observed: ", ind));
    out.push_str(&wrap(&f.expected, w, "  expected: ", ind));
    out.push_str(&wrap(&f.rule, w, "  rule:     ", ind));
    for e in &f.evidence {
        let text = format!("[{}] {} ({})", e.id, e.value, e.source);
        out.push_str(&wrap(&text, w, "  evidence: ", ind));
    }
    if !f.fix.summary.is_empty() {
        out.push_str(&wrap(&f.fix.summary, w, "  fix:      ", ind));
    }
    for (label, lines) in [("now", &f.fix.runtime), ("keep", &f.fix.persistent)] {
        for c in lines {
            out.push_str(&fix_line(label, c, w));
        }
    }
    if let Some(v) = &f.verify {
        out.push_str(&format!("  verify:   rtcheck verify {v}\n"));
    }
    if let Some(v) = &f.verification {
        out.push_str(&measured_line(v, w));
    }
    out
}

/// The report: verdict, table, then details for what needs action (`explain`: every
/// check in full).
pub fn render(r: &FindingsReport, pal: Palette, explain_all: bool) -> String {
    let mut out = header(r, pal);
    out.push_str(&summary_line(r, pal));
    out.push('\n');
    out.push_str(&table(r, pal));
    if explain_all {
        for f in &r.findings {
            out.push('\n');
            out.push_str(&explain(f, pal));
        }
        return out;
    }
    for f in r
        .findings
        .iter()
        .filter(|f| matches!(f.status, Status::Fail | Status::Warn))
    {
        out.push('\n');
        out.push_str(&details(f, pal));
    }
    let skips: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.status == Status::Skip)
        .collect();
    if !skips.is_empty() {
        out.push('\n');
        for f in skips {
            let reason = f.reason.as_deref().unwrap_or("not measured");
            out.push_str(&wrap(
                &format!("{}: {reason}", f.id),
                pal.width,
                &format!("{} ", pal.status(Status::Skip)),
                "       ",
            ));
        }
    }
    out.push_str(&suppressed_lines(&r.findings, pal));
    // `audit --verify`: passing checks have no details block, so their live
    // measurements are listed here, one line each.
    let passed: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.status == Status::Pass)
        .filter_map(|f| f.verification.as_ref().map(|v| (f, v)))
        .collect();
    if !passed.is_empty() {
        out.push('\n');
        out.push_str(&pal.bold("measured live on loopback (passing checks)"));
        out.push('\n');
        for (f, v) in passed {
            out.push_str(&wrap(
                &format!(
                    "{}: {} ({}): {}",
                    f.id,
                    crate::report::verify::measured(v),
                    v.name,
                    v.verdict
                ),
                pal.width,
                "  ",
                "    ",
            ));
        }
    }
    out.push('\n');
    out.push_str(&wrap(
        &if r.kind == "lint" {
            "Rule and evidence: `rtcheck lint --explain`, or `rtcheck explain ID`; examples: docs/lint.md."
                .to_string()
        } else {
            format!(
                "Rule, evidence and every fix: `rtcheck {} --explain`, or `rtcheck explain ID`.",
                r.kind
            )
        },
        pal.width,
        "",
        "",
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `audit --verify` adds delivery findings with long ids ("delivery-snapshot-cle…" was
    /// cut): at 80 and 120 every id and every word of observed is whole, nothing ends in "…".
    #[test]
    fn table_keeps_long_ids_and_observed_values_whole() {
        let finding = |id: &str, observed: &str| -> crate::findings::Finding {
            serde_json::from_value(serde_json::json!({
                "id": id, "title": "t", "status": "warn", "observed": observed,
                "expected": "e", "rule": "r", "evidence": [], "fix": {"summary": "Do it."}
            }))
            .unwrap()
        };
        let long = "ip_local_port_range 32768-60999 = 28,232 ports, 0 reserved in range (ip_local_reserved_ports): 28,232 usable; tcp_tw_reuse 2";
        let r = FindingsReport::new(
            "audit",
            crate::profile::Profile::default(),
            None,
            vec![
                finding("ephemeral-ports", long),
                finding(
                    "delivery-snapshot-clean-reconnect",
                    "lost 0, lost silently 0 of 1,000",
                ),
                finding("delivery-session-ack-server-restart", long),
            ],
            1.0,
        );
        for width in [80, 120] {
            let pal = Palette {
                width,
                ..Palette::plain()
            };
            let text = table(&r, pal);
            assert!(!text.contains('…'), "{text}");
            assert!(text.lines().all(|l| l.chars().count() <= width), "{text}");
            for id in ["ephemeral-ports", "delivery-snapshot-clean-reconnect"] {
                assert!(
                    text.lines()
                        .any(|l| l.split_whitespace().nth(1) == Some(id)),
                    "{id}: {text}"
                );
            }
            let words: Vec<&str> = text.split_whitespace().collect();
            for w in long.split_whitespace() {
                assert!(words.contains(&w), "`{w}` cut: {text}");
            }
        }
    }

    #[test]
    fn verdict_line_counts_invalid_measurements() {
        let mut f = crate::findings::Finding {
            location: None,
            id: "memory".into(),
            title: "t".into(),
            status: Status::Pass,
            observed: "o".into(),
            expected: "e".into(),
            rule: "r".into(),
            reason: None,
            evidence: vec![],
            fix: Default::default(),
            verify: None,
            verification: None,
            numbers: Default::default(),
        };
        let r = FindingsReport::new(
            "audit",
            crate::profile::Profile::default(),
            None,
            vec![f.clone()],
            1.0,
        );
        assert!(
            summary_line(&r, Palette::plain()).starts_with("0 fail, 0 warn, 1 pass, 0 skip in ")
        );
        f.verification = Some(crate::findings::Verification {
            name: "memory-ws".into(),
            measured: None,
            unit: "B".into(),
            reference: "ref".into(),
            verdict: "invalid: why".into(),
            details: vec![],
            valid: false,
            duration_ms: 1,
        });
        let r = FindingsReport::new(
            "audit",
            crate::profile::Profile::default(),
            None,
            vec![f],
            1.0,
        );
        assert!(
            summary_line(&r, Palette::plain())
                .starts_with("0 fail, 0 warn, 1 pass, 0 skip, 1 measurement(s) invalid in "),
            "{}",
            summary_line(&r, Palette::plain())
        );
    }
}
