//! The host's TCP extension counters from /proc/net/netstat (`TcpExt:` header line, then
//! a value line): `ListenOverflows` (a SYN or final ACK found the accept queue full) and
//! `ListenDrops` (every connection dropped at listen time). Read before and after a
//! reconnect wave by `rehearse`; the parse is pure so fixtures test it.
use std::path::Path;

/// The two counters of one reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ListenCounters {
    pub overflows: u64,
    pub drops: u64,
}

/// Parse the file's text: the `TcpExt:` name line and the value line after it.
pub fn parse(text: &str) -> Result<ListenCounters, String> {
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        let Some(names) = l.strip_prefix("TcpExt:") else {
            continue;
        };
        let values = lines
            .next()
            .and_then(|v| v.strip_prefix("TcpExt:"))
            .ok_or("TcpExt: names without a value line")?;
        let pairs: Vec<(&str, &str)> = names
            .split_whitespace()
            .zip(values.split_whitespace())
            .collect();
        let get = |k: &str| -> Result<u64, String> {
            let v = pairs
                .iter()
                .find(|(n, _)| *n == k)
                .ok_or_else(|| format!("TcpExt: no {k}"))?;
            v.1.parse()
                .map_err(|_| format!("TcpExt: {k} is not a number: {:?}", v.1))
        };
        return Ok(ListenCounters {
            overflows: get("ListenOverflows")?,
            drops: get("ListenDrops")?,
        });
    }
    Err("no TcpExt: line".into())
}

/// Read `<procfs>/net/netstat` (the network namespace of this process).
pub fn read(procfs: &Path) -> Result<ListenCounters, String> {
    let p = procfs.join("net/netstat");
    let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", p.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_two_counters_by_name_in_any_column() {
        let t = "TcpExt: SyncookiesSent ListenDrops EmbryonicRsts ListenOverflows\n\
                 TcpExt: 0 17 3 12\n\
                 IpExt: InNoRoutes\nIpExt: 0\n";
        assert_eq!(
            parse(t),
            Ok(ListenCounters {
                overflows: 12,
                drops: 17
            })
        );
    }

    #[test]
    fn garbage_is_an_error_naming_what_is_missing() {
        assert!(parse("IpExt: A\nIpExt: 1\n")
            .unwrap_err()
            .contains("TcpExt"));
        let e = parse("TcpExt: ListenOverflows ListenDrops\nTcpExt: x 1\n").unwrap_err();
        assert!(e.contains("ListenOverflows"), "{e}");
        let e = parse("TcpExt: ListenOverflows\n").unwrap_err();
        assert!(e.contains("value line"), "{e}");
    }
}
