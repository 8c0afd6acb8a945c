//! Every audit check's id, once. A row of `CHECKS` names its variant; the text is the
//! contract (users grep, suppress and alert on it): add a line, never rename one.
crate::findings::check_ids! {
    pub enum CheckId {
        FdLimit = "fd-limit",
        FdSystem = "fd-system",
        EphemeralPorts = "ephemeral-ports",
        TimeWait = "time-wait",
        TcpWmem = "tcp-wmem",
        TcpKeepalive = "tcp-keepalive",
        Somaxconn = "somaxconn",
        Memory = "memory",
        Cpu = "cpu",
        Conntrack = "conntrack",
    }
}
