//! HTML for findings: `audit` (one card per check with its status colour, what was read,
//! what the workload needs, the fix and the evidence) and `verify` (each measurement
//! beside its reference number; an invalid one shows its reason, no number).
use super::{esc, evidence_list, num, page, status};
use crate::findings::{Finding, Status, Verification};
use crate::report::{FindingsReport, VerifyReport};

pub fn render_audit(r: &FindingsReport) -> anyhow::Result<String> {
    let json = crate::report::json::render(r)?;
    let s = &r.summary;
    let class = if s.fail > 0 {
        "bad"
    } else if s.warn > 0 {
        "warn"
    } else {
        ""
    };
    let verdict = format!(
        "{} fail, {} warn, {} pass, {} skip",
        s.fail, s.warn, s.pass, s.skip
    );
    let mut b = format!(
        "<p id=\"summary\">{} fail, {} warn, {} pass, {} skip &middot; {} connections, role {} &middot; {}</p>\n",
        num("summary.fail", &s.fail.to_string()),
        num("summary.warn", &s.warn.to_string()),
        num("summary.pass", &s.pass.to_string()),
        num("summary.skip", &s.skip.to_string()),
        num("profile.connections", &crate::evidence::fmt_num(r.profile.connections as f64)),
        esc(&format!("{:?}", r.profile.role).to_lowercase()),
        esc(r.target.as_deref().unwrap_or("")),
    );
    // Most severe first, as in the text report.
    let mut order: Vec<(usize, &Finding)> = r.findings.iter().enumerate().collect();
    order.sort_by_key(|(i, f)| (std::cmp::Reverse(f.status), *i));
    for (i, f) in order {
        b.push_str(&finding(i, f));
    }
    Ok(page(
        &format!("rtcheck {}", r.kind),
        &verdict,
        class,
        &b,
        &json,
    ))
}

/// One finding as a card (its path in the JSON is `findings.{i}`), element id
/// `finding-ID`: shared by every page with findings.
pub(crate) fn finding(i: usize, f: &Finding) -> String {
    card(i, f, &f.id)
}

/// A finding's card with element id `finding-{anchor}` (pages where a check id repeats,
/// one per URL, make it unique).
pub(super) fn card(i: usize, f: &Finding, anchor: &str) -> String {
    let mut b = format!(
        "<div class=\"card finding {st}\" id=\"finding-{}\" data-id=\"{id}\" data-status=\"{st}\"><h3>{} {} <span class=\"dim\">{id}</span></h3>\n",
        esc(anchor),
        status(f.status),
        esc(&f.title),
        st = f.status.as_str(),
        id = esc(&f.id),
    );
    b.push_str(&format!(
        "<table><tr><th>observed</th><td>{}</td></tr><tr><th>expected</th><td>{}</td></tr><tr><th>rule</th><td>{}</td></tr>",
        esc(&f.observed),
        esc(&f.expected),
        esc(&f.rule)
    ));
    if let Some(r) = &f.reason {
        let th = if f.status == Status::Suppressed {
            "suppressed"
        } else {
            "skipped"
        };
        b.push_str(&format!("<tr><th>{th}</th><td>{}</td></tr>", esc(r)));
    }
    for (k, v) in &f.numbers {
        b.push_str(&format!(
            "<tr><th>{}</th><td class=\"n\">{}</td></tr>",
            esc(k),
            num(
                &format!("findings.{i}.numbers.{k}"),
                &crate::evidence::fmt_num(*v)
            )
        ));
    }
    b.push_str("</table>\n");
    if f.status != Status::Pass && !f.fix.summary.is_empty() {
        b.push_str(&format!(
            "<p class=\"fix\"><b>Fix</b>: {}</p>",
            esc(&f.fix.summary)
        ));
        for (label, cmds) in [
            ("now", &f.fix.runtime),
            ("across reboots", &f.fix.persistent),
        ] {
            if !cmds.is_empty() {
                b.push_str(&format!(
                    "<p class=\"dim\">{label}:</p><pre>{}</pre>",
                    cmds.iter().map(|c| esc(c)).collect::<Vec<_>>().join("\n")
                ));
            }
        }
    }
    if let Some(v) = &f.verification {
        b.push_str(&verification(&format!("findings.{i}.verification"), v));
    }
    b.push_str(&evidence_list(&f.evidence));
    b.push_str("</div>\n");
    b
}

/// A measurement beside its reference; an invalid one shows why, never a number.
fn verification(path: &str, v: &Verification) -> String {
    let (st, measured) = if v.valid {
        let shown = match v.measured {
            Some(m) => format!(
                "{} {}",
                num(&format!("{path}.measured"), &crate::evidence::fmt_num(m)),
                esc(&v.unit)
            ),
            None => "no number".into(),
        };
        (Status::Pass, shown)
    } else {
        (Status::Fail, "<b>invalid</b>: no number".to_string())
    };
    let details: String = v
        .details
        .iter()
        .map(|d| format!("<li>{}</li>", esc(d)))
        .collect();
    format!(
        "<table class=\"verification {cls}\" data-name=\"{name}\"><tr><th>{}</th><th>measured</th><th>reference</th></tr><tr><td>{name}</td><td class=\"n\">{measured}</td><td>{}</td></tr><tr><td colspan=\"3\">{}</td></tr></table><ul>{details}</ul>\n",
        // A measurement is valid or invalid, not pass or fail: the colour, its own word.
        status(st)
            .replace(">pass<", ">valid<")
            .replace(">fail<", ">invalid<"),
        esc(&v.reference),
        esc(&v.verdict),
        cls = if v.valid { "" } else { "invalid" },
        name = esc(&v.name),
    )
}

pub fn render_verify(r: &VerifyReport) -> anyhow::Result<String> {
    let json = crate::report::json::render(r)?;
    let s = &r.summary;
    let (verdict, class) = if s.invalid == 0 {
        (format!("{} of {} measurements valid", s.valid, s.total), "")
    } else {
        (
            format!("INVALID: {} of {} measurements", s.invalid, s.total),
            "bad",
        )
    };
    let mut b = format!(
        "<p id=\"summary\">{} measurements, {} valid, {} invalid &middot; {} &middot; {} ms</p>\n",
        num("summary.total", &s.total.to_string()),
        num("summary.valid", &s.valid.to_string()),
        num("summary.invalid", &s.invalid.to_string()),
        esc(&r.target),
        num("duration_ms", &r.duration_ms.to_string()),
    );
    for (i, v) in r.verifications.iter().enumerate() {
        let title = crate::verify::part(&v.name).map_or(v.name.as_str(), |p| p.title);
        b.push_str(&format!(
            "<div class=\"card {}\" id=\"verify-{}\"><h3>{}</h3>\n",
            if v.valid { "pass" } else { "fail" },
            esc(&v.name),
            esc(title)
        ));
        b.push_str(&verification(&format!("verifications.{i}"), v));
        if let Some(e) = crate::verify::evidence_id(&v.name) {
            b.push_str(&evidence_list(&[crate::evidence::reference(e)]));
        }
        b.push_str("</div>\n");
    }
    Ok(page("rtcheck verify", &verdict, class, &b, &json))
}
