//! HTML: one self-contained page per report (inline CSS, inline SVG plots drawn with
//! plotters, no script, no request to any network), one module per report kind:
//! `card` (a finding's card, shared); every kind (audit, lint, review, verify, probe,
//! `budget`, `choose`, `rehearse`, `bench idle`, `bench fanout`, `bench cluster`, `load`,
//! `verify delivery`) is a `report::doc::Doc`, drawn by `report::doc::html`. The page also
//! carries the report's JSON (the `json` renderer's output) in an inert data block, so the
//! numbers on the page and the machine data travel together.
pub mod card;
pub(crate) mod plot;

use crate::evidence::EvidenceRef;
use crate::findings::Status;

/// No script, no fetch: only inline styles and data: images may load.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

const STYLE: &str = "
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1100px;padding:0 1em;color:#1d1d1f}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
h3{font-size:1.05em;margin:1.2em 0 .3em}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ddd;padding:.25em .55em;vertical-align:top}
th{background:#f4f4f6;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
.status{display:inline-block;min-width:3.2em;text-align:center;border-radius:3px;padding:0 .4em;font-weight:600;color:#fff}
.s-pass{background:#1a7f37}.s-warn{background:#b86e00}.s-fail{background:#c62828}.s-skip{background:#777}
.verdict{font-size:1.1em;padding:.5em .8em;border-left:6px solid #1a7f37;background:#f3faf4}
.verdict.bad{border-color:#c62828;background:#fdf1f1}.verdict.warn{border-color:#b86e00;background:#fff8ec}
tr.invalid td,.invalid{background:repeating-linear-gradient(45deg,#fdf1f1,#fdf1f1 6px,#f8e0e0 6px,#f8e0e0 12px);color:#8a1c1c}
div.invalid{padding:.5em .8em;border:1px solid #e0b4b4;margin:.5em 0}
.card{border:1px solid #ddd;border-left:6px solid #777;padding:.4em .9em;margin:.8em 0}
.card.pass{border-left-color:#1a7f37}.card.warn{border-left-color:#b86e00}.card.fail{border-left-color:#c62828}
figure.plot{display:inline-block;margin:.4em .6em .4em 0;vertical-align:top}figcaption{font-size:.9em;color:#555;max-width:500px}
.plots{display:flex;flex-wrap:wrap}pre{background:#f6f6f8;padding:.4em .6em;overflow-x:auto;margin:.3em 0}
.dim{color:#666}ul{margin:.3em 0}
tr.knee td{background:#fff8ec;font-weight:600}.wide{overflow-x:auto}table.compact{font-size:.88em}table.compact td,table.compact th{padding:.2em .4em}tr.verdict-row td{border-top:0;color:#444;font-size:.92em}";

/// Escape text for HTML content and attribute values; control characters become
/// visible escapes ([`crate::report::plain`]), so a raw page in a log starts no line.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in crate::report::plain(s).chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// The page shell: title, the verdict first, the body, and the report's JSON.
pub fn page(title: &str, verdict: &str, verdict_class: &str, body: &str, json: &str) -> String {
    // `</` inside a script element would end it; `<\/` is the same JSON string.
    let data = json.replace("</", "<\\/");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<title>{t}</title>\n<style>{STYLE}</style></head>\n<body>\n<h1>{t}</h1>\n\
<p class=\"verdict {verdict_class}\" id=\"verdict\">{v}</p>\n{body}\n\
<script type=\"application/json\" id=\"report-json\">{data}</script>\n</body></html>\n",
        t = esc(title),
        v = esc(verdict),
    )
}

/// A number as shown, tagged with its path in the report's JSON (`a.0.b`) so a reader (or a
/// test) can find the machine value it came from.
pub fn num(path: &str, shown: &str) -> String {
    format!(
        "<span class=\"num\" data-path=\"{}\">{}</span>",
        esc(path),
        esc(shown)
    )
}

/// Milliseconds as shown on the page: 3 significant figures below 100, whole above.
pub fn fmt_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

pub fn status(st: Status) -> String {
    format!("<span class=\"status s-{s}\">{s}</span>", s = st.as_str())
}

/// Evidence references as a list: id, value, claim, source.
pub fn evidence_list(refs: &[EvidenceRef]) -> String {
    if refs.is_empty() {
        return String::new();
    }
    let items: String = refs
        .iter()
        .map(|e| {
            format!(
                "<li><b>{}</b>: {} ({}) <span class=\"dim\">{}</span></li>",
                esc(&e.id),
                esc(&e.value),
                esc(&e.claim),
                esc(&e.source)
            )
        })
        .collect();
    format!("<ul class=\"evidence\">{items}</ul>")
}

/// A list of notes, or nothing.
/// A validity check list, folded away: the verdict above already says what failed.
pub fn checks(checks: &[crate::bench::model::Check]) -> String {
    let rows: String = checks
        .iter()
        .map(|c| {
            format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                status(c.status),
                esc(&c.name),
                esc(&c.detail)
            )
        })
        .collect();
    format!("<details><summary>checks</summary><table class=\"checks\">{rows}</table></details>\n")
}

pub fn notes(v: &[String]) -> String {
    if v.is_empty() {
        return String::new();
    }
    let items: String = v.iter().map(|n| format!("<li>{}</li>", esc(n))).collect();
    format!("<ul class=\"notes\">{items}</ul>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_has_the_csp_and_escapes_its_data() {
        let p = page("a<b", "ok", "", "<p>x</p>", r#"{"s":"</script><x>"}"#);
        assert!(p.contains(CSP));
        assert!(p.contains("<title>a&lt;b</title>"));
        assert!(!p.contains("</script><x>"));
        assert!(p.contains(r#"{"s":"<\/script><x>"}"#));
        assert_eq!(esc(r#"<&"'>"#), "&lt;&amp;&quot;&#39;&gt;");
        assert_eq!(fmt_ms(1.234), "1.23");
        assert_eq!(fmt_ms(12.34), "12.3");
        assert_eq!(fmt_ms(1234.6), "1235");
    }
}
