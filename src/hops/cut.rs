//! The hops whose documented (or declared) idle or lifetime limit matches a connection
//! cut a probe measured (pure).
use super::chain::Overrides;
use super::{catalog, LimitKind};
use rtcheck_wire::transport::Transport;
use serde::Serialize;
use std::time::Duration;

/// A hop whose documented limit matches a measured cut.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CutMatch {
    pub hop: String,
    pub name: String,
    pub kind: LimitKind,
    /// The documented default (0 when the documentation gives none: see `declared_s`).
    pub default_s: u64,
    /// The value declared for this hop (profile `path:` or `--override`), when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declared_s: Option<u64>,
    pub setting: String,
}

impl CutMatch {
    /// "AWS Application Load Balancer idle limit (default 60 s); change: ...", or with a
    /// declared value "NGINX idle limit (declared 4 s; default 60 s); change: ...".
    pub fn describe(&self) -> String {
        let default = match self.default_s {
            0 => "no documented default".to_string(),
            d => format!("default {d} s"),
        };
        let value = match self.declared_s {
            Some(d) => format!("declared {d} s; {default}"),
            None => default,
        };
        format!(
            "{} {} limit ({value}); change: {}",
            self.name,
            self.kind.name(),
            self.setting
        )
    }
}

/// The hops whose documented idle or lifetime default matches a connection cut measured
/// after `measured` of silence (for probe): within 10 % or 2 s, whichever is wider. Only the
/// hops of `path` when one is declared, every hop otherwise; closest first.
pub fn matching_cut(path: &[String], measured: Duration, t: Transport) -> Vec<CutMatch> {
    matching_cut_with(path, &Overrides::new(), measured, t)
}

/// [`matching_cut`] with the values declared for the path's hops (`overrides`) in place of
/// their documented defaults: a hop configured to 4 s matches a 4 s cut, not its 60 s
/// default.
pub fn matching_cut_with(
    path: &[String],
    overrides: &Overrides,
    measured: Duration,
    t: Transport,
) -> Vec<CutMatch> {
    let m = measured.as_secs_f64();
    let tolerance = (m * 0.1).max(2.0);
    let mut out: Vec<(f64, CutMatch)> = catalog()
        .iter()
        .filter(|h| path.is_empty() || path.contains(&h.id))
        .flat_map(|h| {
            [LimitKind::Idle, LimitKind::Lifetime]
                .into_iter()
                .flat_map(move |k| h.limits(k, t).map(move |l| (h, k, l)))
        })
        .filter_map(|(h, k, l)| {
            let declared = overrides
                .get(&h.id)
                .and_then(|o| o.get(k))
                .map(|d| d.as_secs());
            let d = declared.or(l.default.secs())?;
            let off = (d as f64 - m).abs();
            // Ties (two hops documenting the same value) in path order.
            let at = path.iter().position(|p| *p == h.id).unwrap_or(0) as f64;
            (off <= tolerance).then(|| {
                let cm = CutMatch {
                    hop: h.id.clone(),
                    name: h.name.clone(),
                    kind: k,
                    default_s: l.default.secs().unwrap_or(0),
                    declared_s: declared,
                    setting: l.setting.clone(),
                };
                (off + at * 1e-6, cm)
            })
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out.into_iter().map(|(_, c)| c).collect()
}

/// Hops that forget an idle flow without telling either end: layer-4 NATs, conntrack
/// and IPVS tables, layer-4 balancers (a proxy closes with FIN or a close frame).
pub fn forgets_silently(h: &super::Hop) -> bool {
    h.layer == "l4" && matches!(h.kind.as_str(), "nat" | "service-proxy" | "l4-lb")
}

/// The hops of `path` that may have forgotten a connection found dead after `within` of
/// silence: a silent cutter whose idle limit (declared, else documented) is at most that
/// (within 10 % or 2 s), shortest first: the first to forget. A silent cutter whose
/// limit is undocumented and undeclared comes last (`default_s` 0, no `declared_s`).
pub fn silent_cutters(
    path: &[String],
    overrides: &Overrides,
    within: Duration,
    t: Transport,
) -> Vec<CutMatch> {
    let m = within.as_secs_f64();
    let tolerance = (m * 0.1).max(2.0);
    let mut out: Vec<(f64, CutMatch)> = path
        .iter()
        .filter_map(|id| catalog().iter().find(|h| h.id == *id))
        .filter(|h| forgets_silently(h))
        .flat_map(|h| h.limits(LimitKind::Idle, t).map(move |l| (h, l)))
        .filter_map(|(h, l)| {
            let declared = overrides
                .get(&h.id)
                .and_then(|o| o.get(LimitKind::Idle))
                .map(|d| d.as_secs());
            let value = declared.or(l.default.secs());
            // Unknown sorts after every known limit.
            let key = value.map_or(f64::MAX, |v| v as f64);
            (key == f64::MAX || key <= m + tolerance).then(|| {
                let cm = CutMatch {
                    hop: h.id.clone(),
                    name: h.name.clone(),
                    kind: LimitKind::Idle,
                    default_s: l.default.secs().unwrap_or(0),
                    declared_s: declared,
                    setting: l.setting.clone(),
                };
                (key, cm)
            })
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out.into_iter().map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hops::chain;

    #[test]
    fn a_measured_cut_names_the_hop_whose_default_matches() {
        let ws = Transport::Websocket;
        let path: Vec<String> = ["cloudflare", "aws-alb", "nginx"]
            .map(String::from)
            .to_vec();
        let m = matching_cut(&path, Duration::from_millis(60_400), ws);
        let hops: Vec<&str> = m.iter().map(|c| c.hop.as_str()).collect();
        assert_eq!(hops, ["aws-alb", "nginx"], "both document 60 s");
        assert!(
            m[0].describe().contains("default 60 s"),
            "{}",
            m[0].describe()
        );
        assert!(m[0].describe().contains("idle_timeout.timeout_seconds"));
        let m = matching_cut(&path, Duration::from_secs(101), ws);
        assert_eq!(m[0].hop, "cloudflare");
        assert!(matching_cut(&path, Duration::from_secs(200), ws).is_empty());
        // No path declared: every hop is a candidate (Heroku's 55 s).
        assert_eq!(
            matching_cut(&[], Duration::from_secs(55), ws)[0].hop,
            "heroku"
        );
        // A lifetime cap matches too (GCP's 30 s backend timeout).
        let m = matching_cut(&["gcp-alb".into()], Duration::from_secs(30), ws);
        assert_eq!(
            (m[0].hop.as_str(), m[0].kind),
            ("gcp-alb", LimitKind::Lifetime)
        );
    }

    #[test]
    fn a_declared_value_replaces_the_default_in_the_match() {
        let ws = Transport::Websocket;
        let mut over = chain::Overrides::new();
        chain::parse_override("nginx.idle=4s", &mut over).unwrap();
        chain::parse_override("haproxy.idle=4s", &mut over).unwrap();
        let nginx = ["nginx".to_string()];
        let m = matching_cut_with(&nginx, &over, Duration::from_millis(4_100), ws);
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!((m[0].declared_s, m[0].default_s), (Some(4), 60));
        let d = m[0].describe();
        assert!(d.contains("declared 4 s; default 60 s"), "{d}");
        assert!(d.contains("proxy_read_timeout"), "{d}");
        // Declared, the documented 60 s no longer matches a 60 s cut.
        assert!(matching_cut_with(&nginx, &over, Duration::from_secs(60), ws).is_empty());
        // HAProxy documents no default: only the declared value can match.
        let ha = ["haproxy".to_string()];
        assert!(matching_cut(&ha, Duration::from_secs(4), ws).is_empty());
        let m = matching_cut_with(&ha, &over, Duration::from_secs(4), ws);
        assert!(m[0]
            .describe()
            .contains("declared 4 s; no documented default"));
        assert!(m[0].setting.contains("timeout tunnel"), "{m:?}");
    }

    #[test]
    fn a_nat_or_tunnel_cut_is_attributed_by_its_time() {
        let ws = Transport::Websocket;
        let path: Vec<String> = [
            "cloudflare-tunnel",
            "kube-proxy-ipvs",
            "redis:aws-nat-gateway",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            matching_cut(&path, Duration::from_secs(271), ws)[0].hop,
            "cloudflare-tunnel"
        );
        assert_eq!(
            matching_cut(&path, Duration::from_secs(905), ws)[0].hop,
            "kube-proxy-ipvs"
        );
        // The Redis link's NAT does not cut the users' connections.
        assert!(matching_cut(&path, Duration::from_secs(350), ws).is_empty());
        let m = matching_cut(&["azure-nat-gateway".into()], Duration::from_secs(241), ws);
        assert_eq!(m[0].hop, "azure-nat-gateway");
    }

    #[test]
    fn a_silent_cut_names_the_path_s_silent_cutters_within_the_silence() {
        let ws = Transport::Websocket;
        let path: Vec<String> = ["nginx", "kube-proxy-iptables", "aws-nat-gateway", "cgnat"]
            .map(String::from)
            .to_vec();
        let none = Overrides::new();
        // 400 s: the NAT gateway's 350 s; kube-proxy's 24 h not yet; cgnat unknown, last;
        // nginx closes with FIN, never silently.
        let m = silent_cutters(&path, &none, Duration::from_secs(400), ws);
        let hops: Vec<&str> = m.iter().map(|c| c.hop.as_str()).collect();
        assert_eq!(hops, ["aws-nat-gateway", "cgnat"]);
        // A declared 5 s conntrack timeout is the first to forget an 8 s silence.
        let mut o = Overrides::new();
        chain::parse_override("kube-proxy-iptables.idle=5s", &mut o).unwrap();
        let m = silent_cutters(&path, &o, Duration::from_secs(8), ws);
        assert_eq!(m[0].hop, "kube-proxy-iptables");
        assert_eq!(m[0].declared_s, Some(5));
        assert!(silent_cutters(&["nginx".into()], &none, Duration::from_secs(8), ws).is_empty());
    }
}
