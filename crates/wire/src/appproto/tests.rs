//! Recorded frames written from each protocol's spec (no server needed): what each message
//! is, the replies owed, the payload unwrapped, the client's heartbeats.
use super::*;

fn text(c: &mut Client, t: &str) -> Vec<Event> {
    c.on_message(Msg::Text(t))
}

fn sub(channel: Option<&str>, event: Option<&str>) -> Subscribe {
    Subscribe {
        channel: channel.map(String::from),
        event: event.map(String::from),
    }
}

#[test]
fn detection_names_the_protocol_and_why() {
    let d = detect("/socket.io/?EIO=4&transport=websocket").unwrap();
    assert_eq!(d.protocol, AppProtocol::SocketIo);
    assert!(d.why.contains("EIO=4"), "{}", d.why);
    let p = |s| detect(s).map(|d| d.protocol);
    assert_eq!(p("/socket/websocket?vsn=2.0.0"), Some(AppProtocol::Phoenix));
    assert_eq!(p("/echo/123/abcdef/websocket"), Some(AppProtocol::SockJs));
    assert_eq!(p("/cable"), Some(AppProtocol::ActionCable));
    for plain in ["/ws", "/", "/graphql", "/socket/websocket", "/a/websocket"] {
        assert_eq!(p(plain), None, "{plain}");
    }
    for n in AppProtocol::ALL {
        assert_eq!(AppProtocol::parse(n.name()), Some(n));
    }
    assert_eq!(AppProtocol::parse("Socket.IO"), Some(AppProtocol::SocketIo));
    assert_eq!(AppProtocol::parse("websocket"), None);
}

#[test]
fn socketio_v4_open_connect_ping_event_close() {
    let mut c = Client::new(
        AppProtocol::SocketIo,
        "/socket.io/?EIO=4",
        sub(None, Some("tick")),
    );
    assert!(c.start().is_empty(), "the server speaks first");
    let ev = text(
        &mut c,
        r#"0{"sid":"x","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}"#,
    );
    assert!(ev.contains(&Event::Negotiated {
        interval_s: Some(25.0),
        drop_after_s: Some(45.0),
        client_s: None
    }));
    assert!(ev.contains(&Event::Reply(Out::Text("40".into()))));
    assert_eq!(
        text(&mut c, r#"40{"sid":"y"}"#),
        vec![Event::Control("connected")]
    );
    assert_eq!(
        text(&mut c, "2"),
        vec![Event::Heartbeat, Event::Reply(Out::Text("3".into()))]
    );
    assert_eq!(
        text(&mut c, r#"42["tick",{"seq":7,"ts":1}]"#),
        vec![Event::Payload(br#"{"seq":7,"ts":1}"#.to_vec())]
    );
    assert_eq!(
        text(&mut c, r#"42/chat,12["tick","plain"]"#),
        vec![Event::Payload(b"plain".to_vec())]
    );
    assert_eq!(
        text(&mut c, r#"42["other",1]"#),
        vec![Event::Control("other event")]
    );
    assert!(
        matches!(&text(&mut c, r#"44{"message":"auth"}"#)[0], Event::Closed(r) if r.contains("auth"))
    );
    assert!(matches!(&text(&mut c, "41")[0], Event::Closed(_)));
    assert_eq!(c.due(100.0), None, "v4 clients never ping");
    assert_eq!(
        c.publish(r#"{"seq":1}"#),
        Out::Text(r#"42["tick",{"seq":1}]"#.into())
    );
}

#[test]
fn socketio_v3_client_pings_at_the_announced_interval() {
    let mut c = Client::new(
        AppProtocol::SocketIo,
        "/socket.io/?EIO=3",
        Subscribe::default(),
    );
    let ev = text(
        &mut c,
        r#"0{"sid":"x","pingInterval":5000,"pingTimeout":2000}"#,
    );
    assert!(
        !ev.iter().any(|e| matches!(e, Event::Reply(_))),
        "v3: no 40"
    );
    assert_eq!(c.due(4.0), None);
    assert_eq!(c.due(5.0), Some(Out::Text("2".into())));
    assert_eq!(c.due(6.0), None);
    assert_eq!(text(&mut c, "3"), vec![Event::Heartbeat]);
}

#[test]
fn signalr_handshake_records_pings_and_close() {
    let mut c = Client::new(AppProtocol::SignalR, "/hub", sub(None, Some("Tick")));
    assert_eq!(
        c.start(),
        vec![Out::Text(
            "{\"protocol\":\"json\",\"version\":1}\u{1e}".into()
        )]
    );
    let ev = text(
        &mut c,
        "{}\u{1e}{\"type\":6}\u{1e}{\"type\":1,\"target\":\"tick\",\"arguments\":[{\"seq\":3}]}\u{1e}",
    );
    assert_eq!(
        ev,
        vec![
            Event::Control("handshake"),
            Event::Heartbeat,
            Event::Payload(br#"{"seq":3}"#.to_vec())
        ]
    );
    assert!(
        matches!(&text(&mut c, "{\"error\":\"bad\"}\u{1e}")[0], Event::Closed(r) if r.contains("bad"))
    );
    assert!(
        matches!(&text(&mut c, "{\"type\":7,\"error\":\"shutdown\"}\u{1e}")[0], Event::Closed(r) if r.contains("shutdown"))
    );
    assert_eq!(c.due(14.0), None);
    assert_eq!(c.due(15.0), Some(Out::Text("{\"type\":6}\u{1e}".into())));
}

#[test]
fn phoenix_v2_join_heartbeat_reply_and_push() {
    let mut c = Client::new(
        AppProtocol::Phoenix,
        "/socket/websocket?vsn=2.0.0",
        sub(Some("room:lobby"), None),
    );
    let start = c.start();
    assert_eq!(
        start,
        vec![Out::Text(r#"["1","1","room:lobby","phx_join",{}]"#.into())]
    );
    assert_eq!(
        text(
            &mut c,
            r#"["1","1","room:lobby","phx_reply",{"status":"ok","response":{}}]"#
        ),
        vec![Event::Control("joined")]
    );
    assert_eq!(c.due(29.0), None);
    assert_eq!(
        c.due(30.0),
        Some(Out::Text(r#"[null,"2","phoenix","heartbeat",{}]"#.into()))
    );
    assert_eq!(
        text(
            &mut c,
            r#"[null,"2","phoenix","phx_reply",{"status":"ok","response":{}}]"#
        ),
        vec![Event::Heartbeat]
    );
    assert_eq!(
        text(&mut c, r#"["1",null,"room:lobby","new_msg",{"seq":4}]"#),
        vec![Event::Payload(br#"{"seq":4}"#.to_vec())]
    );
    assert!(matches!(
        &text(&mut c, r#"["1","1","room:lobby","phx_error",{}]"#)[0],
        Event::Closed(_)
    ));
    // V1 objects, and no join without a channel.
    let mut v1 = Client::new(
        AppProtocol::Phoenix,
        "/socket/websocket",
        Subscribe::default(),
    );
    assert!(v1.start().is_empty());
    let hb = v1.due(30.0).unwrap();
    assert!(
        matches!(&hb, Out::Text(t) if t.contains("\"topic\":\"phoenix\"")),
        "{hb:?}"
    );
}

#[test]
fn actioncable_welcome_subscribes_pings_and_messages() {
    let mut c = Client::new(
        AppProtocol::ActionCable,
        "/cable",
        sub(Some("ChatChannel"), None),
    );
    let ev = text(&mut c, r#"{"type":"welcome"}"#);
    assert_eq!(ev[0], Event::Control("welcome"));
    assert!(
        matches!(&ev[1], Event::Reply(Out::Text(t)) if t.contains(r#"\"channel\":\"ChatChannel\""#)),
        "{ev:?}"
    );
    assert_eq!(
        text(&mut c, r#"{"type":"ping","message":1700000000}"#),
        vec![Event::Heartbeat]
    );
    assert_eq!(
        text(
            &mut c,
            r#"{"identifier":"{\"channel\":\"ChatChannel\"}","message":{"seq":5}}"#
        ),
        vec![Event::Payload(br#"{"seq":5}"#.to_vec())]
    );
    assert!(
        matches!(&text(&mut c, r#"{"type":"disconnect","reason":"server_restart","reconnect":true}"#)[0], Event::Closed(r) if r.contains("server_restart"))
    );
    assert_eq!(c.due(1000.0), None, "the server pings");
}

#[test]
fn graphql_ws_init_ack_subscribe_ping_next_and_close_codes() {
    let q = "subscription { ticks }";
    let mut c = Client::new(AppProtocol::GraphqlWs, "/graphql", sub(Some(q), None));
    assert_eq!(
        c.start(),
        vec![Out::Text(
            r#"{"type":"connection_init","payload":{}}"#.into()
        )]
    );
    let ev = text(&mut c, r#"{"type":"connection_ack"}"#);
    assert!(matches!(&ev[1], Event::Reply(Out::Text(t)) if t.contains("subscription { ticks }")));
    assert_eq!(
        text(&mut c, r#"{"type":"ping"}"#),
        vec![
            Event::Heartbeat,
            Event::Reply(Out::Text(r#"{"type":"pong"}"#.into()))
        ]
    );
    assert_eq!(
        text(
            &mut c,
            r#"{"id":"1","type":"next","payload":{"data":{"ticks":1}}}"#
        ),
        vec![Event::Payload(br#"{"data":{"ticks":1}}"#.to_vec())]
    );
    assert!(AppProtocol::GraphqlWs
        .close_reason(4408)
        .unwrap()
        .contains("connection_init"));
    assert_eq!(AppProtocol::Raw.close_reason(4408), None);
}

#[test]
fn stomp_connected_negotiates_heartbeats_and_subscribes() {
    let mut c = Client::new(AppProtocol::Stomp, "/ws", sub(Some("/topic/ticks"), None));
    assert!(
        matches!(&c.start()[0], Out::Text(t) if t.starts_with("CONNECT\n") && t.contains("heart-beat:10000,10000"))
    );
    let ev = text(
        &mut c,
        "CONNECTED\nversion:1.2\nheart-beat:5000,20000\n\n\0",
    );
    assert!(
        ev.contains(&Event::Negotiated {
            interval_s: Some(10.0),
            drop_after_s: None,
            client_s: Some(20.0)
        }),
        "{ev:?}"
    );
    assert!(ev.iter().any(|e| matches!(e, Event::Reply(Out::Text(t)) if t.starts_with("SUBSCRIBE\n") && t.contains("destination:/topic/ticks"))));
    assert_eq!(text(&mut c, "\n"), vec![Event::Heartbeat]);
    assert_eq!(
        text(
            &mut c,
            "MESSAGE\ndestination:/topic/ticks\nmessage-id:1\nsubscription:sub-0\n\n{\"seq\":9}\0"
        ),
        vec![Event::Payload(br#"{"seq":9}"#.to_vec())]
    );
    assert!(
        matches!(&text(&mut c, "ERROR\nmessage:no such destination\n\n\0")[0], Event::Closed(r) if r.contains("no such destination"))
    );
    assert_eq!(c.due(19.0), None);
    assert_eq!(c.due(20.0), Some(Out::Text("\n".into())));
}

#[test]
fn sockjs_open_heartbeat_arrays_and_close() {
    let mut c = Client::new(
        AppProtocol::SockJs,
        "/echo/1/a/websocket",
        Subscribe::default(),
    );
    assert_eq!(text(&mut c, "o"), vec![Event::Control("open")]);
    assert_eq!(text(&mut c, "h"), vec![Event::Heartbeat]);
    assert_eq!(
        text(&mut c, r#"a["{\"seq\":1}","two"]"#),
        vec![
            Event::Payload(br#"{"seq":1}"#.to_vec()),
            Event::Payload(b"two".to_vec())
        ]
    );
    assert!(
        matches!(&text(&mut c, r#"c[3000,"Go away!"]"#)[0], Event::Closed(r) if r.contains("3000 Go away!"))
    );
    assert_eq!(c.publish("hi"), Out::Text(r#"["hi"]"#.into()));
}

#[test]
fn mqtt_connect_connack_subscribe_publish_and_ping() {
    let mut c = Client::new(AppProtocol::Mqtt, "/mqtt", sub(Some("ticks"), None));
    let Out::Binary(connect) = &c.start()[0] else {
        panic!("binary")
    };
    assert_eq!(connect[0], 0x10);
    assert_eq!(&connect[2..8], b"\x00\x04MQTT");
    assert_eq!(&connect[10..12], &60u16.to_be_bytes());
    let ev = c.on_message(Msg::Binary(&[0x20, 0x02, 0x00, 0x00]));
    assert!(matches!(&ev[1], Event::Reply(Out::Binary(b)) if b[0] == 0x82));
    // PUBLISH QoS 0 topic "ticks" payload {"seq":2}, then PINGRESP in the same message.
    let mut publish = vec![0x30, 0];
    publish.extend_from_slice(b"\x00\x05ticks{\"seq\":2}");
    publish[1] = (publish.len() - 2) as u8;
    publish.extend_from_slice(&[0xD0, 0x00]);
    assert_eq!(
        c.on_message(Msg::Binary(&publish)),
        vec![Event::Payload(br#"{"seq":2}"#.to_vec()), Event::Heartbeat]
    );
    assert!(
        matches!(&c.on_message(Msg::Binary(&[0x20, 0x02, 0x00, 0x05]))[0], Event::Closed(r) if r.contains("not authorized"))
    );
    assert_eq!(c.due(60.0), Some(Out::Binary(vec![0xC0, 0x00])));
    assert_eq!(
        c.on_message(Msg::Binary(&[0x30, 0x7f])),
        vec![Event::Unknown],
        "truncated"
    );
}

#[test]
fn raw_passes_everything_and_garbage_never_panics() {
    let mut c = Client::new(AppProtocol::Raw, "/ws", Subscribe::default());
    assert_eq!(text(&mut c, "x"), vec![Event::Payload(b"x".to_vec())]);
    for p in AppProtocol::ALL {
        let mut c = Client::new(p, "/x?EIO=4&vsn=2.0.0", sub(Some("t"), Some("e")));
        for junk in [
            "",
            "4",
            "42",
            "42[",
            "a[",
            "c",
            "\0\0",
            "[1,2]",
            "{\"type\":",
            "MESSAGE",
        ] {
            let _ = text(&mut c, junk);
        }
        for junk in [&[][..], &[0xff], &[0x30, 0xff, 0xff, 0xff, 0xff], &[0x20]] {
            let _ = c.on_message(Msg::Binary(junk));
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// Whatever a server sends, every protocol's client answers without panicking, and a
    /// client heartbeat is never due more than once a second.
    #[test]
    fn any_server_message_is_handled(text in ".{0,64}", bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
        for p in AppProtocol::ALL {
            let mut c = Client::new(p, "/x?EIO=3&vsn=2.0.0", sub(Some("t"), Some("e")));
            let _ = c.start();
            let _ = c.on_message(Msg::Text(&text));
            let _ = c.on_message(Msg::Binary(&bytes));
            let first = c.due(1000.0).is_some();
            let again = c.due(1000.5).is_some();
            proptest::prop_assert!(!(first && again), "{p:?}");
        }
    }
}

#[test]
fn a_socketio_session_is_ready_once_the_namespace_connected() {
    let mut c = Client::new(
        AppProtocol::SocketIo,
        "/socket.io/?EIO=4",
        Subscribe::default(),
    );
    assert!(!c.ready_at_start());
    let open = c.on_message(Msg::Text(
        r#"0{"sid":"a","pingInterval":25000,"pingTimeout":20000}"#,
    ));
    assert!(!open.iter().any(|e| c.ready_on(e)));
    let connected = c.on_message(Msg::Text(r#"40{"sid":"b"}"#));
    assert!(connected.iter().any(|e| c.ready_on(e)));
}

#[test]
fn a_phoenix_session_without_a_topic_is_ready_at_once_and_with_one_on_its_join_reply() {
    let bare = Client::new(
        AppProtocol::Phoenix,
        "/socket/websocket?vsn=2.0.0",
        Subscribe::default(),
    );
    assert!(bare.ready_at_start());
    let sub = Subscribe {
        channel: Some("room:1".into()),
        event: None,
    };
    let c = Client::new(AppProtocol::Phoenix, "/socket/websocket?vsn=2.0.0", sub);
    assert!(!c.ready_at_start());
    assert!(c.ready_on(&Event::Control("joined")));
    assert!(!c.ready_on(&Event::Heartbeat));
}

#[test]
fn a_client_that_never_reads_still_keeps_the_library_heartbeat() {
    // Engine.IO v4: the server pings; a blind client sends unsolicited pongs, every half
    // interval, never faster.
    let mut io = Client::new(
        AppProtocol::SocketIo,
        "/socket.io/?EIO=4",
        Subscribe::default(),
    );
    assert_eq!(io.blind_due(13.0), Some(Out::Text("3".into())));
    assert_eq!(io.blind_due(20.0), None);
    assert_eq!(io.blind_due(25.6), Some(Out::Text("3".into())));
    // SignalR: the client pings anyway (type 6 every 15 s).
    let mut sr = Client::new(AppProtocol::SignalR, "/hub", Subscribe::default());
    let ping = sr.blind_due(15.0).expect("a SignalR ping");
    assert!(matches!(ping, Out::Text(t) if t.starts_with(r#"{"type":6}"#)));
    // SockJS: the server's `h` frames ask nothing of the client.
    let mut sj = Client::new(
        AppProtocol::SockJs,
        "/echo/0/a/websocket",
        Subscribe::default(),
    );
    assert_eq!(sj.blind_due(100.0), None);
    // The interval the server announced rules: a 2 s ping, a pong every second.
    let mut fast = Client::new(
        AppProtocol::SocketIo,
        "/socket.io/?EIO=4",
        Subscribe::default(),
    );
    fast.on_message(Msg::Text(
        r#"0{"sid":"a","pingInterval":2000,"pingTimeout":2000}"#,
    ));
    assert!(fast.blind_due(1.0).is_some());
    assert!(fast.blind_due(1.5).is_none());
    assert!(fast.blind_due(2.0).is_some());
}
