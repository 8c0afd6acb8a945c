//! A finding as an html card (its status colour, what was read, what the workload needs,
//! its numbers, the fix, a live measurement beside its reference, the evidence): drawn by
//! `report::doc::html` for [`crate::report::doc::Block::Findings`] and by probe's page.
use super::{esc, evidence_list, num, status};
use crate::findings::{Finding, Status, Verification};

/// One finding as a card (its path in the JSON is `findings.{i}`), element id
/// `finding-ID`: shared by every page with findings.
pub(crate) fn finding(i: usize, f: &Finding) -> String {
    card(i, f, &f.id)
}

/// A finding's card with element id `finding-{anchor}` (pages where a check id repeats,
/// one per URL, make it unique).
pub(crate) fn card(i: usize, f: &Finding, anchor: &str) -> String {
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
