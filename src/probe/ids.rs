//! Every probe check's id, once. A row of `CHECKS` names its variant (a check file's
//! `ID` is its text); the text is the contract: add a line, never rename one.
crate::findings::check_ids! {
    pub enum CheckId {
        Reachable = "reachable",
        Response = "response",
        Upgrade = "upgrade",
        SseBuffering = "sse-buffering",
        IdleTimeout = "idle-timeout",
        Heartbeat = "heartbeat",
        Resume = "resume",
        Compression = "compression",
        Http2 = "http2",
        Origin = "origin",
        WsOverH2 = "ws-over-h2",
        Measured = "measured",
        PollStatus = "poll-status",
        PollCache = "poll-cache",
        PollConditional = "poll-conditional",
        PollLatency = "poll-latency",
        PollOverhead = "poll-overhead",
        PathHops = "path-hops",
        PathIdle = "path-idle",
    }
}
