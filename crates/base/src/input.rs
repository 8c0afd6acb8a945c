//! The one reader for files a user points a flag at (`--answers`, `--profile`,
//! `--evidence`, `--hops`, `--ca`, `--control-token-file`, ...): a regular file of at most
//! [`MAX_BYTES`], read in bounded time and memory. A FIFO, a device (`/dev/zero`) or a
//! huge file is refused in one line naming the flag and the file, before it is read.
//! YAML gets a nesting bound too ([`yaml`]): the parser's time grows with the square of
//! the depth, so a small file of `[[[[…` would otherwise hold a run for seconds.
use std::io::Read;
use std::path::Path;

/// Largest input file read (every rtcheck input is a few KiB).
pub const MAX_BYTES: u64 = 1 << 20;
/// Largest rtcheck JSON report read back (`review --evidence`): a bench fanout report
/// carries one point per round and scenario, some 2 MB for 3,000 rounds.
pub const MAX_REPORT_BYTES: u64 = 16 << 20;
/// Deepest YAML nesting accepted (flow `[`/`{` plus block levels); rtcheck's own files use 4.
pub const MAX_DEPTH: usize = 64;

/// Read `path` given to `flag` as UTF-8 text, bounded. Errors are one line: `FLAG PATH: why`.
pub fn read(flag: &str, path: &Path) -> anyhow::Result<String> {
    let what = || format!("{flag} {}", path.display());
    let bytes = read_bytes(path).map_err(|e| anyhow::anyhow!("{}: {e}", what()))?;
    note_input(flag, path);
    utf8(bytes).map_err(|e| anyhow::anyhow!("{}: {e}", what()))
}

/// [`read`] plus the nesting bound for a YAML (or JSON) file.
pub fn yaml(flag: &str, path: &Path) -> anyhow::Result<String> {
    yaml_up_to(flag, path, MAX_BYTES)
}

/// [`yaml`] for an rtcheck report read back (JSON, up to [`MAX_REPORT_BYTES`]).
pub fn report(flag: &str, path: &Path) -> anyhow::Result<String> {
    yaml_up_to(flag, path, MAX_REPORT_BYTES)
}

fn yaml_up_to(flag: &str, path: &Path, limit: u64) -> anyhow::Result<String> {
    let what = || format!("{flag} {}", path.display());
    let bytes = read_user(path, limit).map_err(|e| anyhow::anyhow!("{}: {e}", what()))?;
    // `--save` is read back to be rewritten: the one input an output may replace.
    if flag != "--save" {
        note_input(flag, path);
    }
    // Not UTF-8 or not a mapping: say so without quoting (it may be /etc/shadow).
    let text = utf8(bytes).map_err(|e| anyhow::anyhow!("{}: {e}", what()))?;
    if !looks_like_mapping(&text) {
        anyhow::bail!(
            "{}: does not look like YAML `key: value` lines (content not shown)",
            what()
        );
    }
    check_depth(&text).map_err(|e| anyhow::anyhow!("{}: {e}", what()))?;
    Ok(text)
}

fn utf8(bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (invalid byte at offset {}; content not shown)",
            e.utf8_error().valid_up_to()
        )
    })
}

/// The files this process read as input: an output that is one of them is refused
/// (`lint x.conf -o x.conf` would replace the config with its report).
static INPUTS: std::sync::Mutex<Vec<(String, FileId)>> = std::sync::Mutex::new(Vec::new());

/// A regular file's identity: device, inode and change time (an inode freed and reused
/// by a new file is not the same file).
type FileId = (u64, u64, i64, i64);

fn file_id(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
    Some((m.dev(), m.ino(), m.ctime(), m.ctime_nsec()))
}

/// Remember `path` as an input read for `flag`.
pub fn note_input(flag: &str, path: &Path) {
    if let Some(id) = file_id(path) {
        let mut v = INPUTS.lock().unwrap_or_else(|e| e.into_inner());
        if !v.iter().any(|(_, i)| *i == id) {
            v.push((flag.to_string(), id));
        }
    }
}

/// The flag an existing file at `path` (symlinks followed) was read for, if it was.
pub fn input_flag(path: &Path) -> Option<String> {
    let id = file_id(path)?;
    let v = INPUTS.lock().unwrap_or_else(|e| e.into_inner());
    v.iter().find(|(_, i)| *i == id).map(|(f, _)| f.clone())
}

/// Why a file was not read.
#[derive(Debug)]
pub enum Refused {
    Io(std::io::Error),
    /// A directory, FIFO, device or socket (what it is, in words).
    NotRegular(&'static str),
    /// At least this many bytes, over this limit.
    TooBig(u64, u64),
    /// Under /proc, /sys or /dev (the prefix): kernel state, never a user's input file.
    System(&'static str),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Io(e) => write!(f, "cannot read: {e}"),
            Refused::NotRegular(kind) => write!(f, "{kind}, not a regular file; give a file"),
            Refused::System(root) => write!(
                f,
                "a file under {root}, not an input file (kernel and device state is never read as input)"
            ),
            Refused::TooBig(n, limit) => write!(
                f,
                "{n} bytes or more: over the {} MiB limit for input files",
                limit >> 20
            ),
        }
    }
}

/// The bytes of a user's regular file of at most MAX_BYTES ([`read_user`]), the error in
/// words.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, String> {
    read_user(path, MAX_BYTES).map_err(|e| e.to_string())
}

/// Where kernel and device state lives: a user's input file is never read there
/// (`/proc/self/environ` is every secret of the process's environment).
const SYSTEM_ROOTS: [&str; 3] = ["/proc", "/sys", "/dev"];

/// The system root `path` resolves under (symlinks followed), if any.
pub fn system_root(path: &Path) -> Option<&'static str> {
    let real = path.canonicalize().ok()?;
    SYSTEM_ROOTS.into_iter().find(|r| real.starts_with(r))
}

/// [`read_up_to`] for a file a user named (a flag, a config, an include): also refused
/// when it resolves under /proc, /sys or /dev. A device or FIFO there is named as such.
pub fn read_user(path: &Path, limit: u64) -> Result<Vec<u8>, Refused> {
    let regular = std::fs::metadata(path).is_ok_and(|m| m.is_file());
    if let Some(root) = system_root(path).filter(|_| regular) {
        return Err(Refused::System(root));
    }
    read_up_to(path, limit)
}

/// Does the text start like YAML (or JSON) `key: value` lines? The first line that is not
/// blank, a comment or a document marker must be `key:`, open a flow mapping `{` or be a
/// block list entry `- `; a
/// shadow line (`root:*:19000::`), an env file (`K=v`) or an INI section are not.
pub fn looks_like_mapping(text: &str) -> bool {
    let Some(first) = text.lines().map(str::trim).find(|l| {
        !l.is_empty() && !l.starts_with('#') && !l.starts_with("---") && !l.starts_with('%')
    }) else {
        return true; // empty: the caller's defaults, nothing to quote
    };
    // A mapping, or a block list (the caller's error says "got a list", quoting nothing).
    if first.starts_with('{') || first == "-" || first.starts_with("- ") {
        return true;
    }
    let key_end = if let Some(q @ ('"' | '\'')) = first.chars().next() {
        first[1..].find(q).map(|i| i + 2)
    } else {
        first.find(':')
    };
    key_end.is_some_and(|k| {
        let rest = first[k..].strip_prefix(':').unwrap_or("x");
        rest.is_empty() || rest.starts_with([' ', '\t'])
    })
}

/// The bytes of a regular file of at most MAX_BYTES. Opened non-blocking, so a FIFO with no
/// writer cannot hold the open; the type is checked on the open file (no race with a swap).
pub fn read_bounded(path: &Path) -> Result<Vec<u8>, Refused> {
    read_up_to(path, MAX_BYTES)
}

/// [`read_bounded`] with another bound.
pub fn read_up_to(path: &Path, limit: u64) -> Result<Vec<u8>, Refused> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(Refused::Io)?;
    let meta = f.metadata().map_err(Refused::Io)?;
    let ft = meta.file_type();
    if !ft.is_file() {
        let kind = if ft.is_dir() {
            "a directory"
        } else if ft.is_fifo() {
            "a FIFO"
        } else if ft.is_char_device() || ft.is_block_device() {
            "a device"
        } else if ft.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(Refused::NotRegular(kind));
    }
    if meta.len() > limit {
        return Err(Refused::TooBig(meta.len(), limit));
    }
    // The file may grow while it is read (or say 0 bytes, as /proc does): never take more
    // than the bound.
    let mut buf = Vec::with_capacity(meta.len() as usize);
    f.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(Refused::Io)?;
    if buf.len() as u64 > limit {
        return Err(Refused::TooBig(buf.len() as u64, limit));
    }
    Ok(buf)
}

/// Refuse YAML nested deeper than MAX_DEPTH, cheaply (one pass, no allocation): flow
/// brackets outside quotes and comments, plus the block levels open at each line (its
/// indentation stack and leading `- ` entries). It over-counts rather than under-counts
/// (a bracket in a block scalar counts), which only matters past MAX_DEPTH.
pub fn check_depth(text: &str) -> Result<(), String> {
    let mut flow = 0usize;
    let mut indents: Vec<usize> = Vec::new();
    let mut quote: Option<u8> = None;
    for (n, line) in text.lines().enumerate() {
        let bytes = line.as_bytes();
        let mut i = 0;
        if quote.is_none() && flow == 0 {
            let indent = bytes.iter().take_while(|b| **b == b' ').count();
            let rest = &line[indent..];
            if !rest.is_empty() && !rest.starts_with('#') {
                while indents.last().is_some_and(|l| *l >= indent) {
                    indents.pop();
                }
                indents.push(indent);
                // `- - - x`: each entry marker opens a level on the same line.
                let extra = rest.as_bytes().chunks(2).take_while(|c| c == b"- ").count();
                if indents.len() + extra > MAX_DEPTH {
                    return Err(deep(n + 1));
                }
            }
            i = indent;
        }
        let mut prev = b' ';
        while i < bytes.len() {
            let b = bytes[i];
            match quote {
                Some(b'"') if b == b'\\' => i += 1,
                Some(q) if b == q => quote = None,
                Some(_) => {}
                None => match b {
                    b'#' if prev == b' ' || prev == b'\t' => break,
                    b'"' | b'\'' if b" \t[{,:".contains(&prev) => quote = Some(b),
                    b'[' | b'{' => {
                        flow += 1;
                        if indents.len() + flow > MAX_DEPTH {
                            return Err(deep(n + 1));
                        }
                    }
                    b']' | b'}' => flow = flow.saturating_sub(1),
                    _ => {}
                },
            }
            prev = b;
            i += 1;
        }
    }
    Ok(())
}

fn deep(line: usize) -> String {
    format!("line {line}: nested deeper than {MAX_DEPTH} levels (refused before parsing)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_flow_and_block_levels() {
        assert!(check_depth("a:\n  b:\n    - [1, {c: 2}]\n").is_ok());
        let flow = format!("answers: {}{}", "[".repeat(70), "]".repeat(70));
        assert!(check_depth(&flow).unwrap_err().contains("line 1"));
        let block: String = (0..70)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect();
        assert!(check_depth(&block).unwrap_err().contains("line 65"));
        let dashes = format!("x:\n{}1\n", "- ".repeat(70));
        assert!(check_depth(&dashes).is_err());
        // Brackets inside quotes and comments do not nest.
        let quoted = format!(
            "r: '{}'\ns: \"{}\" # {}\n",
            "[".repeat(99),
            "{".repeat(99),
            "[".repeat(99)
        );
        assert!(check_depth(&quoted).is_ok());
        // Siblings at one level do not add up.
        let wide: String = (0..500).map(|i| format!("k{i}: [1]\n")).collect();
        assert!(check_depth(&wide).is_ok());
    }

    #[test]
    fn only_key_value_text_is_taken_as_yaml() {
        for ok in [
            "a: 1\n",
            "# c\n---\nprofile:\n  x: 1\n",
            "{\"a\": 1}",
            "",
            "\"k\": v\n",
            "- a\n",
        ] {
            assert!(looks_like_mapping(ok), "{ok:?}");
        }
        for bad in [
            "root:*:19000:0:99999:7:::\n",
            "API_KEY=s3cret\n",
            "[core]\nx=1\n",
        ] {
            assert!(!looks_like_mapping(bad), "{bad:?}");
        }
    }

    #[test]
    fn never_reads_proc_sys_or_dev_files() {
        let e = read("--profile", Path::new("/proc/self/environ"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("a file under /proc"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let link = d.path().join("profile.yaml");
        std::os::unix::fs::symlink("/proc/self/environ", &link).unwrap();
        let e = yaml("--profile", &link).unwrap_err().to_string();
        assert!(e.contains("a file under /proc"), "{e}");
        let shadow = d.path().join("shadow");
        std::fs::write(&shadow, "root:$y$j9T$secrethash:19000:0:99999:7:::\n").unwrap();
        let e = yaml("--baseline", &shadow).unwrap_err().to_string();
        assert!(
            !e.contains("secrethash") && e.contains("content not shown"),
            "{e}"
        );
    }

    #[test]
    fn refuses_devices_fifos_dirs_and_big_files() {
        let e = read("--answers", Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--answers /dev/zero: a device"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("f");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = read("--profile", &fifo).unwrap_err().to_string();
        assert!(e.contains("a FIFO"), "{e}");
        assert!(read("--x", d.path())
            .unwrap_err()
            .to_string()
            .contains("a directory"));
        let big = d.path().join("big");
        std::fs::write(&big, vec![b'a'; MAX_BYTES as usize + 1]).unwrap();
        assert!(read("--x", &big).unwrap_err().to_string().contains("limit"));
        let ok = d.path().join("ok");
        std::fs::write(&ok, "a: 1\n").unwrap();
        assert_eq!(yaml("--x", &ok).unwrap(), "a: 1\n");
    }
}
