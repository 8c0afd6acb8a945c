//! /poll's view of the ring: the messages after a position as one bounded JSON document.
use super::super::ring::{capped, merge_rings, poll_view, Round, POLL_MAX};
use super::super::sync::lock;
use super::Hub;
use rtcheck_wire::epoch::{self, Position};
use rtcheck_wire::payload;

impl Hub {
    /// /poll: ring messages with seq > since, as a JSON document (see contract).
    pub fn poll_json(&self, pos: Position) -> String {
        self.poll_json_with(pos, &[])
    }

    /// [`Hub::poll_json`] over the local ring merged with the cluster's (`extra`). A
    /// position from another epoch, or beyond what the server holds, is answered with
    /// `"reset":true` and the ring from its start (as for since=0).
    pub fn poll_json_with(&self, pos: Position, extra: &[Round]) -> String {
        let local = lock(&self.ring);
        let merged;
        let ring = if extra.is_empty() {
            &*local
        } else {
            merged = merge_rings(&local, extra, self.epoch());
            &merged
        };
        let snapshot = self.cfg.delivery == rtcheck_wire::delivery::Delivery::Snapshot;
        let resume = epoch::decide(pos, self.epoch(), self.latest_held(ring));
        let since = resume.since();
        let (mut latest, mut oldest, mut gap, served) = poll_view(ring, since, snapshot);
        if let Some(g) = self
            .tail_gap(ring, since, u64::MAX)
            .filter(|_| served.is_empty())
        {
            // Nothing after `since` but a tail the node marked as a gap: say so.
            (latest, oldest, gap) = (g.seq, Some(g.seq + 1), true);
        }
        // Bounded: at most POLL_MAX bytes of messages (at least one); the client polls
        // again from `latest`, the last one carried.
        let (served, more) = capped(served, POLL_MAX, self.cfg.size);
        if more {
            latest = served.last().map_or(latest, |r| r.seq);
        }
        let mut out = format!(
            "{{\"epoch\":\"{}\",\"reset\":{},\"latest\":{latest},\"gap\":{gap},\"oldest\":{},\"more\":{more},\"messages\":[",
            self.epoch(),
            resume.reset().is_some(),
            oldest.map_or("null".to_string(), |o| o.to_string())
        );
        let mut first = true;
        for r in served {
            if !first {
                out.push(',');
            }
            first = false;
            if r.json.is_empty() && r.is_data() {
                // A Stream round (Round::stub): encoded for this answer only.
                out.push_str(&payload::encode_text(self.cfg.size, r.seq, r.ts));
            } else {
                out.push_str(std::str::from_utf8(&r.json).unwrap_or("{}"));
            }
        }
        out.push_str("]}");
        out
    }
}
