//! From what each client saw to the run's figures, pure: drain signals and their lead,
//! the outages of the wave, failed connects by cause, delivery by seq across epochs.
use super::client::{epoch_key as key, Cause, ClientOut, End};
use super::model::{Delivery, Drain};
use super::wave::Outage;
use crate::bench::seq_account::{self, Counts, Trace};
use std::collections::{BTreeMap, HashMap};

/// The nearest-rank p50 and the max.
fn p50_max(mut v: Vec<f64>) -> (Option<f64>, Option<f64>) {
    v.sort_by(f64::total_cmp);
    let p50 = (!v.is_empty()).then(|| v[(v.len() - 1) / 2]);
    (p50, v.last().copied())
}

/// The first drop of each client at or after `hook_ms`, and its first return after it.
pub fn outages(clients: &[ClientOut], hook_ms: f64) -> Vec<Outage> {
    clients
        .iter()
        .filter_map(|c| {
            let (at, _, _) = c.drops.iter().find(|d| d.0 >= hook_ms)?;
            Some(Outage {
                dropped_ms: *at,
                back_ms: c.backs.iter().copied().find(|b| b >= at),
            })
        })
        .collect()
}

/// How the first drop after the hook ended, over the clients; with a library protocol,
/// its close codes and its own closes named by the protocol's words; over HTTP/2 (`h2`),
/// the GOAWAYs that came before the end and how long before.
pub fn drain(
    clients: &[ClientOut],
    hook_ms: f64,
    app: Option<rtcheck_wire::appproto::AppProtocol>,
    h2: bool,
) -> Drain {
    let mut d = Drain {
        goaway: h2.then_some(0),
        ..Drain::default()
    };
    let mut leads = Vec::new();
    let mut goaway_leads = Vec::new();
    for c in clients {
        let Some((i, &(at, end, signal))) =
            c.drops.iter().enumerate().find(|(_, d)| d.0 >= hook_ms)
        else {
            continue;
        };
        if let (Some(n), Some(&g)) = (d.goaway.as_mut(), c.goaways.get(&i)) {
            *n += 1;
            goaway_leads.push((at - g).max(0.0));
        }
        if let Some(why) = named(end, c.reasons.get(&i), app) {
            *d.reasons.entry(why).or_default() += 1;
        }
        match end {
            End::Close(1001) => d.ws_1001 += 1,
            End::Close(1012) => d.ws_1012 += 1,
            End::Close(code) => {
                d.ws_other_close += 1;
                *d.other_codes.entry(code.to_string()).or_default() += 1;
            }
            End::AppClose => d.app_close += 1,
            End::SseEnd => d.sse_end += 1,
            End::Eof | End::Reset | End::Stopped => d.abrupt += 1,
        }
        if let (true, Some(s)) = (end.is_drain(), signal) {
            leads.push((at - s).max(0.0));
        }
    }
    (d.lead_p50_ms, d.lead_max_ms) = p50_max(leads);
    (d.goaway_lead_p50_ms, d.goaway_lead_max_ms) = p50_max(goaway_leads);
    d
}

/// A drop's reason in the protocol's words: its own close (`socketio: server
/// disconnect`), or a close code it defines (`forbidden (graphql-ws 4403)`).
fn named(
    end: End,
    reason: Option<&String>,
    app: Option<rtcheck_wire::appproto::AppProtocol>,
) -> Option<String> {
    let p = app?;
    match end {
        End::AppClose => Some(format!(
            "{}: {}",
            p.name(),
            reason.map_or("closed", String::as_str)
        )),
        // The protocol's words name the code already.
        End::Close(code) => p.close_reason(code).map(str::to_string),
        _ => None,
    }
}

/// Failed connects by cause: every key present, 0 when none.
pub fn failed(clients: &[ClientOut]) -> BTreeMap<String, u64> {
    let mut m: BTreeMap<String, u64> = Cause::ALL.iter().map(|c| (c.key().into(), 0)).collect();
    for c in clients {
        for (cause, n) in &c.failed {
            *m.entry(cause.key().into()).or_default() += n;
        }
    }
    m
}

/// Seqs a client still connected at the end may trail the others by (in flight when the
/// clients were stopped); more is a client that silently stopped receiving.
pub const IN_FLIGHT: u64 = 5;

/// Delivery by seq. Each epoch's span ends at the highest seq any client saw in it; in
/// a client's last epoch, connected at the end, it ends there less [`IN_FLIGHT`] (the
/// rest was in flight); still away at the end, at its own highest (`all-back` fails for
/// it, its loss is not delivery's). Later epochs start at 1: a new history owes its
/// client every seq; a reset marker announces the old epoch's tail as lost.
pub fn delivery(clients: &[ClientOut]) -> Delivery {
    let mut end: HashMap<String, u64> = HashMap::new();
    for c in clients {
        for (i, s) in c.segments.iter().enumerate() {
            let m = s.seqs.iter().copied().max().unwrap_or(0);
            let e = end.entry(key(&s.epoch, i)).or_insert(0);
            *e = (*e).max(m);
        }
    }
    let mut d = Delivery {
        epochs: end.len() as u64,
        ..Delivery::default()
    };
    for c in clients {
        d.replay_messages += c.replay_messages;
        d.replay_bytes += c.replay_bytes;
        d.replay_bytes_per_client_max = d.replay_bytes_per_client_max.max(c.replay_bytes);
        let segs: Vec<_> = c
            .segments
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.seqs.is_empty() || s.told)
            .collect();
        if segs.iter().all(|(_, s)| s.seqs.is_empty()) {
            d.clients_without_seq += 1;
            continue;
        }
        let mut sum = Counts::default();
        for (i, &(at, s)) in segs.iter().enumerate() {
            let last = i + 1 == segs.len();
            let got = s.seqs.iter().copied().max().unwrap_or(0);
            let epoch_end = end.get(&key(&s.epoch, at)).copied().unwrap_or(got);
            let hi = match (last, c.connected_at_end) {
                // Connected at the end: owed what the others saw, but the last few.
                (true, true) => got.max(epoch_end.saturating_sub(IN_FLIGHT)),
                (true, false) => got,
                (false, _) => epoch_end,
            };
            let mut gaps = s.gaps.clone();
            // The next segment opened with a reset marker: this epoch's tail was told.
            if segs.get(i + 1).is_some_and(|(_, n)| n.told) && got < hi {
                gaps.push((got + 1, hi));
            }
            let first = match i {
                0 => s.seqs.first().copied().unwrap_or(1),
                _ => 1,
            };
            sum.add(&seq_account::count(&Trace {
                seqs: s.seqs.clone(),
                gaps,
                first_expected: first,
                last_published: hi,
                resets: 0,
            }));
        }
        d.received += sum.received;
        d.lost += sum.lost;
        d.lost_silently += sum.lost_silently;
        d.duplicated += sum.duplicated;
        d.out_of_order += sum.out_of_order;
        d.clients_lost_silently += u64::from(sum.lost_silently > 0);
    }
    d
}

/// The seqs rtcheck's publisher failed to send that no client received: the hub never
/// took them, so no client is owed them (one a client got was taken after all). Sorted.
pub fn unowed(clients: &[ClientOut], failed: &[(u64, u64)]) -> Vec<u64> {
    let got = received(clients);
    let mut out = std::collections::BTreeSet::new();
    for &(a, b) in failed {
        out.extend((a..=b).filter(|s| !got.contains(s)));
    }
    out.into_iter().collect()
}

/// Over a WebSocket (nothing acknowledges a message) a write succeeds before the hub is
/// known gone: the sends just before each failed range (at most [`UNACKED`]) that no
/// client received went into a socket whose hub died, and whether the hub took them is
/// not known. They stay owed (a hub that took them and died lost them), and are
/// reported as their own count. Sorted; none of them is a failed seq.
pub fn unconfirmed(clients: &[ClientOut], failed: &[(u64, u64)]) -> Vec<u64> {
    let got = received(clients);
    let failed_seq = |s: u64| failed.iter().any(|&(a, b)| (a..=b).contains(&s));
    let mut out = std::collections::BTreeSet::new();
    for &(a, _) in failed {
        let before = (a.saturating_sub(UNACKED).max(1)..a).rev();
        out.extend(
            before
                .take_while(|s| !got.contains(s))
                .filter(|&s| !failed_seq(s)),
        );
    }
    out.into_iter().collect()
}

fn received(clients: &[ClientOut]) -> std::collections::HashSet<u64> {
    clients
        .iter()
        .flat_map(|c| c.segments.iter().flat_map(|s| s.seqs.iter().copied()))
        .collect()
}

/// Sends over a WebSocket before a failure that may have gone into a dead socket.
pub const UNACKED: u64 = 5;

/// Every seq less the unowed seqs below it: the publisher's numbering becomes that of
/// what the hub took, so an unowed seq leaves no hole to count as lost.
pub fn without_unowed(mut clients: Vec<ClientOut>, unowed: &[u64]) -> Vec<ClientOut> {
    if unowed.is_empty() {
        return clients;
    }
    let shift = |s: u64| s - unowed.partition_point(|&u| u < s) as u64;
    for seg in clients.iter_mut().flat_map(|c| c.segments.iter_mut()) {
        for s in &mut seg.seqs {
            *s = shift(*s);
        }
        for g in &mut seg.gaps {
            *g = (shift(g.0), shift(g.1));
        }
    }
    clients
}

#[cfg(test)]
mod tests {
    use super::super::client::Segment;
    use super::*;

    fn seg(epoch: &str, seqs: &[u64], told: bool) -> Segment {
        Segment {
            epoch: epoch.into(),
            seqs: seqs.to_vec(),
            gaps: vec![],
            told,
        }
    }

    fn client(segments: Vec<Segment>, at_end: bool) -> ClientOut {
        ClientOut {
            segments,
            connected_at_end: at_end,
            ..ClientOut::default()
        }
    }

    #[test]
    fn publishes_that_failed_while_the_hub_was_down_are_owed_to_no_client() {
        // Published 1..=10; 4..=6 failed (the hub down), yet a got 6 (taken after all).
        // a was back for 7; b came back late and missed 7 and 8 without a word.
        let a = client(vec![seg("", &[1, 2, 3, 6, 7, 8, 9, 10], false)], true);
        let b = client(vec![seg("", &[1, 2, 3, 9, 10], false)], true);
        let un = unowed(&[a.clone(), b.clone()], &[(4, 6)]);
        assert_eq!(un, vec![4, 5]);
        // Over a WebSocket, 3 was sent before 4 failed: a client got it, it was taken.
        assert!(unconfirmed(&[a.clone(), b.clone()], &[(4, 6)]).is_empty());
        // Had nobody got 2 and 3, whether the hub took them is not known: they stay
        // owed (not unowed), counted apart; never a failed seq.
        let c = client(vec![seg("", &[1, 7, 8], false)], true);
        assert_eq!(unowed(std::slice::from_ref(&c), &[(4, 6)]), vec![4, 5, 6]);
        assert_eq!(unconfirmed(std::slice::from_ref(&c), &[(4, 6)]), vec![2, 3]);
        assert_eq!(
            unconfirmed(std::slice::from_ref(&c), &[(2, 2), (4, 6)]),
            vec![3]
        );
        // Owed and missed by c: counted lost, not renumbered away.
        let cs = without_unowed(vec![c], &[4, 5, 6]);
        assert_eq!(cs[0].segments[0].seqs, vec![1, 4, 5]);
        let cs = without_unowed(vec![a, b], &un);
        assert_eq!(cs[0].segments[0].seqs, vec![1, 2, 3, 4, 5, 6, 7, 8]);
        let d = delivery(&cs);
        // b: 4 (the 6 taken), 5 and 6 (7 and 8 published) lost; nothing of 4..=5.
        assert_eq!((d.lost, d.lost_silently), (3, 3), "{d:?}");
        assert_eq!(d.clients_lost_silently, 1);
        // Nothing failed: nothing changes.
        let c = client(vec![seg("", &[1, 3], false)], true);
        assert_eq!(without_unowed(vec![c], &[])[0].segments[0].seqs, vec![1, 3]);
    }

    #[test]
    fn a_restart_with_a_reset_marker_and_a_full_replay_loses_nothing_silently() {
        // Old epoch: a saw 5..=10, b saw 5..=9 (10 was in flight when the server went).
        // New epoch: both told by a reset, replayed 1..=4 and live after.
        let a = client(
            vec![
                seg("a", &[5, 6, 7, 8, 9, 10], false),
                seg("b", &[1, 2, 3, 4], true),
            ],
            true,
        );
        let b = client(
            vec![
                seg("a", &[5, 6, 7, 8, 9], false),
                seg("b", &[1, 2, 3, 4], true),
            ],
            true,
        );
        let d = delivery(&[a, b]);
        assert_eq!(d.epochs, 2);
        assert_eq!((d.lost, d.lost_silently), (1, 0), "{d:?}");
        assert_eq!(d.received, 19);
    }

    #[test]
    fn a_new_epoch_without_a_marker_and_without_replay_loses_silently() {
        // The server restarted at 1; the client came back at 4 and was told nothing.
        let a = client(
            vec![seg("", &[1, 2, 3], false), seg("", &[4, 5], false)],
            true,
        );
        let other = client(
            vec![seg("", &[1, 2, 3], false), seg("", &[1, 2, 3, 4, 5], false)],
            true,
        );
        let d = delivery(&[a, other]);
        assert_eq!(d.lost_silently, 3, "{d:?}");
        assert_eq!(d.clients_lost_silently, 1);
        // A duplicate within an epoch is counted, an out-of-order seq too.
        let dup = client(vec![seg("", &[1, 2, 2, 4, 3], false)], true);
        let d = delivery(&[dup]);
        assert_eq!((d.duplicated, d.out_of_order, d.lost), (1, 1, 0));
    }

    #[test]
    fn a_connected_client_that_silently_stopped_receiving_counts_its_loss() {
        let all: Vec<u64> = (1..=100).collect();
        let full = client(vec![seg("", &all, false)], true);
        // Stopped receiving at 40 while still connected: 41..=95 lost silently.
        let stuck = client(vec![seg("", &all[..40], false)], true);
        let d = delivery(&[full.clone(), stuck]);
        assert_eq!(d.lost_silently, 100 - IN_FLIGHT - 40, "{d:?}");
        assert_eq!(d.clients_lost_silently, 1);
        // A few behind at the end: in flight, not lost.
        let behind = client(vec![seg("", &all[..97], false)], true);
        assert_eq!(delivery(&[full.clone(), behind]).lost, 0);
        // Still away at the end: all-back's, not delivery's.
        let away = client(vec![seg("", &all[..40], false)], false);
        assert_eq!(delivery(&[full, away]).lost, 0);
    }

    #[test]
    fn drains_and_outages_take_the_first_drop_after_the_hook() {
        let c = ClientOut {
            drops: vec![
                (50.0, End::Reset, None),
                (1000.0, End::Close(1001), Some(990.0)),
            ],
            backs: vec![60.0, 2500.0],
            ..ClientOut::default()
        };
        let e = ClientOut {
            drops: vec![(1100.0, End::Eof, None)],
            ..ClientOut::default()
        };
        let d = drain(&[c.clone(), e.clone()], 500.0, None, false);
        assert_eq!((d.ws_1001, d.abrupt, d.signalled()), (1, 1, 1));
        assert_eq!(d.lead_max_ms, Some(10.0));
        let o = outages(&[c, e], 500.0);
        assert_eq!(o.len(), 2);
        assert_eq!((o[0].dropped_ms, o[0].back_ms), (1000.0, Some(2500.0)));
        assert_eq!(o[1].back_ms, None);
    }

    #[test]
    fn a_library_protocol_names_its_closes_and_its_close_codes() {
        use rtcheck_wire::appproto::AppProtocol;
        let app = ClientOut {
            drops: vec![(1000.0, End::AppClose, Some(990.0))],
            reasons: [(0, "server disconnect".to_string())].into(),
            ..ClientOut::default()
        };
        let d = drain(
            std::slice::from_ref(&app),
            500.0,
            Some(AppProtocol::SocketIo),
            false,
        );
        assert_eq!((d.app_close, d.signalled()), (1, 1));
        assert_eq!(d.reasons["socketio: server disconnect"], 1);
        let code = ClientOut {
            drops: vec![(1000.0, End::Close(4403), Some(990.0))],
            ..ClientOut::default()
        };
        let d = drain(
            std::slice::from_ref(&code),
            500.0,
            Some(AppProtocol::GraphqlWs),
            false,
        );
        assert_eq!(d.ws_other_close, 1);
        assert_eq!(d.other_codes["4403"], 1);
        assert_eq!(d.reasons["forbidden (graphql-ws 4403)"], 1, "{d:?}");
        // Without a protocol nothing is named.
        assert!(drain(&[code], 500.0, None, false).reasons.is_empty());
    }

    #[test]
    fn over_http2_a_goaway_before_the_end_is_counted_with_its_lead() {
        let c = ClientOut {
            drops: vec![(2000.0, End::SseEnd, Some(2000.0))],
            goaways: [(0, 1000.0)].into(),
            ..ClientOut::default()
        };
        let e = ClientOut {
            drops: vec![(1500.0, End::Reset, None)],
            ..ClientOut::default()
        };
        let d = drain(&[c.clone(), e], 500.0, None, true);
        assert_eq!(d.goaway, Some(1));
        assert_eq!(d.goaway_lead_max_ms, Some(1000.0));
        // Over HTTP/1.1 GOAWAY is not measured: null, not 0.
        assert_eq!(drain(&[c], 500.0, None, false).goaway, None);
    }
}
