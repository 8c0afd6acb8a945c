//! markdown rendering of `rtcheck hops`: the catalogue with sources (docs/hops.md) and a
//! path's chain.
use super::evidence::cell;
use crate::hops::chain::Chain;
use crate::hops::{Hop, LimitKind};
use rtcheck_wire::transport::Transport;

fn limit(h: &Hop, kind: LimitKind, t: Transport) -> String {
    h.limits(kind, t)
        .map(|l| l.default.short())
        .next()
        .unwrap_or_else(|| "-".into())
}

pub fn list(all: &[Hop]) -> String {
    let mut s = String::from(
        "| id | name | idle (ws / sse) | lifetime (ws / sse) | first byte | SSE | WebSocket | sources |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for h in all {
        let (ws, sse) = (Transport::Websocket, Transport::Sse);
        let sources = h
            .sources
            .iter()
            .map(|s| format!("<{}> ({})", s.url, s.read))
            .collect::<Vec<_>>()
            .join("<br>");
        s.push_str(&format!(
            "| `{}` | {} | {} / {} | {} / {} | {} | {} | {} | {} |\n",
            h.id,
            cell(&h.name),
            limit(h, LimitKind::Idle, ws),
            limit(h, LimitKind::Idle, sse),
            limit(h, LimitKind::Lifetime, ws),
            limit(h, LimitKind::Lifetime, sse),
            limit(h, LimitKind::FirstByte, sse),
            h.sse.as_str(),
            h.websocket.as_str(),
            sources
        ));
    }
    s
}

pub fn one(h: &Hop) -> String {
    let mut s = format!("## `{}`: {}\n\n", h.id, h.name);
    s.push_str("| limit | applies to | default | range | reset by | setting | note |\n|---|---|---|---|---|---|---|\n");
    for l in &h.limits {
        let applies: Vec<&str> = l.applies_to.iter().map(|t| t.name()).collect();
        let range = match (l.min, l.max) {
            (Some(a), Some(b)) => format!("{a} to {b}"),
            _ if l.adjustable => "adjustable".into(),
            _ => "fixed".into(),
        };
        let reset: Vec<&str> = l.reset_by.iter().map(|r| r.as_str()).collect();
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | `{}` | {} |\n",
            l.kind.name(),
            applies.join(", "),
            l.default,
            range,
            reset.join(", "),
            cell(&l.setting),
            cell(l.note.as_deref().unwrap_or(""))
        ));
    }
    s.push_str(&format!("\n- Reload: {}\n", h.reload));
    for n in &h.notes {
        s.push_str(&format!("- {n}\n"));
    }
    for src in &h.sources {
        s.push_str(&format!("- Source: <{}> (read {})\n", src.url, src.read));
    }
    s
}

pub fn chain(c: &Chain) -> String {
    let mut s = format!("{}\n\n", c.verdict());
    s.push_str("| transport | idle | reset by | lifetime | first byte | heartbeat max |\n|---|---|---|---|---|---|\n");
    let b = |b: &Option<crate::hops::chain::Bound>| {
        b.as_ref()
            .map(|b| format!("{} s (`{}`)", b.secs, b.hop))
            .unwrap_or_else(|| "none".into())
    };
    for tc in &c.transports {
        s.push_str(&format!(
            "| {}{} | {} | {} | {} | {} | {} |\n",
            tc.transport,
            if tc.excluded { " (excluded)" } else { "" },
            b(&tc.idle),
            tc.reset_by.join(", "),
            b(&tc.lifetime),
            b(&tc.first_byte),
            tc.heartbeat_max_s
                .map(|m| format!("{m} s"))
                .unwrap_or_else(|| "-".into())
        ));
    }
    s.push_str(&format!(
        "\n- SSE and HTTP/2: {}\n- Rule: {}\n",
        c.sse_http2, c.heartbeat_rule
    ));
    for tc in &c.transports {
        for r in &tc.required {
            s.push_str(&format!(
                "- `{}` ({}): {}: `{}`\n",
                r.hop, tc.transport, r.what, r.setting
            ));
        }
    }
    for l in &c.backend_links {
        let idle = l
            .idle
            .as_ref()
            .map(|b| format!("idle {} s (`{}`)", b.secs, b.hop))
            .unwrap_or_else(|| "no documented idle limit".into());
        let keep = l
            .keepalive_max_s
            .map(|k| format!(", keepalive every {k} s or less"))
            .unwrap_or_default();
        s.push_str(&format!(
            "- server side, {} link: {}: {idle}{keep}\n",
            l.side,
            l.hops.join(" -> ")
        ));
    }
    s
}
