//! The sessions in-process: replay, acks, overflow, expiry, the caps.
use super::*;

fn sessions(cap: usize) -> Sessions {
    let o = crate::config::Options {
        delivery: rtcheck_wire::delivery::Delivery::SessionAck,
        session_queue: Some(cap),
        size: 64,
        ..Default::default()
    };
    let cfg = crate::config::Config::from_options_with(&o, 1, None).unwrap();
    Sessions::new(&cfg.session_limits())
}

fn round(seq: u64) -> Round {
    Round::build(64, false, Epoch(1), seq, seq * 10)
}

#[test]
fn unacked_messages_replay_and_acks_free_them() {
    let s = sessions(100);
    let (h, replay, gap) = s.attach(None, None).unwrap();
    assert!(!h.reset && replay.is_empty() && gap.is_none());
    assert_eq!(h.session.len(), 32);
    for q in 1..=5 {
        s.publish(&round(q));
    }
    let st = s.stats();
    assert_eq!((st.count, st.messages), (1, 5));
    assert_eq!(
        st.bytes as usize,
        SESSION_OVERHEAD + 5 * (64 + ENTRY_OVERHEAD)
    );
    s.ack(&h.session, 3);
    assert_eq!(s.stats().messages, 2);
    let (h2, replay, gap) = s.attach(Some(&h.session), None).unwrap();
    assert_eq!(
        h2,
        Hello {
            session: h.session.clone(),
            reset: false,
            epoch: None,
        }
    );
    assert_eq!(replay, [(4, 40), (5, 50)]);
    assert_eq!(s.encode(Epoch(1), &replay)[1].seq, 5);
    assert!(gap.is_none());
    // A seq never sent, or an unknown session: ignored and counted.
    s.ack(&h.session, 99);
    s.ack("nope", 1);
    let st = s.stats();
    assert_eq!((st.acks, st.acks_ignored, st.messages), (1, 2, 2));
}

#[test]
fn overflow_is_a_gap_marker_until_acked_past() {
    let s = sessions(3);
    let (h, ..) = s.attach(None, None).unwrap();
    for q in 1..=7 {
        s.publish(&round(q));
    }
    assert_eq!(s.stats().overflow_messages, 4);
    let (_, replay, gap) = s.attach(Some(&h.session), Some(2)).unwrap();
    assert_eq!(gap, Some((3, 4)), "acked 2 through Last-Event-ID");
    assert_eq!(replay.iter().map(|r| r.0).collect::<Vec<_>>(), [5, 6, 7]);
    s.ack(&h.session, 5);
    let (_, _, gap) = s.attach(Some(&h.session), None).unwrap();
    assert_eq!(gap, None);
}

#[test]
fn unknown_sessions_reset_and_away_sessions_expire() {
    let s = sessions(10);
    let (h, ..) = s.attach(Some("gone"), None).unwrap();
    assert!(h.reset);
    assert_eq!(s.stats().resets, 1);
    s.bind(7, &h.session);
    s.publish(&round(1));
    let t0 = Instant::now();
    assert_eq!(s.expire(t0 + Duration::from_secs(3600)), 0, "connected");
    s.detach(7);
    assert_eq!(s.expire(Instant::now()), 0, "within the TTL");
    assert_eq!(s.expire(Instant::now() + s.ttl), 1);
    let st = s.stats();
    assert_eq!((st.count, st.bytes, st.expired), (0, 0, 1));
    let (h2, ..) = s.attach(Some(&h.session), None).unwrap();
    assert!(h2.reset && h2.session != h.session);
}

#[test]
fn at_the_cap_expired_sessions_go_first_then_new_ones_are_refused() {
    let mut s = sessions(10);
    s.max = 1;
    let (h, ..) = s.attach(None, None).unwrap();
    s.bind(7, &h.session);
    // Connected: nothing frees up before a TTL, so that is the Retry-After.
    let ttl = s.ttl.as_secs();
    assert_eq!(s.attach(None, None).unwrap_err(), Refused(ttl));
    assert_eq!(s.check(Some("unknown")), Err(Refused(ttl)));
    assert!(s.check(Some(&h.session)).is_ok(), "a known session");
    s.detach(7);
    let later = Instant::now() + s.ttl / 2;
    let r = s.admit(&mut lock(&s.inner), later).unwrap_err();
    assert!((1..=ttl / 2 + 1).contains(&r.0), "{r:?}");
    // Past its TTL (the expiry loop has not run): it makes room, counted as expired.
    assert!(s.admit(&mut lock(&s.inner), Instant::now() + s.ttl).is_ok());
    let st = s.stats();
    assert_eq!((st.count, st.expired, st.refused, st.max), (0, 1, 3, 1));
}

#[test]
fn the_memory_budget_caps_new_sessions_like_max_sessions() {
    let mut s = sessions(10);
    assert_eq!(s.worst, worst_session_bytes(10, 64));
    s.memory = 3 * s.worst + 1;
    let ids: Vec<String> = (0..3)
        .map(|_| s.attach(None, None).unwrap().0.session)
        .collect();
    let r = s.attach(None, None).unwrap_err();
    let m = s.refusal_message(r);
    assert!(m.contains("session memory full: 3 sessions"), "{m}");
    assert!(s
        .refused_json(r)
        .contains("\"error\":\"session memory full\""));
    assert!(
        s.check(Some(&ids[0])).is_ok(),
        "a known session is never refused"
    );
    let st = s.stats();
    assert_eq!(
        (st.count, st.refused, st.refused_memory, st.max_by_memory),
        (3, 1, 1, 3)
    );
    // Full queues stay within the budget: the worst is an upper bound of the gauge.
    for q in 1..=20 {
        s.publish(&round(q));
    }
    assert!(s.stats().bytes <= s.memory, "{:?}", s.stats());
    // The count cap still applies when it is the lower one.
    s.max = 2;
    assert!(s.refusal_message(r).contains("--max-sessions"));
}

#[test]
fn resume_ids_ack_only_in_this_epoch() {
    // A resume from another epoch acks nothing; a bare number or the same epoch does.
    let at = |seq, epoch| Some(Position { seq, epoch });
    assert_eq!(ack_from(Epoch(1), at(5, Some(Epoch(2)))), None);
    assert_eq!(ack_from(Epoch(1), at(5, Some(Epoch(1)))), Some(5));
    assert_eq!(ack_from(Epoch(1), at(5, None)), Some(5));
    let hello = Hello {
        session: "s".into(),
        reset: true,
        epoch: Some(Epoch(3)),
    };
    assert_eq!(
        hello.json(),
        "{\"session\":\"s\",\"reset\":true,\"epoch\":\"0000000000000003\"}"
    );
}
