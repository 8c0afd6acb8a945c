//! The server's open-fd counter (/metrics process_open_fds, /control/stats open_fds) counts
//! exactly: opening 50 files raises it by 50, closing them brings it back. Alone in its
//! binary so no other test opens files meanwhile.
#[test]
fn open_fds_counts_exactly() {
    let before = rtcheck_base::os::proc::self_open_fds();
    assert!(before >= 3, "stdin/stdout/stderr at least, got {before}");
    let files: Vec<_> = (0..50)
        .map(|_| std::fs::File::open("/proc/self/stat").unwrap())
        .collect();
    assert_eq!(rtcheck_base::os::proc::self_open_fds(), before + 50);
    drop(files);
    assert_eq!(rtcheck_base::os::proc::self_open_fds(), before);
}
