//! Markdown rendering of a findings report (audit, verify), for a CI step summary
//! (`>> $GITHUB_STEP_SUMMARY`).
use crate::findings::Status;
use crate::report::FindingsReport;

fn cell(s: &str) -> String {
    crate::report::plain(&s.replace('\n', " ")).replace('|', "\\|")
}

fn icon(s: Status) -> &'static str {
    match s {
        Status::Pass => "✅ pass",
        Status::Warn => "⚠️ warn",
        Status::Fail => "❌ fail",
        Status::Skip => "⏭️ skip",
        Status::Suppressed => "🔕 suppressed",
    }
}

/// The fix lines: commands in one ```sh block (safe to copy and run), prose as a list
/// below it.
fn fix_block(fix: &crate::findings::Fix) -> String {
    type Lines<'a> = Vec<(&'static str, &'a String)>;
    let (commands, prose): (Lines, Lines) = fix
        .runtime
        .iter()
        .map(|c| ("now", c))
        .chain(fix.persistent.iter().map(|c| ("persistent", c)))
        .partition(|(_, c)| crate::report::is_shell_command(c));
    let mut out = String::new();
    if !commands.is_empty() {
        out.push_str("\n```sh\n");
        let mut last = "";
        for (when, c) in commands {
            if when != last {
                out.push_str(&format!("# {when}\n"));
                last = when;
            }
            out.push_str(c);
            out.push('\n');
        }
        out.push_str("```\n");
    }
    if !prose.is_empty() {
        out.push('\n');
        for (_, c) in prose {
            out.push_str(&format!("- {c}\n"));
        }
    }
    out
}

pub fn render(r: &FindingsReport) -> String {
    let p = &r.profile;
    let s = &r.summary;
    // lint judges configs: no role, and the transport may come from block names.
    let what = if r.kind == "lint" {
        format!(
            "{} connections, transport {}",
            crate::evidence::fmt_num(p.connections_per_machine() as f64),
            p.transport.map_or("by block names", |t| t.name())
        )
    } else {
        // Said as the text says it: the total, and over how many machines.
        format!(
            "{} {} connections{}, role {}",
            crate::evidence::fmt_num(p.connections as f64),
            p.transport.map(|t| t.name()).unwrap_or("websocket"),
            if p.machines > 1 {
                format!(" over {} machines", p.machines)
            } else {
                String::new()
            },
            p.role.as_str()
        )
    };
    let mut out = format!(
        "## rtcheck {}: {what}\n\n**{} fail, {} warn, {} pass, {} skip{}** in {} ms{}\n\n",
        r.kind,
        s.fail,
        s.warn,
        s.pass,
        s.skip,
        crate::report::text::audit::suppressed_count(s),
        r.duration_ms,
        r.target
            .as_deref()
            .map(|t| format!(" ({t})"))
            .unwrap_or_default()
    );
    out.push_str("| status | check | observed | expected |\n|---|---|---|---|\n");
    for f in &r.findings {
        let observed = match (&f.status, &f.reason) {
            (Status::Skip | Status::Suppressed, Some(reason)) => reason.clone(),
            _ => f.observed.clone(),
        };
        out.push_str(&format!(
            "| {} | `{}` | {} | {} |\n",
            icon(f.status),
            f.id,
            cell(&observed),
            cell(&f.expected)
        ));
    }
    for f in r
        .findings
        .iter()
        .filter(|f| matches!(f.status, Status::Warn | Status::Fail))
    {
        out.push_str(&format!(
            "\n### {} `{}`: {}\n\n",
            icon(f.status),
            f.id,
            f.title
        ));
        out.push_str(&format!(
            "- **observed:** {}\n- **expected:** {}\n- **rule:** {}\n",
            f.observed, f.expected, f.rule
        ));
        for e in &f.evidence {
            out.push_str(&format!(
                "- **evidence** `{}`: {} ({})\n",
                e.id, e.value, e.source
            ));
        }
        out.push_str(&format!("- **fix:** {}\n", f.fix.summary));
        out.push_str(&fix_block(&f.fix));
        if let Some(v) = &f.verify {
            out.push_str(&format!("\nLive demonstration: `rtcheck verify {v}`\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    /// Issue 27 item 10: the heading says what the text says, machines included.
    #[test]
    fn heading_keeps_the_machines() {
        let profile = crate::profile::Profile {
            connections: 30_000,
            machines: 3,
            ..Default::default()
        };
        let r = crate::report::FindingsReport::new("audit", profile, None, vec![], 1.0);
        let md = super::render(&r);
        assert!(
            md.starts_with(
                "## rtcheck audit: 30,000 websocket connections over 3 machines, role server"
            ),
            "{md}"
        );
        let text = crate::report::text::audit::render(&r, crate::report::Palette::plain(), false);
        assert!(
            text.contains("30,000 websocket connections over 3 machines"),
            "{text}"
        );
    }

    #[test]
    fn code_blocks_hold_only_commands() {
        let fix = crate::findings::Fix {
            summary: "s".into(),
            runtime: vec!["sudo sysctl -w a=1".into()],
            persistent: vec![
                "printf 'a = 1\\n' | sudo tee /etc/sysctl.d/x.conf".into(),
                "in the application: ping every 20-30 s".into(),
            ],
        };
        let md = super::fix_block(&fix);
        let block = md
            .split("```sh\n")
            .nth(1)
            .unwrap()
            .split("```")
            .next()
            .unwrap();
        assert_eq!(
            block,
            "# now\nsudo sysctl -w a=1\n# persistent\nprintf 'a = 1\\n' | sudo tee /etc/sysctl.d/x.conf\n"
        );
        assert!(
            md.ends_with("\n- in the application: ping every 20-30 s\n"),
            "{md}"
        );
    }
}
