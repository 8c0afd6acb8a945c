//! Saturation from a target's Prometheus text (pure): busy workers / in-flight requests,
//! the pool size and the queue length when the target exposes them.

/// One scrape: (busy, pool size, queue length) and the metric the busy count came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Scrape {
    pub metric: String,
    pub busy: f64,
    pub workers: Option<f64>,
    pub queue: Option<f64>,
}

fn value(text: &str, name: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let rest = l.strip_prefix(name)?;
        // `name value` or `name{labels} value`, not a longer name.
        let rest = match rest.chars().next()? {
            ' ' => rest,
            '{' => &rest[rest.find('}')? + 1..],
            _ => return None,
        };
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// rtcheck's own /work pool first, then common names for in-flight work.
const BUSY: &[&str] = &[
    "rtcheck_work_busy_workers",
    "http_server_requests_in_flight",
    "http_requests_in_flight",
    "in_flight_requests",
    "busy_workers",
];

pub fn parse(text: &str) -> Option<Scrape> {
    let metric = BUSY.iter().find(|m| value(text, m).is_some())?;
    Some(Scrape {
        metric: metric.to_string(),
        busy: value(text, metric)?,
        workers: value(text, "rtcheck_work_workers"),
        queue: value(text, "rtcheck_work_queue_length"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rtcheck_and_generic_metrics() {
        let t = "# HELP x\nrtcheck_work_workers 8\nrtcheck_work_busy_workers 6\nrtcheck_work_busy_workers_extra 1\nrtcheck_work_queue_length 3\n";
        let s = parse(t).unwrap();
        assert_eq!((s.busy, s.workers, s.queue), (6.0, Some(8.0), Some(3.0)));
        let s = parse("http_requests_in_flight{handler=\"/\"} 12\n").unwrap();
        assert_eq!(
            (s.metric.as_str(), s.busy),
            ("http_requests_in_flight", 12.0)
        );
        assert!(parse("process_cpu_seconds_total 3\n").is_none());
    }
}
