//! `rtcheck hops` as [`Doc`]s: the catalogue, one hop in full (also `explain HOP`), and a
//! path's chain (the verdict first, the bounds per transport, then what to configure).
//! Written once for text and markdown; settings are [`Block::Setting`], copied whole.
use crate::hops::chain::{show_secs, Bound, Chain};
use crate::hops::{Hop, Limit, LimitKind};
use crate::report::doc::{strong, t, Block, Column, Doc, Row, Span, Table, Tone, Verdict};
use rtcheck_wire::transport::Transport;

fn para(spans: Vec<Span>) -> Block {
    Block::Para { id: None, spans }
}

fn line(s: impl Into<String>) -> Block {
    para(vec![t(s)])
}

fn setting(label: &str, text: &str) -> Block {
    Block::Setting {
        label: label.into(),
        text: text.into(),
    }
}

/// The documented default of `kind` for `t` ("60s", "none", "unknown", "-" when absent).
fn default_of(h: &Hop, kind: LimitKind, t: Transport) -> String {
    h.limits(kind, t)
        .map(|l| l.default.short())
        .next()
        .unwrap_or_else(|| "-".into())
}

/// The catalogue: each hop's WebSocket defaults and what it does to SSE and WebSocket,
/// then each hop's sources.
pub fn list_doc(all: &[Hop]) -> anyhow::Result<Doc> {
    let (ws, sse) = (Transport::Websocket, Transport::Sse);
    let both =
        |h: &Hop, k: LimitKind| format!("{} / {}", default_of(h, k, ws), default_of(h, k, sse));
    let rows = all
        .iter()
        .map(|h| Row {
            key: Some(h.id.clone()),
            cells: vec![
                t(&h.id),
                t(both(h, LimitKind::Idle)),
                t(both(h, LimitKind::Lifetime)),
                t(default_of(h, LimitKind::FirstByte, sse)),
                t(h.sse.as_str()),
                t(h.websocket.as_str()),
            ],
        })
        .collect();
    let columns = [
        "id",
        "idle (ws / sse)",
        "lifetime (ws / sse)",
        "first byte",
        "sse",
        "websocket",
    ];
    let mut blocks = vec![Block::Table(Table {
        id: "hops".into(),
        columns: columns.map(Column::text).to_vec(),
        rows,
    })];
    blocks.push(Block::Section("Sources".into()));
    for h in all {
        for src in &h.sources {
            blocks.push(para(vec![
                strong(&h.id),
                t(format!(" ({}, read {}): {}", h.name, src.read, src.url)),
            ]));
        }
    }
    Ok(Doc {
        title: "rtcheck hops".into(),
        verdict: Verdict {
            text: vec![t(format!(
                "{} hops, documented defaults. One in full: `rtcheck explain ID`; a path: `rtcheck hops --path cloudflare,aws-alb,nginx`.",
                all.len()
            ))],
            tone: Tone::Plain,
        },
        blocks,
        json: crate::report::json::render(&all)?,
    })
}

fn limit(l: &Limit) -> Vec<Block> {
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
    let mut v = vec![line(head), setting("setting", &l.setting)];
    v.extend(l.note.iter().map(|n| line(format!("note: {n}"))));
    v
}

/// A kebab-case enum as its YAML spelling.
fn serde_plain<T: serde::Serialize>(v: &T) -> String {
    serde_yaml::to_string(v)
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// One hop in full: its limits with their settings, streaming, reload, notes, sources.
pub fn one_doc(h: &Hop) -> anyhow::Result<Doc> {
    let mut b = vec![
        line(format!("kind {}, layer {}", h.kind, h.layer)),
        Block::Section("Limits".into()),
    ];
    h.limits.iter().for_each(|l| b.extend(limit(l)));
    b.push(Block::Section("Streaming".into()));
    let buf = &h.buffering;
    b.push(line(format!(
        "buffering {}, event stream flushed {}",
        serde_plain(&buf.mode),
        buf.sse_flushed.as_str()
    )));
    b.push(setting("setting", &buf.setting));
    b.extend(buf.note.iter().map(|n| line(format!("note: {n}"))));
    let c = &h.compression;
    b.push(line(format!("compression {}", serde_plain(&c.default))));
    b.push(setting("setting", &c.setting));
    b.extend(c.note.iter().map(|n| line(format!("note: {n}"))));
    b.push(line(format!(
        "HTTP/2 to the client {}",
        h.http2_client.as_str()
    )));
    b.extend(h.http2_setting.iter().map(|x| setting("setting", x)));
    b.push(line(format!(
        "SSE {}, WebSocket {}",
        h.sse.as_str(),
        h.websocket.as_str()
    )));
    b.extend(h.websocket_setting.iter().map(|x| setting("websocket", x)));
    b.push(line(format!("reload: {}", h.reload)));
    b.extend(h.notes.iter().map(|n| line(format!("note: {n}"))));
    b.push(Block::Section("Sources".into()));
    b.extend(
        h.sources
            .iter()
            .map(|s| line(format!("read {}: {}", s.read, s.url))),
    );
    Ok(Doc {
        title: format!("rtcheck hops {}", h.id),
        verdict: Verdict {
            text: vec![strong(&h.id), t(format!(": {}", h.name))],
            tone: Tone::Plain,
        },
        blocks: b,
        json: crate::report::json::render(h)?,
    })
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

/// A path's chain: the verdict, the path numbered, the bounds per transport, what to
/// configure, what is not documented, the server side, notes and sources.
pub fn chain_doc(c: &Chain) -> anyhow::Result<Doc> {
    let mut b = Vec::new();
    if let Some(l) = &c.library {
        b.push(line(format!(
            "Library: {} ({}, read {})",
            l.sentence, l.source, l.read
        )));
    }
    if !c.path.is_empty() {
        let numbered: Vec<String> = c
            .path
            .iter()
            .enumerate()
            .map(|(i, h)| format!("[{}] {h}", i + 1))
            .collect();
        b.push(line(format!("Path: {}", numbered.join(" -> "))));
    }
    b.push(bounds(c));
    section(&mut b, "Configure", configure(c));
    let mut unknown: Vec<&String> = Vec::new();
    for u in c.transports.iter().flat_map(|tc| tc.unknown.iter()) {
        if !unknown.contains(&u) {
            unknown.push(u);
        }
    }
    section(
        &mut b,
        "Not documented (declare with --override HOP.FIELD=DUR, or measure with probe)",
        unknown.into_iter().map(|u| line(u.as_str())).collect(),
    );
    section(
        &mut b,
        "Server side (its links to Redis or a backend)",
        server_side(c),
    );
    let mut notes = vec![line(format!("SSE and HTTP/2: {}.", c.sse_http2))];
    notes.extend(c.warnings.iter().map(|w| line(w.as_str())));
    notes.extend(
        c.reloads
            .iter()
            .map(|r| line(format!("{} on reload: {}", r.hop, r.setting))),
    );
    notes.push(line(format!("Rule: {}.", c.heartbeat_rule)));
    section(&mut b, "Notes", notes);
    let server_hops = c.backend_links.iter().flat_map(|l| l.hops.iter());
    let sources = c
        .path
        .iter()
        .chain(server_hops)
        .filter_map(|id| crate::hops::get(id))
        .flat_map(|h| {
            h.sources
                .iter()
                .map(move |s| line(format!("{} (read {}): {}", h.id, s.read, s.url)))
        })
        .collect();
    section(&mut b, "Sources", sources);
    Ok(Doc {
        title: "rtcheck hops --path".into(),
        verdict: Verdict {
            text: vec![t(c.verdict())],
            tone: Tone::Plain,
        },
        blocks: b,
        json: crate::report::json::render(c)?,
    })
}

fn section(b: &mut Vec<Block>, title: &str, blocks: Vec<Block>) {
    if !blocks.is_empty() {
        b.push(Block::Section(title.into()));
        b.extend(blocks);
    }
}

/// Per transport: the binding idle, lifetime and first-byte limits (with the hop's number
/// on the path) and the heartbeat that survives them.
fn bounds(c: &Chain) -> Block {
    let rows = c
        .transports
        .iter()
        .map(|tc| {
            let hb = match (tc.excluded, tc.heartbeat_max_s) {
                (true, _) => "excluded".to_string(),
                (false, Some(m)) => format!("<= {m}s"),
                (false, None) => "-".to_string(),
            };
            Row {
                key: Some(tc.transport.clone()),
                cells: vec![
                    t(&tc.transport),
                    t(bound(&tc.idle, &c.path)),
                    t(bound(&tc.lifetime, &c.path)),
                    t(bound(&tc.first_byte, &c.path)),
                    t(hb),
                ],
            }
        })
        .collect();
    Block::Table(Table {
        id: "chain".into(),
        columns: ["transport", "idle", "lifetime", "first byte", "heartbeat"]
            .map(Column::text)
            .to_vec(),
        rows,
    })
}

/// One entry per server-side link: its hops, the tightest idle limit and the keepalive
/// that survives it.
fn server_side(c: &Chain) -> Vec<Block> {
    let mut out = Vec::new();
    for l in &c.backend_links {
        out.push(line(format!("{} link: {}", l.side, l.hops.join(" -> "))));
        let reset = l.reset_by.join(", ");
        out.push(line(match (&l.idle, l.keepalive_max_s) {
            (Some(b), Some(k)) => format!(
                "idle limit {} ({}), reset by {reset}: TCP keepalive or a PING every {k} s or less",
                show_secs(b.secs),
                b.hop,
            ),
            (Some(b), None) => format!(
                "idle limit {} ({}), reset by {reset}: only traffic keeps it open",
                show_secs(b.secs),
                b.hop,
            ),
            (None, _) => "no documented idle limit".to_string(),
        }));
        out.extend(
            l.unknown
                .iter()
                .map(|u| line(format!("not documented: {u}"))),
        );
    }
    out
}

/// What to configure, one entry per hop and setting with the transports it concerns (the
/// setting on its own lines, wrapped only between whole directives, so it can be copied).
fn configure(c: &Chain) -> Vec<Block> {
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
        .flat_map(|(hop, what, set, ts)| {
            [
                para(vec![
                    strong(hop),
                    t(format!(" ({}): {what}", ts.join(", "))),
                ]),
                setting("", &set),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::doc;
    use crate::report::Palette;

    #[test]
    fn a_chain_reads_its_verdict_bounds_and_settings_in_both_formats() {
        let ids: Vec<String> = ["cloudflare", "aws-alb", "nginx"]
            .map(String::from)
            .to_vec();
        let c = crate::hops::chain::compute(&ids, &Default::default()).unwrap();
        let d = chain_doc(&c).unwrap();
        let text = doc::text::render(&d, &Palette::plain());
        assert!(text.starts_with("A server heartbeat every"), "{text}");
        assert!(text.contains("[2] aws-alb"), "{text}");
        assert!(text.contains("proxy_buffering off"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        let md = doc::markdown::render(&d);
        assert!(md.contains("| transport | idle |"), "{md}");
        assert!(md.contains("`proxy_buffering off"), "{md}");
    }

    #[test]
    fn one_hop_keeps_its_settings_and_sources() {
        let h = crate::hops::get("aws-alb").unwrap();
        let text = doc::text::render(&one_doc(h).unwrap(), &Palette::plain());
        assert!(text.starts_with("aws-alb: "), "{text}");
        assert!(text.contains("idle_timeout.timeout_seconds"), "{text}");
        assert!(text.contains("https://docs.aws.amazon.com/"), "{text}");
        let all = crate::hops::catalog();
        let md = doc::markdown::render(&list_doc(all).unwrap());
        assert!(md.contains("| id | idle (ws / sse) |"), "{md}");
        assert!(md.contains("**aws-alb** ("), "{md}");
    }
}
