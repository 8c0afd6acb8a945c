//! markdown rendering of choose results.
use crate::choose::Recommendation;
use crate::evidence::fmt_num;
use crate::report::markdown::evidence::cell;
use rtcheck_base::units::fmt_bytes;

pub fn render(r: &Recommendation) -> String {
    let mut s = format!(
        "## rtcheck choose: {} + {} + {}\n\n| question | answer | decision | evidence |\n|---|---|---|---|\n",
        r.transport.name(),
        r.delivery.name(),
        r.topology.as_str()
    );
    for q in &r.reasons {
        let ev: Vec<String> = q
            .evidence
            .iter()
            .map(|e| format!("`{}` {}", e.id, e.value))
            .collect();
        s.push_str(&format!(
            "| **{}** {} | {} | **{}**<br>{} | {} |\n",
            q.id.to_uppercase(),
            cell(&q.question),
            cell(&q.answer),
            cell(&q.decision),
            cell(&q.detail),
            cell(&ev.join("<br>"))
        ));
    }
    if !r.alternatives.is_empty() {
        s.push_str("\n### Polling or push\n\n| option | recommended | delivery p50 | idle bytes/client-min | requests/s | open connections |\n|---|---|---|---|---|---|\n");
        for a in &r.alternatives {
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                a.label,
                if a.recommended { "yes" } else { "" },
                crate::choose::decide::fmt_ms(a.delivery_p50_ms),
                fmt_bytes(a.idle_bytes_per_client_minute),
                fmt_num(a.requests_per_s.round()),
                fmt_num(a.open_connections as f64)
            ));
        }
    }
    let z = &r.sizing;
    s.push_str(&format!(
        "\n### Sizing\n\n| figure | bytes | |\n|---|---|---|\n\
         | ring buffer (seq-ring) | {} | max disconnect x rate x size |\n\
         | session per disconnected client (session-ack) | {} | same product, per client |\n\
         | all {} sessions at once | {} | reference: {} clients = {} |\n\
         | sessions per machine | {} | {} |\n\
         | RAM per machine ({} connections) | {} | {} per connection: {} |\n",
        crate::choose::sizing::fmt_figure(z.ring_bytes, z.is_saturated("ring_bytes")),
        crate::choose::sizing::fmt_figure(
            z.session_bytes_per_client,
            z.is_saturated("session_bytes_per_client")
        ),
        fmt_num(r.profile.connections as f64),
        crate::choose::sizing::fmt_figure(
            z.sessions_worst_case_bytes,
            z.is_saturated("sessions_worst_case_bytes")
        ),
        fmt_num(crate::evidence::num("session-expiry", "clients")),
        fmt_bytes(crate::evidence::num("session-expiry", "bytes") as u64),
        crate::choose::sizing::fmt_figure(
            z.sessions_per_machine_bytes,
            z.is_saturated("sessions_per_machine_bytes")
        ),
        if z.durable_inbox {
            format!(
                "past the {} budget: a durable inbox",
                crate::choose::sizing::fmt_budget(z.session_budget_bytes)
            )
        } else {
            format!(
                "within the {} budget",
                crate::choose::sizing::fmt_budget(z.session_budget_bytes)
            )
        },
        fmt_num(z.connections_per_machine as f64),
        crate::choose::sizing::fmt_figure(
            z.ram_bytes_per_machine,
            z.is_saturated("ram_bytes_per_machine")
        ),
        fmt_bytes(z.per_connection_bytes),
        if z.per_connection_source.is_empty() {
            crate::choose::sizing::seed_source()
        } else {
            z.per_connection_source.clone()
        }
    ));
    s.push_str(
        "\n### Six must-haves\n\n| must-have | applies | why | evidence |\n|---|---|---|---|\n",
    );
    for m in &r.must_haves {
        let ev: Vec<String> = m
            .evidence
            .iter()
            .map(|e| format!("`{}` {}", e.id, e.value))
            .collect();
        s.push_str(&format!(
            "| `{}` {} | {} | {} | {} |\n",
            m.id,
            cell(&m.title),
            if m.applies { "yes" } else { "no (polling)" },
            cell(m.not_applicable.as_deref().unwrap_or(&m.why)),
            cell(&ev.join("<br>"))
        ));
    }
    if !r.findings.is_empty() {
        s.push_str("\n### Delivery measured (verify delivery)\n\n| status | id | observed |\n|---|---|---|\n");
        for f in &r.findings {
            s.push_str(&format!(
                "| {} | `{}` | {} |\n",
                f.status.as_str(),
                f.id,
                cell(&f.observed)
            ));
        }
    }
    if !r.notes.is_empty() {
        s.push_str("\n### Notes\n\n");
        for n in &r.notes {
            s.push_str(&format!("- {n}\n"));
        }
    }
    s
}
