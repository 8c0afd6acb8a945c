//! What one counting client received, fed item by item, into the accounting of
//! `verify delivery` (`rtcheck::bench::seq_account`): the span is seq 1 ..= the
//! phase's last round (every counting client is there before publishing starts), gap
//! markers mark, a session reset marks what it lost, any other hole is lost silently.
use super::conn::Item;
use rtcheck::bench::seq_account::Trace;

#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub trace: Trace,
    /// Highest seq received.
    pub last: u64,
    /// The server's epoch (resume positions carry it).
    pub epoch: Option<String>,
    /// session-ack: the session id, and sessions the server no longer knew.
    pub session: Option<String>,
    pub session_resets: u64,
    /// After a session reset: what is missing up to the next seq was announced.
    reset_from: Option<u64>,
    /// Items that were none of the known kinds, and the first of them.
    pub unknown: u64,
    pub first_unknown: Option<String>,
}

impl Tally {
    pub fn new(end: u64) -> Tally {
        Tally {
            trace: Trace {
                first_expected: 1,
                last_published: end,
                ..Trace::default()
            },
            ..Tally::default()
        }
    }

    /// Take one item; returns the payload's scheduled time (for lateness) when it is one.
    pub fn take(&mut self, it: Item) -> Option<u64> {
        match it {
            Item::Seq(seq, ts) => {
                if let Some(from) = self.reset_from.take() {
                    if seq > from {
                        self.trace.gaps.push((from, seq - 1));
                    }
                }
                self.trace.seqs.push(seq);
                self.last = self.last.max(seq);
                return Some(ts);
            }
            Item::Gap(a, b) => self.trace.gaps.push((a, b)),
            Item::Reset => self.trace.resets += 1,
            Item::Hello(_) => {}
            Item::Session(id, reset) => {
                // A reset of the session we presented: what it held is gone, and said so.
                if reset && self.session.is_some() {
                    self.session_resets += 1;
                    self.reset_from = Some(self.last + 1);
                }
                self.session = Some(id);
            }
            Item::Unknown(s) => {
                self.unknown += 1;
                self.first_unknown.get_or_insert(s);
            }
        }
        None
    }

    /// Everything up to the last round arrived or was marked.
    pub fn done(&self) -> bool {
        let end = self.trace.last_published;
        self.last >= end || self.trace.gaps.iter().any(|g| g.1 >= end)
    }

    /// `SEQ@EPOCH` of the last seq (what a resume sends); None before any.
    pub fn resume_id(&self) -> Option<String> {
        (self.last > 0).then(|| match &self.epoch {
            Some(e) => format!("{}@{e}", self.last),
            None => self.last.to_string(),
        })
    }

    /// The WebSocket resume query: `since=SEQ&epoch=E`, or nothing before any seq.
    pub fn ws_resume(&self) -> String {
        match (&self.epoch, self.last) {
            (_, 0) => String::new(),
            (Some(e), l) => format!("since={l}&epoch={e}"),
            (None, l) => format!("since={l}"),
        }
    }
}
