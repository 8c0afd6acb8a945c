//! text rendering of `rtcheck hops`: the catalogue, one hop in full (also `explain HOP`),
//! and a path's chain (verdict first, a table that fits the width, then what to configure).
use crate::hops::chain::{Bound, Chain};
use crate::hops::{Hop, Limit, LimitKind};
use crate::report::Palette;
use rtcheck_wire::transport::Transport;

/// The documented default of `kind` for `t` ("60s", "none", "unknown", "-" when absent).
fn default_of(h: &Hop, kind: LimitKind, t: Transport) -> String {
    h.limits(kind, t)
        .map(|l| l.default.short())
        .next()
        .unwrap_or_else(|| "-".into())
}

pub fn list(all: &[Hop], p: &Palette) -> String {
    let ws = Transport::Websocket;
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|h| {
            vec![
                h.id.clone(),
                default_of(h, LimitKind::Idle, ws),
                default_of(h, LimitKind::Lifetime, ws),
                h.sse.as_str().to_string(),
                h.websocket.as_str().to_string(),
            ]
        })
        .collect();
    let header = ["id", "idle (ws)", "lifetime (ws)", "sse", "websocket"];
    let t = super::fit_table(&header, &rows, p.width, &[0]);
    format!(
        "{t}\n{}",
        super::wrap(
            &format!(
                "{} hops, documented defaults. One in full with its sources: `rtcheck explain ID`; \
                 a path: `rtcheck hops --path cloudflare,aws-alb,nginx`.",
                all.len()
            ),
            p.width,
            "",
            ""
        )
    )
}

fn limit_line(l: &Limit, p: &Palette) -> String {
    let applies: Vec<&str> = l.applies_to.iter().map(|t| t.name()).collect();
    let mut head = format!("{} ({}): {}", l.kind.name(), applies.join(", "), l.default);
    if let (Some(lo), Some(hi)) = (l.min, l.max) {
        head.push_str(&format!(", {lo} to {hi}"));
    }
    head.push_str(if l.adjustable {
        ", adjustable"
    } else {
        ", fixed"
    });
    if !l.reset_by.is_empty() {
        let r: Vec<&str> = l.reset_by.iter().map(|r| r.as_str()).collect();
        head.push_str(&format!("; reset by {}", r.join(", ")));
    }
    let mut s = super::wrap(&head, p.width, "  ", "    ");
    s.push_str(&setting("    setting: ", &l.setting, p.width));
    if let Some(n) = &l.note {
        s.push_str(&super::wrap(n, p.width, "    note: ", "          "));
    }
    s
}

/// A setting to type into a config or a shell: wrapped only between its `; `-separated
/// directives, each whole (copied as is); one wider than a line wraps between words, unless
/// it is a shell command (then it stays whole, on a line of its own). Prose (it starts with a capital: "Compression Rules / ...") wraps between words.
fn setting(label: &str, text: &str, width: usize) -> String {
    let rest = " ".repeat(label.chars().count());
    if super::has_command(text) {
        return super::wrap_parts(text, width, label, &rest);
    }
    if text.starts_with(|c: char| c.is_uppercase()) {
        return super::wrap(text, width, label, &rest);
    }
    let mut out = String::new();
    let mut line = label.to_string();
    let mut empty = true;
    let parts: Vec<&str> = text.split("; ").collect();
    for (i, d) in parts.iter().enumerate() {
        let d = if i + 1 < parts.len() {
            format!("{d};")
        } else {
            d.to_string()
        };
        if !empty && line.chars().count() + 1 + d.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line.clone_from(&rest);
            empty = true;
        }
        // Wider than a line by itself: a shell command stays whole (copied), anything
        // else (a directive and its explanation) wraps between words.
        let room = width.saturating_sub(line.chars().count() + 1);
        if d.chars().count() > room && !crate::report::is_shell_command(&d) {
            let first = if empty {
                line.clone()
            } else {
                format!("{line} ")
            };
            let wrapped = super::wrap(&d, width, &first, &rest);
            let (done, last) = wrapped
                .trim_end()
                .rsplit_once('\n')
                .unwrap_or(("", &wrapped));
            if !done.is_empty() {
                out.push_str(done);
                out.push('\n');
            }
            line = last.trim_end().to_string();
            empty = false;
            continue;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(&crate::report::plain(&d));
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// A source URL under its heading: indented when it fits, else from the first column and,
/// longer than a line, broken after a `/` (never inside a name).
fn url_lines(url: &str, width: usize) -> String {
    if 4 + url.chars().count() <= width {
        return format!("    {url}\n");
    }
    super::wrap(url, width, "", "")
}

/// One hop in full, with its sources.
pub fn one(h: &Hop, p: &Palette) -> String {
    let mut s = format!("{}  {}\n", p.bold(&h.id), h.name);
    s.push_str(&format!("  kind {}, layer {}\n\n", h.kind, h.layer));
    s.push_str(&format!("{}\n", p.bold("Limits")));
    for l in &h.limits {
        s.push_str(&limit_line(l, p));
    }
    let b = &h.buffering;
    s.push_str(&format!("\n{}\n", p.bold("Streaming")));
    s.push_str(&format!(
        "  buffering {}, event stream flushed {}\n",
        serde_plain(&b.mode),
        b.sse_flushed.as_str(),
    ));
    s.push_str(&setting("    setting: ", &b.setting, p.width));
    if let Some(n) = &b.note {
        s.push_str(&super::wrap(n, p.width, "    note: ", "          "));
    }
    s.push_str(&format!(
        "  compression {}\n",
        serde_plain(&h.compression.default)
    ));
    s.push_str(&setting("    setting: ", &h.compression.setting, p.width));
    if let Some(n) = &h.compression.note {
        s.push_str(&super::wrap(n, p.width, "    note: ", "          "));
    }
    s.push_str(&format!(
        "  HTTP/2 to the client {}\n",
        h.http2_client.as_str()
    ));
    if let Some(x) = &h.http2_setting {
        s.push_str(&setting("    setting: ", x, p.width));
    }
    s.push_str(&format!(
        "  SSE {}, WebSocket {}\n",
        h.sse.as_str(),
        h.websocket.as_str()
    ));
    if let Some(x) = &h.websocket_setting {
        s.push_str(&setting("    websocket: ", x, p.width));
    }
    s.push_str(&super::wrap(&h.reload, p.width, "  reload: ", "    "));
    for n in &h.notes {
        s.push_str(&super::wrap(n, p.width, "  note: ", "    "));
    }
    s.push_str(&format!("\n{}\n", p.bold("Sources")));
    for src in &h.sources {
        s.push_str(&format!(
            "  read {}:\n{}",
            src.read,
            url_lines(&src.url, p.width)
        ));
    }
    s
}

/// A kebab-case enum as its YAML spelling.
fn serde_plain<T: serde::Serialize>(v: &T) -> String {
    serde_yaml::to_string(v)
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// A bound as "60s [2]": the number of the hop on the path (ids are never cut in a cell).
fn bound(b: &Option<Bound>, path: &[String]) -> String {
    match b {
        Some(b) => {
            let n = path.iter().position(|h| *h == b.hop).map_or(0, |i| i + 1);
            let declared = if b.declared { " declared" } else { "" };
            format!("{} [{n}]{declared}", secs(b.secs))
        }
        None => "none".into(),
    }
}

/// Seconds as a table shows them: `60s`, and `14400s (4h)` from ten minutes up.
fn secs(n: u64) -> String {
    if n < 600 {
        format!("{n}s")
    } else {
        let d = rtcheck_base::units::fmt_duration(std::time::Duration::from_secs(n));
        format!("{n}s ({d})")
    }
}

pub fn chain(c: &Chain, p: &Palette) -> String {
    let mut s = super::wrap(&c.verdict(), p.width, "", "");
    if let Some(l) = &c.library {
        let line = format!("{} ({}, read {})", l.sentence, l.source, l.read);
        s.push_str(&super::wrap(&line, p.width, "Library: ", "  "));
    }
    s.push('\n');
    if !c.path.is_empty() {
        let numbered: Vec<String> = c
            .path
            .iter()
            .enumerate()
            .map(|(i, h)| format!("[{}] {h}", i + 1))
            .collect();
        s.push_str(&super::wrap(
            &numbered.join(" -> "),
            p.width,
            "Path: ",
            "      ",
        ));
    }
    let rows: Vec<Vec<String>> = c
        .transports
        .iter()
        .map(|tc| {
            let hb = match (tc.excluded, tc.heartbeat_max_s) {
                (true, _) => "excluded".to_string(),
                (false, Some(m)) => format!("<= {m}s"),
                (false, None) => "-".to_string(),
            };
            vec![
                tc.transport.clone(),
                bound(&tc.idle, &c.path),
                bound(&tc.lifetime, &c.path),
                bound(&tc.first_byte, &c.path),
                hb,
            ]
        })
        .collect();
    let header = ["transport", "idle", "lifetime", "first byte", "heartbeat"];
    let t = super::fit_table(&header, &rows, p.width, &[0]);
    s.push_str(&format!("{t}\n"));
    let mut section = |title: &str, lines: Vec<String>| {
        if lines.is_empty() {
            return;
        }
        s.push_str(&format!("\n{}\n", p.bold(title)));
        for l in lines {
            s.push_str(&l);
        }
    };
    section("Configure", configure(c, p));
    let unknown: Vec<String> = c
        .transports
        .iter()
        .flat_map(|tc| tc.unknown.iter())
        .fold(Vec::new(), |mut v: Vec<String>, u| {
            if !v.contains(u) {
                v.push(u.clone());
            }
            v
        })
        .into_iter()
        .map(|u| super::wrap(&u, p.width, "  ", "    "))
        .collect();
    section(
        "Not documented (declare with --override HOP.FIELD=DUR, or measure with probe)",
        unknown,
    );
    section(
        "Server side (its links to Redis or a backend)",
        server_side(c, p),
    );
    let mut notes = vec![super::wrap(
        &format!("SSE and HTTP/2: {}.", c.sse_http2),
        p.width,
        "  ",
        "    ",
    )];
    notes.extend(
        c.warnings
            .iter()
            .map(|w| super::wrap(w, p.width, "  ", "    ")),
    );
    notes.extend(c.reloads.iter().map(|r| {
        super::wrap(
            &format!("{} on reload: {}", r.hop, r.setting),
            p.width,
            "  ",
            "    ",
        )
    }));
    notes.push(super::wrap(
        &format!("Rule: {}.", c.heartbeat_rule),
        p.width,
        "  ",
        "    ",
    ));
    section("Notes", notes);
    let width = p.width;
    let server_hops = c.backend_links.iter().flat_map(|l| l.hops.iter());
    let sources: Vec<String> = c
        .path
        .iter()
        .chain(server_hops)
        .filter_map(|id| crate::hops::get(id))
        .flat_map(|h| {
            h.sources.iter().map(move |src| {
                format!(
                    "  {} (read {}):\n{}",
                    h.id,
                    src.read,
                    url_lines(&src.url, width)
                )
            })
        })
        .collect();
    section("Sources", sources);
    s
}

/// One entry per server-side link: its hops, the tightest idle limit and the keepalive
/// that survives it.
fn server_side(c: &Chain, p: &Palette) -> Vec<String> {
    let mut out = Vec::new();
    for l in &c.backend_links {
        let head = format!("{} link: {}", l.side, l.hops.join(" -> "));
        out.push(super::wrap(&head, p.width, "  ", "    "));
        let line = match (&l.idle, l.keepalive_max_s) {
            (Some(b), Some(k)) => format!(
                "idle limit {} ({}), reset by {}: TCP keepalive or a PING every {k} s or less",
                crate::hops::chain::show_secs(b.secs),
                b.hop,
                l.reset_by.join(", ")
            ),
            (Some(b), None) => format!(
                "idle limit {} ({}), reset by {}: only traffic keeps it open",
                crate::hops::chain::show_secs(b.secs),
                b.hop,
                l.reset_by.join(", ")
            ),
            (None, _) => "no documented idle limit".to_string(),
        };
        out.push(super::wrap(&line, p.width, "    ", "      "));
        out.extend(
            l.unknown
                .iter()
                .map(|u| super::wrap(&format!("not documented: {u}"), p.width, "    ", "      ")),
        );
    }
    out
}

/// What to configure, one entry per hop and setting with the transports it concerns
/// (the setting on its own lines, wrapped only between whole directives, so it can be copied).
fn configure(c: &Chain, p: &Palette) -> Vec<String> {
    let mut items: Vec<(String, String, String, Vec<String>)> = Vec::new();
    let mut add = |hop: &str, what: String, setting: &str, t: &str| match items
        .iter_mut()
        .find(|(h, w, s, _)| h == hop && *w == what && s == setting)
    {
        Some(i) => i.3.push(t.to_string()),
        None => items.push((hop.into(), what, setting.into(), vec![t.to_string()])),
    };
    for tc in c.transports.iter().filter(|t| !t.excluded) {
        for r in tc.required.iter().chain(&tc.compressing) {
            add(&r.hop, r.what.clone(), &r.setting, &tc.transport);
        }
        for (name, b) in [("idle", &tc.idle), ("lifetime", &tc.lifetime)] {
            if let Some(b) = b.as_ref().filter(|b| !b.declared && b.adjustable) {
                let what = format!("{name} {} s binds; to raise it", b.secs);
                add(&b.hop, what, &b.setting, &tc.transport);
            }
        }
    }
    items
        .into_iter()
        .map(|(hop, what, set, ts)| {
            let head = format!("{hop} ({}): {what}", ts.join(", "));
            format!(
                "{}{}",
                super::wrap(&head, p.width, "  ", "    "),
                setting("    ", &set, p.width)
            )
        })
        .collect()
}
