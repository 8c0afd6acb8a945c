use crate::common;
use common::*;

#[test]
fn rss_per_idle_connection_ws_and_sse_on_the_embedded_server() {
    let out = verify_json(&["memory", "--connections", "200"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for name in ["memory", "memory-sse"] {
        let v = verification(&out.json, name);
        assert_valid(v);
        let per = measured(v);
        // Something per connection (a socket, a task), far below 1 MB.
        assert!(per > 0.0 && per < 1_000_000.0, "{name}: {per}");
        let details = v["details"].to_string();
        // The server's own descriptor count moved by at least the connections.
        assert!(details.contains("server descriptors"), "{details}");
        assert!(details.contains("200 clients"), "{details}");
    }
}
