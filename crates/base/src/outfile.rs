//! Output files that are never half-written and never replace what is not a regular file.
//!
//! A regular file (or a path that does not exist yet) is written to a temp file beside it
//! and renamed into place, keeping the old file's mode. Symlinks are followed first: the
//! link survives and its target is written. Anything else (a character or block device such
//! as `/dev/null`, a FIFO, `/dev/stdout`) is opened and written in place: renaming over
//! `/dev/null` as root once turned it into a regular file for the whole machine. `-` is
//! stdout. This module sits below every layer (net writes its address file with it).
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Where bytes for an output path go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `-o -`.
    Stdout,
    /// A regular file (existing with this mode, or new): temp file beside it, then rename.
    Replace { path: PathBuf, mode: Option<u32> },
    /// A device, FIFO or /proc fd link: opened and written where it is.
    InPlace(PathBuf),
}

/// Symlink hops followed before giving up (the kernel's own bound is 40).
const MAX_HOPS: usize = 40;

/// Decide how `path` is written. Symlinks are followed by hand so that a dangling link
/// still writes its target; `/proc/*/fd` and `/dev/fd` links (what `/dev/stdout` is) are
/// magic, so such paths are opened as given.
pub fn classify(path: &Path) -> anyhow::Result<Target> {
    if path.as_os_str() == "-" {
        return Ok(Target::Stdout);
    }
    if let Some(flag) = crate::input::input_flag(path) {
        anyhow::bail!(
            "{}: is also an input ({flag}); write this output to another file",
            crate::escape::plain(&path.display().to_string())
        );
    }
    let mut p = path.to_path_buf();
    for _ in 0..MAX_HOPS {
        if p.starts_with("/proc") || p.starts_with("/dev/fd") {
            if !fd_link(&p) {
                anyhow::bail!(
                    "{}: under /proc, not a file for a report (kernel state; only /dev/stdout-style fd links are written)",
                    crate::escape::plain(&path.display().to_string())
                );
            }
            return Ok(Target::InPlace(path.to_path_buf()));
        }
        if p.starts_with("/sys") {
            anyhow::bail!(
                "{}: under /sys, not a file for a report (kernel state)",
                crate::escape::plain(&path.display().to_string())
            );
        }
        let meta = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Target::Replace {
                    path: p,
                    mode: None,
                })
            }
            Err(e) => anyhow::bail!("{}: cannot write: {e}", path.display()),
        };
        let ft = meta.file_type();
        if ft.is_symlink() {
            let to = std::fs::read_link(&p)
                .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", path.display()))?;
            p = match p.parent() {
                Some(dir) if to.is_relative() => dir.join(to),
                _ => to,
            };
        } else if ft.is_dir() {
            anyhow::bail!("{}: cannot write: is a directory", path.display());
        } else if ft.is_file() {
            return Ok(Target::Replace {
                path: p,
                mode: Some(meta.permissions().mode() & 0o7777),
            });
        } else {
            return Ok(Target::InPlace(p));
        }
    }
    anyhow::bail!(
        "{}: cannot write: too many levels of symbolic links",
        path.display()
    )
}

/// `/proc/self/fd/1`, `/proc/123/fd/4`, `/dev/fd/1`: an open file of a process (what
/// `/dev/stdout` and `>(cmd)` are), the only paths under /proc a report is written to.
fn fd_link(p: &Path) -> bool {
    let parts: Vec<_> = p
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect();
    let num = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match parts
        .iter()
        .map(|s| s.as_ref())
        .collect::<Vec<&str>>()
        .as_slice()
    {
        ["/", "dev", "fd", n] => num(n),
        ["/", "proc", pid, "fd", n] => {
            (*pid == "self" || *pid == "thread-self" || num(pid)) && num(n)
        }
        _ => false,
    }
}

/// Write `content` to stdout (`path` None or `-`) or to the file at `path`.
pub fn emit(content: &str, path: Option<&Path>) -> anyhow::Result<()> {
    match path {
        None => write_stdout(content.as_bytes()),
        Some(p) => write_atomic(p, content.as_bytes()),
    }
}

fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth a message.
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(|e| anyhow::anyhow!("stdout: {e}")),
    }
}

pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_all_atomic(&[(path, bytes)])
}

/// Several files that belong together (a saved profile and a report): every regular file
/// is first written to its temp file; then devices, FIFOs and stdout are written (they
/// cannot be taken back, and they are what fails in practice: `/dev/full`, a FIFO without
/// a reader); only when all of that succeeded are the temp files renamed into place, so a
/// failed run leaves none of the regular files behind.
pub fn write_all_atomic(files: &[(&Path, &[u8])]) -> anyhow::Result<()> {
    let targets = files
        .iter()
        .map(|(p, _)| classify(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut temps = Vec::new();
    let mut failure = None;
    for ((shown, bytes), t) in files.iter().zip(&targets) {
        if let Target::Replace { path, mode } = t {
            match write_temp(shown, path, *mode, bytes) {
                Ok(tmp) => temps.push((tmp, path, *shown)),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
    }
    if failure.is_none() {
        for ((shown, bytes), t) in files.iter().zip(&targets) {
            let res = match t {
                Target::Stdout => write_stdout(bytes),
                Target::InPlace(p) => write_in_place(shown, p, bytes),
                Target::Replace { .. } => Ok(()),
            };
            if let Err(e) = res {
                failure = Some(e);
                break;
            }
        }
    }
    if failure.is_none() {
        for (tmp, path, shown) in &temps {
            if let Err(e) = std::fs::rename(tmp, path) {
                failure = Some(anyhow::anyhow!("{}: cannot write: {e}", shown.display()));
                break;
            }
        }
    }
    for (tmp, _, _) in &temps {
        let _ = std::fs::remove_file(tmp);
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// A file only its owner can read (a token): a temp file created 0600 beside it, then
/// renamed into place. Whatever is at `path` that is not a regular file (a symlink, a
/// device, a FIFO) is never replaced.
pub fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if !m.file_type().is_file() {
            let shown = path.display();
            anyhow::bail!("{shown}: exists and is not a regular file; not replaced");
        }
    }
    let tmp = write_temp(path, path, Some(0o600), bytes)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        anyhow::anyhow!("{}: cannot write: {e}", path.display())
    })
}

/// How long a FIFO given as output may go without a reader before the run fails.
pub const FIFO_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Open an existing non-regular file for writing (no create, no rename) and write to it.
/// A FIFO is opened non-blocking, retried until a reader comes (at most [`FIFO_WAIT`]),
/// then written blocking: without a reader a plain open would wait forever.
fn write_in_place(shown: &Path, path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let fifo = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo());
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true);
    let file = if fifo {
        opts.custom_flags(libc::O_NONBLOCK);
        let until = std::time::Instant::now() + FIFO_WAIT;
        loop {
            match opts.open(path) {
                Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                    if std::time::Instant::now() >= until {
                        anyhow::bail!(
                            "{}: cannot write: no reader on this FIFO within {} s (start the reader first, or write to a file)",
                            shown.display(),
                            FIFO_WAIT.as_secs()
                        );
                    }
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                r => break r.and_then(blocking),
            }
        }
    } else {
        opts.open(path)
    };
    let res = file.and_then(|mut f| f.write_all(bytes).and_then(|_| f.flush()));
    match res {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", shown.display())),
    }
}

/// Clear O_NONBLOCK: once the FIFO has a reader, writes wait for it as usual.
fn blocking(f: std::fs::File) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let fd = f.as_raw_fd();
    // SAFETY: fcntl(2) on a descriptor this function owns; no memory is passed.
    let ok = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) >= 0
    };
    if ok {
        Ok(f)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Write `bytes` to a new temp file beside `path` (with `mode` when the file existed);
/// returns the temp path. `shown` is the path as the user gave it, for the error.
fn write_temp(
    shown: &Path,
    path: &Path,
    mode: Option<u32>,
    bytes: &[u8],
) -> anyhow::Result<PathBuf> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| anyhow::anyhow!("{}: not a file path", shown.display()))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let res = (|| -> std::io::Result<()> {
        // create_new: never follow or reuse something planted at the temp name.
        // Created with its mode: a private file is never readable, even empty.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode.unwrap_or(0o666))
            .open(&tmp)?;
        if let Some(m) = mode {
            f.set_permissions(std::fs::Permissions::from_mode(m))?;
        }
        f.write_all(bytes)?;
        f.sync_all()
    })();
    if let Err(e) = res {
        if e.kind() != std::io::ErrorKind::AlreadyExists {
            let _ = std::fs::remove_file(&tmp);
        }
        return Err(anyhow::anyhow!("{}: cannot write: {e}", shown.display()));
    }
    Ok(tmp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_new_regular_file_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        write_atomic(&p, b"one").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "one");
        assert_eq!(entries(dir.path()), ["out.json"]);
    }

    #[test]
    fn an_existing_regular_file_is_replaced_with_its_mode_kept() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        std::fs::write(&p, "old, longer content").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640);
        assert_eq!(entries(dir.path()), ["out.json"]);
    }

    #[test]
    fn a_symlink_survives_and_its_target_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("real");
        std::fs::create_dir(&sub).unwrap();
        let target = sub.join("report.txt");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink("real/report.txt", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        // The temp file went beside the target, and is gone.
        assert_eq!(entries(&sub), ["report.txt"]);
        // A dangling link writes (creates) its target.
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink("real/new.txt", &dangling).unwrap();
        write_atomic(&dangling, b"x").unwrap();
        assert_eq!(std::fs::read_to_string(sub.join("new.txt")).unwrap(), "x");
    }

    #[test]
    fn dev_null_stays_a_character_device() {
        assert_eq!(
            classify(Path::new("/dev/null")).unwrap(),
            Target::InPlace("/dev/null".into())
        );
        write_atomic(Path::new("/dev/null"), b"discarded").unwrap();
        let ft = std::fs::symlink_metadata("/dev/null").unwrap().file_type();
        assert!(ft.is_char_device(), "/dev/null is no longer a device");
    }

    #[test]
    fn a_character_device_made_with_mknod_is_written_in_place() {
        // CI runs as root, like the report of /dev/null being replaced.
        let dir = tempfile::tempdir().unwrap();
        let n = dir.path().join("null");
        let dev = nix::sys::stat::makedev(1, 3);
        nix::sys::stat::mknod(
            &n,
            nix::sys::stat::SFlag::S_IFCHR,
            nix::sys::stat::Mode::from_bits_truncate(0o666),
            dev,
        )
        .expect("mknod needs root (CI runs as root)");
        write_atomic(&n, b"discarded").unwrap();
        let ft = std::fs::symlink_metadata(&n).unwrap().file_type();
        assert!(ft.is_char_device(), "the device became a regular file");
        assert_eq!(entries(dir.path()), ["null"]);
        // Through a symlink too.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&n, &link).unwrap();
        write_atomic(&link, b"discarded").unwrap();
        assert!(std::fs::symlink_metadata(&n)
            .unwrap()
            .file_type()
            .is_char_device());
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_fifo_is_written_to_its_reader() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("fifo");
        nix::unistd::mkfifo(&f, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let reader = {
            let f = f.clone();
            std::thread::spawn(move || std::fs::read_to_string(f).unwrap())
        };
        write_atomic(&f, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), "through the pipe");
        assert!(std::fs::symlink_metadata(&f).unwrap().file_type().is_fifo());
        assert_eq!(entries(dir.path()), ["fifo"]);
    }

    #[test]
    fn dash_is_stdout_and_proc_fd_links_are_written_in_place() {
        assert_eq!(classify(Path::new("-")).unwrap(), Target::Stdout);
        assert_eq!(
            classify(Path::new("/dev/stdout")).unwrap(),
            Target::InPlace("/dev/stdout".into())
        );
        for ok in ["/proc/self/fd/1", "/dev/fd/2", "/proc/42/fd/3"] {
            assert!(fd_link(Path::new(ok)), "{ok}");
        }
        // Kernel state is no place for a report: the write would "succeed" and be lost.
        for bad in [
            "/proc/self/comm",
            "/proc/sys/kernel/hostname",
            "/sys/kernel/mm/x",
        ] {
            let e = classify(Path::new(bad)).unwrap_err().to_string();
            assert!(e.contains("not a file for a report"), "{bad}: {e}");
        }
    }

    #[test]
    fn an_output_that_is_an_input_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("x.conf");
        std::fs::write(&conf, "a: 1\n").unwrap();
        crate::input::yaml("--profile", &conf).unwrap();
        let link = dir.path().join("link.conf");
        std::os::unix::fs::symlink(&conf, &link).unwrap();
        for out in [&conf, &link] {
            let e = write_atomic(out, b"report").unwrap_err().to_string();
            assert!(e.contains("is also an input (--profile)"), "{e}");
        }
        assert_eq!(std::fs::read_to_string(&conf).unwrap(), "a: 1\n");
    }

    #[test]
    fn a_missing_directory_is_one_line_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("missing-dir").join("x.json");
        let e = write_atomic(&bad, b"x").unwrap_err().to_string();
        assert!(e.contains("missing-dir/x.json: cannot write"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        assert!(entries(dir.path()).is_empty());
        let e = write_atomic(dir.path(), b"x").unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
    }

    #[test]
    fn files_that_belong_together_land_together_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.yaml");
        let bad = dir.path().join("missing").join("b.txt");
        let e = write_all_atomic(&[(&a, b"a"), (&bad, b"b")]).unwrap_err();
        assert!(e.to_string().contains("missing"), "{e}");
        assert!(entries(dir.path()).is_empty());
        let b = dir.path().join("b.txt");
        write_all_atomic(&[(&a, b"a"), (&b, b"b")]).unwrap();
        assert_eq!(entries(dir.path()), ["a.yaml", "b.txt"]);
    }

    #[test]
    fn a_private_file_is_0600_and_never_replaces_a_symlink() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.token");
        write_private(&p, b"secret\n").unwrap();
        let m = std::fs::metadata(&p).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read(&p).unwrap(), b"secret\n");
        let link = d.path().join("l.token");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        let e = write_private(&link, b"other").unwrap_err().to_string();
        assert!(e.contains("not a regular file") && !e.contains('\n'), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"secret\n");
        assert_eq!(entries(d.path()).len(), 2, "no temp file left");
    }
}
