//! Unit tests of the soak's pure parts, compiled into tests/live/soak_smoke.rs (a bench target
//! without a harness never runs them).

mod wire {
    use crate::soak::wire::*;
    use rtcheck_wire::ws;

    #[test]
    fn server_frames_of_every_length_form_are_read_whole() {
        for n in [0usize, 5, 125, 126, 1040, 70_000] {
            let f = ws::frame(ws::OP_BINARY, &vec![7u8; n]);
            for cut in [0, 1, f.len() / 2, f.len() - 1] {
                assert_eq!(server_frame(&f[..cut], 1 << 20).unwrap(), None, "{n} {cut}");
            }
            let mut two = f.clone();
            two.extend_from_slice(&ws::frame(ws::OP_TEXT, b"x"));
            let got = server_frame(&two, 1 << 20).unwrap().unwrap();
            assert_eq!((got.opcode, got.payload.len(), got.len), (2, n, f.len()));
        }
    }

    #[test]
    fn masked_fragmented_and_huge_frames_are_errors() {
        let masked = ws::client_frame(ws::OP_TEXT, true, b"hi", [1, 2, 3, 4]);
        assert!(server_frame(&masked, 1024).is_err());
        let mut frag = ws::frame(ws::OP_TEXT, b"hi");
        frag[0] &= 0x7F;
        assert!(server_frame(&frag, 1024).is_err());
        assert!(server_frame(&ws::frame(ws::OP_BINARY, &[0; 2000]), 1024).is_err());
    }

    #[test]
    fn heads_give_status_and_length() {
        let r = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 3\r\ncontent-length: 12\r\nConnection: Close\r\n\r\n{\"error\":1}";
        let (h, n) = parse_head(r).unwrap().unwrap();
        assert_eq!((h.status, h.content_length, h.close), (503, Some(12), true));
        assert_eq!(&r[n..], b"{\"error\":1}");
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\n").unwrap(), None);
        assert!(parse_head(b"SSH-2.0\r\n\r\n").is_err());
        let (h, _) = parse_head(b"HTTP/1.1 101 Switching\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!((h.status, h.content_length, h.close), (101, None, false));
    }
}

mod hist {
    use crate::soak::hist::*;
    use std::time::Duration;

    #[test]
    fn buckets_are_half_octaves_and_edges_invert_them() {
        assert_eq!((bucket(0), bucket(1), bucket(2), bucket(3)), (0, 2, 4, 5));
        for us in [
            1u64, 2, 3, 4, 5, 6, 7, 8, 11, 12, 1000, 1500, 65_535, 10_000_000,
        ] {
            let i = bucket(us);
            assert!(us <= upper_edge(i), "{us} in {i} ({})", upper_edge(i));
            assert!(i < 3 || us > upper_edge(i - 1), "{us} in {i}");
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_and_max() {
        let h = Hist::default();
        assert_eq!(h.summary(), (0, 0.0, 0.0, 0.0));
        for ms in 1..=100u64 {
            h.record(Duration::from_millis(ms));
        }
        let (n, p50, p99, max) = h.summary();
        assert_eq!((n, max), (100, 100.0));
        assert!((50.0..=71.0).contains(&p50), "{p50}");
        assert!((99.0..=100.0).contains(&p99), "{p99}");
    }
}

mod conn {
    use crate::soak::conn::*;
    use crate::soak::wire::server_frame;
    use rtcheck_wire::epoch::Epoch;
    use rtcheck_wire::{epoch, payload, ws};

    #[test]
    fn sse_events_become_items() {
        let p = payload::encode_text(64, 7, 99);
        assert_eq!(sse_item(None, &p), Item::Seq(7, 99));
        assert_eq!(
            sse_item(Some("gap"), "{\"from\":3,\"to\":5}"),
            Item::Gap(3, 5)
        );
        let r = epoch::decide(epoch::Position::parse("9@00000000000000aa"), Epoch(0xbb), 4);
        assert_eq!(
            sse_item(Some("reset"), &r.reset().unwrap().json()),
            Item::Reset
        );
        assert_eq!(
            sse_item(
                Some("session"),
                "{\"session\":\"s1\",\"reset\":true,\"epoch\":\"00000000000000bb\"}"
            ),
            Item::Session("s1".into(), true)
        );
        assert!(matches!(
            sse_item(Some("gap"), "{\"from\":5,\"to\":3}"),
            Item::Unknown(_)
        ));
        assert!(matches!(sse_item(None, "hello"), Item::Unknown(_)));
    }

    #[test]
    fn websocket_frames_become_items() {
        let b = payload::encode(1024, 12, 34);
        assert_eq!(ws_item(ws::OP_BINARY, &b), Item::Seq(12, 34));
        let hello = epoch::ws_hello(Epoch(5), 40);
        let f = server_frame(&hello, 1024).unwrap().unwrap();
        assert_eq!(ws_item(ws::OP_TEXT, &hello[f.payload]), Item::Hello(40));
        assert_eq!(
            ws_item(ws::OP_TEXT, b"{\"from\":1,\"to\":2}"),
            Item::Gap(1, 2)
        );
        assert_eq!(
            ws_item(ws::OP_TEXT, b"{\"session\":\"x\",\"reset\":false}"),
            Item::Session("x".into(), false)
        );
        assert!(matches!(ws_item(ws::OP_BINARY, &[1, 2]), Item::Unknown(_)));
        assert!(matches!(
            ws_item(ws::OP_TEXT, b"{\"other\":1}"),
            Item::Unknown(_)
        ));
    }
}

mod tally {
    use crate::soak::conn::Item;
    use crate::soak::tally::*;
    use rtcheck::bench::seq_account::count;

    #[test]
    fn holes_are_silent_unless_marked_and_a_session_reset_marks_its_loss() {
        let mut t = Tally::new(8);
        for it in [
            Item::Session("a".into(), false),
            Item::Seq(1, 0),
            Item::Seq(2, 0),
            Item::Gap(3, 3),
            Item::Seq(4, 0),
            Item::Seq(6, 0),
        ] {
            t.take(it);
        }
        assert!(!t.done());
        let c = count(&t.trace);
        assert_eq!((c.lost, c.lost_silently, c.gaps), (4, 3, 1)); // 5 silent, 7-8 not yet
        t.take(Item::Session("b".into(), true));
        t.take(Item::Seq(8, 0));
        assert!(t.done());
        let c = count(&t.trace);
        assert_eq!((c.lost, c.lost_silently), (3, 1), "{:?}", t.trace.gaps); // 7 told by the reset
        assert_eq!((t.session_resets, t.session.as_deref()), (1, Some("b")));
    }

    #[test]
    fn done_by_seq_or_by_a_marker_reaching_the_end_and_resume_positions() {
        let mut t = Tally::new(5);
        assert_eq!((t.resume_id(), t.ws_resume()), (None, String::new()));
        t.take(Item::Seq(2, 0));
        assert_eq!(t.resume_id().as_deref(), Some("2"));
        t.epoch = Some("00000000000000aa".into());
        assert_eq!(t.resume_id().as_deref(), Some("2@00000000000000aa"));
        assert_eq!(t.ws_resume(), "since=2&epoch=00000000000000aa");
        t.take(Item::Gap(3, 5));
        assert!(t.done());
        t.take(Item::Unknown("x".into()));
        assert_eq!((t.unknown, t.first_unknown.as_deref()), (1, Some("x")));
    }
}

mod report {
    use crate::soak::clients::{Kind, Outcome};
    use crate::soak::report::*;
    use rtcheck::bench::seq_account::Trace;

    fn counted(seqs: &[u64], gaps: &[(u64, u64)], end: u64) -> Outcome {
        Outcome {
            trace: Some(Trace {
                seqs: seqs.to_vec(),
                gaps: gaps.to_vec(),
                first_expected: 1,
                last_published: end,
                resets: 0,
            }),
            connects: 1,
            ..Outcome::default()
        }
    }

    fn samples() -> crate::soak::phase::Samples {
        crate::soak::phase::Samples {
            rss_base: 10 << 20,
            rss_peak: 50 << 20,
            rss_after: 12 << 20,
            fds_base: 12,
            fds_peak: 600,
            fds_after: 12,
            fds_back_s: Some(0.2),
            ..Default::default()
        }
    }

    #[test]
    fn rows_sum_per_kind_and_a_silent_hole_fails_the_phase() {
        let out = vec![
            (Kind::Ws, counted(&[1, 2, 3], &[], 3)),
            (Kind::Ws, counted(&[1, 3], &[(2, 2)], 3)),
            (Kind::Sse, counted(&[1, 3], &[], 3)),
            (
                Kind::NeverReadWs,
                Outcome {
                    judged: 2,
                    removed: 2,
                    connects: 2,
                    ..Outcome::default()
                },
            ),
        ];
        let r = rows(&out);
        assert_eq!(r.len(), 3);
        let ws = r[0].counts.unwrap();
        assert_eq!(
            (
                r[0].clients,
                ws.received,
                ws.lost,
                ws.lost_silently,
                ws.gaps
            ),
            (2, 5, 1, 0, 1)
        );
        assert_eq!(r[1].counts.unwrap().lost_silently, 1);
        assert!(r[2].counts.is_none());
        let b = bound(10 << 20, 64 << 20, None, 4);
        let c = checks(&r, &samples(), &b);
        assert!(!c[0].pass && c[0].detail.starts_with("1 "), "{:?}", c[0]);
        assert!(c[1..].iter().all(|c| c.pass), "{c:?}");
        let ok = checks(&r[..1], &samples(), &b);
        assert!(ok.iter().all(|c| c.pass), "{ok:?}");
    }

    #[test]
    fn fds_memory_and_never_readers_are_checked() {
        let out = vec![(
            Kind::NeverReadSse,
            Outcome {
                judged: 3,
                removed: 2,
                ..Outcome::default()
            },
        )];
        let mut s = samples();
        s.fds_back_s = None;
        s.fds_after = 40;
        s.rss_peak = 500 << 20;
        s.rss_after = 100 << 20;
        let b = bound(s.rss_base, 64 << 20, Some((100, 1 << 20)), 1000);
        assert_eq!(
            b.bytes,
            (10 << 20) + (64 << 20) + (100 << 20) + 1000 * PER_CLIENT + SLACK
        );
        assert!(b.source.contains("100 sessions x 1024 KiB"), "{}", b.source);
        let c = checks(&rows(&out), &s, &b);
        let failed: Vec<&str> = c
            .iter()
            .filter(|c| !c.pass)
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(
            failed,
            [
                "fds back to baseline",
                "RSS peak within bound",
                "RSS back after",
                "never-reading clients removed"
            ]
        );
    }

    #[test]
    fn a_run_is_invalid_only_when_healthy_clients_fell_behind_with_the_generator_late() {
        let g = |lag: f64, late: f64| Generator {
            cpu_cores: 0.5,
            loop_lag_p99_ms: lag,
            loop_lag_max_ms: lag,
            lateness_p50_ms: 1.0,
            lateness_p99_ms: late,
            lateness_max_ms: late,
            rss_peak: 0,
        };
        let fine = rows(&[(Kind::Ws, counted(&[1, 2], &[], 2))]);
        let behind = rows(&[(Kind::Ws, counted(&[1], &[(2, 2)], 2))]);
        assert_eq!(invalid(&fine, &g(500.0, 10.0)), None);
        assert_eq!(
            invalid(&behind, &g(5.0, 10.0)),
            None,
            "the server's fault, not invalid"
        );
        assert!(invalid(&behind, &g(500.0, 10.0)).is_some());
        assert!(invalid(&fine, &g(500.0, 5000.0)).is_some());
        // An adversarial kind's loss says nothing about the generator.
        let churn = rows(&[(Kind::ChurnWs, counted(&[1], &[(2, 2)], 2))]);
        assert_eq!(invalid(&churn, &g(500.0, 10.0)), None);
    }
}

mod mix {
    use crate::soak::*;

    #[test]
    fn mixes_add_up_and_hold_every_kind() {
        for phase in ["seq-ring", "session-ack"] {
            for n in [20, 50, 199, 200, 5000, 5003] {
                let m = mix(phase, n);
                assert_eq!(m.iter().map(|x| x.1).sum::<usize>(), n, "{phase} {n}");
                assert!(m.iter().all(|x| x.1 >= 1), "{phase} {n}: {m:?}");
            }
        }
        let s = spec(&Opts::new(5000, 180.0), "session-ack");
        assert_eq!(s.rounds, 900);
        let at = |f: &str| s.flags[s.flags.iter().position(|x| x == f).unwrap() + 1].clone();
        assert_eq!(
            (at("--max-sessions"), at("--session-ttl")),
            ("5000".into(), "15000ms".into())
        );
        assert!(Opts::new(19, 60.0).check().is_err() && Opts::new(20, 0.5).check().is_err());
    }
}
