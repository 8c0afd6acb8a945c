//! Prometheus text exposition (format 0.0.4), written once: a family's `# HELP` and
//! `# TYPE` lines, its samples with escaped labels, and helpers for a single gauge or
//! counter, a labelled family and a histogram. The embedded server's `/metrics` and the
//! reports' `--report prometheus` both write through it.
use std::fmt::Write;

/// The exposition format's content type (version 0.0.4, what node_exporter serves).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A metric family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Counter,
    Histogram,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
            Kind::Histogram => "histogram",
        }
    }
}

/// A sample's value, written as Prometheus reads it.
pub trait Value {
    fn write_to(&self, out: &mut String);
}

impl Value for u64 {
    fn write_to(&self, out: &mut String) {
        let _ = write!(out, "{self}");
    }
}

impl Value for usize {
    fn write_to(&self, out: &mut String) {
        let _ = write!(out, "{self}");
    }
}

impl Value for u8 {
    fn write_to(&self, out: &mut String) {
        let _ = write!(out, "{self}");
    }
}

impl Value for f64 {
    fn write_to(&self, out: &mut String) {
        out.push_str(&number(*self));
    }
}

/// A float as Prometheus reads it (NaN and infinities spelled its way).
pub fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// A label value escaped as the exposition format wants (`\`, `"`, newline).
pub fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// An exposition being written; [`Exposition::finish`] gives the text.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
}

impl Exposition {
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// A family's head: `# HELP` and `# TYPE`. Its samples follow.
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) -> &mut Self {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {}", kind.name());
        self
    }

    /// One sample: `name{k="v",...} value` (no braces without labels), labels in order.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], v: impl Value) -> &mut Self {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape(v));
            }
            self.out.push('}');
        }
        self.out.push(' ');
        v.write_to(&mut self.out);
        self.out.push('\n');
        self
    }

    /// A family of one unlabelled sample.
    pub fn single(&mut self, name: &str, kind: Kind, help: &str, v: impl Value) -> &mut Self {
        self.family(name, kind, help).sample(name, &[], v)
    }

    pub fn gauge(&mut self, name: &str, help: &str, v: impl Value) -> &mut Self {
        self.single(name, Kind::Gauge, help, v)
    }

    pub fn counter(&mut self, name: &str, help: &str, v: impl Value) -> &mut Self {
        self.single(name, Kind::Counter, help, v)
    }

    /// A family with one label: a sample per `(label value, value)`, in order.
    pub fn by_label<V: Value + Copy>(
        &mut self,
        name: &str,
        kind: Kind,
        help: &str,
        label: &str,
        rows: &[(&str, V)],
    ) -> &mut Self {
        self.family(name, kind, help);
        for (l, v) in rows {
            self.sample(name, &[(label, l)], *v);
        }
        self
    }

    /// A histogram: cumulative `(upper bound, count)` buckets, then `+Inf`, sum and count.
    pub fn histogram(
        &mut self,
        name: &str,
        help: &str,
        buckets: &[(f64, u64)],
        count: u64,
        sum: f64,
    ) -> &mut Self {
        self.family(name, Kind::Histogram, help);
        let bucket = format!("{name}_bucket");
        for (le, n) in buckets {
            self.sample(&bucket, &[("le", &number(*le))], *n);
        }
        self.sample(&bucket, &[("le", "+Inf")], count);
        self.sample(&format!("{name}_sum"), &[], sum);
        self.sample(&format!("{name}_count"), &[], count)
    }

    pub fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_samples_and_escapes() {
        let mut p = Exposition::new();
        p.gauge("up", "Whether it is up.", 1u64);
        p.family("x", Kind::Counter, "Xs.")
            .sample("x", &[("a", "q\"uo\\te\nd"), ("b", "2")], 0.5);
        p.by_label(
            "t",
            Kind::Gauge,
            "Ts.",
            "transport",
            &[("ws", 3u64), ("sse", 4)],
        );
        assert_eq!(
            p.finish(),
            concat!(
                "# HELP up Whether it is up.\n# TYPE up gauge\nup 1\n",
                "# HELP x Xs.\n# TYPE x counter\nx{a=\"q\\\"uo\\\\te\\nd\",b=\"2\"} 0.5\n",
                "# HELP t Ts.\n# TYPE t gauge\nt{transport=\"ws\"} 3\nt{transport=\"sse\"} 4\n",
            )
        );
    }

    #[test]
    fn a_histogram_ends_with_inf_sum_and_count() {
        let mut p = Exposition::new();
        p.histogram("h_seconds", "H.", &[(0.0005, 1), (0.25, 7)], 7, 0.0045);
        assert_eq!(
            p.finish(),
            concat!(
                "# HELP h_seconds H.\n# TYPE h_seconds histogram\n",
                "h_seconds_bucket{le=\"0.0005\"} 1\nh_seconds_bucket{le=\"0.25\"} 7\n",
                "h_seconds_bucket{le=\"+Inf\"} 7\nh_seconds_sum 0.0045\nh_seconds_count 7\n",
            )
        );
    }

    #[test]
    fn floats_are_spelled_the_prometheus_way() {
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(f64::NEG_INFINITY), "-Inf");
        assert_eq!((number(1.25), number(2.0)), ("1.25".into(), "2".into()));
    }
}
