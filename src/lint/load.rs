//! From paths (files, directories) or stdin to parsed configs: the kind of each file, and
//! nginx `include` spliced in place. Nothing outside the given paths is read unless
//! `follow_includes`; an include not followed is a Skip finding (`lint-include`), never
//! silently dropped, nor is a symlink in a directory that leaves it (`lint-input`).
//! Nothing under /proc, /sys or /dev is read, and one [`Budget`] bounds every byte read.
//! `nginx -T` output on stdin is split back into its files.
use super::{parse_checked as parse, Config, Kind, Node, ParseError};
use crate::findings::{Finding, Fix, Status};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Largest config file read (a config is kilobytes; this bounds memory on any input).
pub const MAX_FILE: u64 = 8 << 20;
const MAX_FILES: usize = 1000;
const MAX_INCLUDE_DEPTH: usize = 16;

/// Read a config file through the one bounded reader (`rtcheck_base::input`): a regular file of
/// at most MAX_FILE, so a FIFO or a device in a config tree is refused, never hangs.
pub fn read_file(path: &Path) -> anyhow::Result<String> {
    let buf = rtcheck_base::input::read_user(path, MAX_FILE)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    rtcheck_base::input::note_input("lint", path);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The kind of a file by its name, then its content.
pub fn detect(path: &str, text: &str) -> Option<Kind> {
    let name = Path::new(path)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(path)
        .to_ascii_lowercase();
    let starts = |w: &[&str]| {
        text.lines()
            .any(|l| w.iter().any(|k| l.split_whitespace().next() == Some(*k)))
    };
    if name.starts_with("caddyfile") || name.ends_with(".caddyfile") || name.ends_with(".caddy") {
        return Some(Kind::Caddy);
    }
    if name.ends_with(".json") {
        return text.contains("\"apps\"").then_some(Kind::CaddyJson);
    }
    if name.ends_with(".yaml") || name.ends_with(".yml") {
        if super::traefik::looks_like(text) {
            return Some(Kind::Traefik);
        }
        if super::istio::looks_like(text) {
            return Some(Kind::Istio);
        }
        return (text.contains("kind: Ingress") || super::ingress::looks_like_configmap(text))
            .then_some(Kind::Ingress);
    }
    let haproxy = starts(&["frontend", "backend", "listen", "defaults"]);
    if name.contains("haproxy") || (name.ends_with(".cfg") && haproxy) {
        return Some(Kind::Haproxy);
    }
    if name.ends_with(".conf")
        || name.contains("nginx")
        || text.contains("location ")
        || text.contains("server {")
    {
        return Some(if haproxy && !text.contains('{') {
            Kind::Haproxy
        } else {
            Kind::Nginx
        });
    }
    if text.contains("reverse_proxy") {
        return Some(Kind::Caddy);
    }
    None
}

pub struct Loaded {
    pub configs: Vec<Config>,
    /// Includes not followed (outside the paths, missing): Skip findings.
    pub skipped: Vec<Finding>,
}

/// Where included files come from: the file system under the allowed roots, or the files
/// of an `nginx -T` dump.
enum Files<'a> {
    Disk { roots: &'a [PathBuf], follow: bool },
    Dump(&'a BTreeMap<String, String>),
}

struct Ctx<'a> {
    files: Files<'a>,
    /// Directory relative includes resolve against (the main file's, like nginx's prefix).
    base: PathBuf,
    /// A mounted root absolute include paths are read under (audit --root); None: `/`.
    prefix: Option<PathBuf>,
    seen: Vec<String>,
    skipped: Vec<Finding>,
    /// Shared with the command line's files; an include past it is a parse error at the
    /// include's line.
    budget: Budget,
    over_budget: Option<String>,
}

/// Every byte lint reads, over all files, directories, globs and includes: far above any
/// real config tree (nginx's own is some 100 KB), far below memory trouble.
pub const MAX_TOTAL: u64 = 64 << 20;

/// What lint has read so far, against [`MAX_TOTAL`].
#[derive(Default)]
pub struct Budget {
    used: u64,
}

impl Budget {
    /// Read `path` if the total stays within [`MAX_TOTAL`]; past it, one clear error.
    pub fn read(&mut self, path: &Path) -> anyhow::Result<String> {
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        self.charge(path, size)?;
        let text = read_file(path)?;
        // A file that grew (or says 0 bytes) is charged what was read.
        self.charge(path, (text.len() as u64).saturating_sub(size))?;
        Ok(text)
    }

    fn charge(&mut self, path: &Path, n: u64) -> anyhow::Result<()> {
        self.used = self.used.saturating_add(n);
        if self.used > MAX_TOTAL {
            anyhow::bail!(
                "{}: over lint's input budget ({} MiB in total over every file and include); lint fewer files at once",
                rtcheck_base::escape::plain(&path.display().to_string()),
                MAX_TOTAL >> 20
            );
        }
        Ok(())
    }
}

pub fn load_paths(paths: &[PathBuf], kind: Option<Kind>, follow: bool) -> anyhow::Result<Loaded> {
    let roots: Vec<PathBuf> = paths.iter().filter_map(|p| p.canonicalize().ok()).collect();
    let mut walk = Walk {
        roots: &roots,
        follow,
        any: kind.is_some(),
        budget: Budget::default(),
        files: vec![],
        skipped: vec![],
    };
    for p in paths {
        walk.collect(p, 0)?;
    }
    if walk.files.is_empty() {
        // Nothing read is never a pass: say what was left out, if anything.
        let not_read = walk.skipped.first().and_then(|f| f.reason.as_deref());
        anyhow::bail!(
            "no config file found in {}{}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            not_read.map_or(String::new(), |r| format!(" (not read: {r})"))
        );
    }
    let mut texts = Vec::new();
    for (f, text) in std::mem::take(&mut walk.files) {
        let name = f.display().to_string();
        let k = match kind.or_else(|| detect(&name, &text)) {
            Some(k) => k,
            None => anyhow::bail!("{name}: cannot tell which config this is; pass --kind"),
        };
        texts.push((
            name,
            k,
            text,
            f.parent().unwrap_or(Path::new(".")).to_path_buf(),
        ));
    }
    let mut ctx = Ctx {
        files: Files::Disk {
            roots: &roots,
            follow,
        },
        base: PathBuf::new(),
        prefix: None,
        seen: vec![],
        skipped: std::mem::take(&mut walk.skipped),
        budget: walk.budget,
        over_budget: None,
    };
    let mut configs = Vec::new();
    for (name, k, text, dir) in &texts {
        ctx.base = dir.clone();
        let mut nodes = parse(*k, name, text)?;
        if *k == Kind::Nginx {
            nodes = expand(nodes, &mut ctx, 0)?;
        }
        configs.push(Config {
            kind: *k,
            file: name.clone(),
            nodes,
        });
    }
    // A file another one includes is checked in place, not twice.
    let included: Vec<String> = ctx.seen.clone();
    configs.retain(|c| !included.iter().any(|s| same_file(s, &c.file)));
    Ok(Loaded {
        configs,
        skipped: ctx.skipped,
    })
}

/// One proxy's config on an audited host: relative includes resolve against `dir`,
/// absolute ones under the mounted `root`, and nothing outside `root` is read.
pub fn load_under(file: &Path, kind: Kind, dir: &Path, root: &Path) -> anyhow::Result<Loaded> {
    let text = read_file(file)?;
    let name = file.display().to_string();
    let roots: Vec<PathBuf> = root.canonicalize().into_iter().collect();
    let mut ctx = Ctx {
        files: Files::Disk {
            roots: &roots,
            follow: false,
        },
        base: dir.to_path_buf(),
        prefix: Some(root.to_path_buf()),
        seen: vec![],
        skipped: vec![],
        budget: Budget::default(),
        over_budget: None,
    };
    let mut nodes = parse(kind, &name, &text)?;
    if kind == Kind::Nginx {
        nodes = expand(nodes, &mut ctx, 0)?;
    }
    Ok(Loaded {
        configs: vec![Config {
            kind,
            file: name,
            nodes,
        }],
        skipped: ctx.skipped,
    })
}

fn same_file(a: &str, b: &str) -> bool {
    match (Path::new(a).canonicalize(), Path::new(b).canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// The files named on the command line and found in its directories, read within one
/// budget. In a directory only regular files are taken: a symlink (to a file or a
/// directory) leaving the given paths is a Skip finding unless --follow-includes, and
/// nothing under /proc, /sys or /dev is ever read.
struct Walk<'a> {
    roots: &'a [PathBuf],
    follow: bool,
    /// --kind given: every file is that kind (no detection).
    any: bool,
    budget: Budget,
    files: Vec<(PathBuf, String)>,
    skipped: Vec<Finding>,
}

impl Walk<'_> {
    fn collect(&mut self, p: &Path, depth: usize) -> anyhow::Result<()> {
        let shown = || rtcheck_base::escape::plain(&p.display().to_string()).into_owned();
        let meta = std::fs::metadata(p).map_err(|e| anyhow::anyhow!("{}: {e}", shown()))?;
        if !meta.is_dir() {
            let text = self.budget.read(p)?;
            self.files.push((p.to_path_buf(), text));
            return Ok(());
        }
        if depth > 8 {
            return Ok(());
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
            .map_err(|e| anyhow::anyhow!("{}: {e}", shown()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for e in entries {
            if self.files.len() >= MAX_FILES {
                anyhow::bail!("{}: more than {MAX_FILES} files", shown());
            }
            if let Some(why) = self.refused(&e) {
                self.skipped.push(not_read(&e, &why));
                continue;
            }
            if e.is_dir() {
                self.collect(&e, depth + 1)?;
                continue;
            }
            if !e.is_file() {
                continue; // a FIFO, socket or device in a config tree: not a config
            }
            let text = self.budget.read(&e)?;
            if self.any || detect(&e.display().to_string(), &text).is_some() {
                self.files.push((e, text));
            }
        }
        Ok(())
    }

    /// Why a directory entry is not read: a symlink leaving the given paths, a file under
    /// /proc, /sys or /dev.
    fn refused(&self, e: &Path) -> Option<String> {
        if let Some(root) = rtcheck_base::input::system_root(e) {
            return Some(format!("resolves under {root}: never read"));
        }
        let link = std::fs::symlink_metadata(e).is_ok_and(|m| m.file_type().is_symlink());
        let inside = || {
            e.canonicalize()
                .is_ok_and(|c| self.roots.iter().any(|r| c.starts_with(r)))
        };
        (link && !self.follow && !inside()).then(|| {
            "a symlink leaving the given paths (--follow-includes reads it, or name its target)"
                .to_string()
        })
    }
}

/// A Skip finding for a file in a linted directory that was not read, and why.
fn not_read(path: &Path, why: &str) -> Finding {
    let file = path.display().to_string();
    Finding {
        id: "lint-input".into(),
        title: "input file read".into(),
        status: Status::Skip,
        observed: format!("{file}: not read"),
        expected: "every config file in the given paths checked".into(),
        rule: "lint reads regular files inside the given paths only, never /proc, /sys or /dev"
            .into(),
        reason: Some(format!("{file}: {why}")),
        evidence: vec![],
        fix: Fix::default(),
        verify: None,
        verification: None,
        numbers: Default::default(),
        location: None,
    }
}

/// Parse stdin: an `nginx -T` dump is split into its files, the first the main one.
pub fn load_stdin(text: &str, kind: Kind) -> Result<Loaded, ParseError> {
    const MARK: &str = "# configuration file ";
    let mut dump: BTreeMap<String, String> = BTreeMap::new();
    let mut order = Vec::new();
    if kind == Kind::Nginx && text.lines().any(|l| l.starts_with(MARK)) {
        let mut cur: Option<String> = None;
        for l in text.lines() {
            if let Some(name) = l.strip_prefix(MARK).and_then(|n| n.strip_suffix(':')) {
                cur = Some(name.to_string());
                order.push(name.to_string());
                dump.entry(name.to_string()).or_default();
            } else if let Some(c) = &cur {
                let t = dump.get_mut(c).expect("entered above");
                t.push_str(l);
                t.push('\n');
            }
        }
    }
    if order.is_empty() {
        let nodes = parse(kind, "-", text)?;
        return Ok(Loaded {
            configs: vec![Config {
                kind,
                file: "-".into(),
                nodes,
            }],
            skipped: vec![],
        });
    }
    let main = order[0].clone();
    let base = Path::new(&main)
        .parent()
        .unwrap_or(Path::new("/"))
        .to_path_buf();
    let mut ctx = Ctx {
        files: Files::Dump(&dump),
        base,
        prefix: None,
        seen: vec![main.clone()],
        skipped: vec![],
        budget: Budget::default(),
        over_budget: None,
    };
    let nodes = expand(parse(kind, &main, &dump[&main])?, &mut ctx, 0)?;
    Ok(Loaded {
        configs: vec![Config {
            kind,
            file: main,
            nodes,
        }],
        skipped: ctx.skipped,
    })
}

/// Replace every `include` with the directives of the files it names.
fn expand(nodes: Vec<Node>, ctx: &mut Ctx, depth: usize) -> Result<Vec<Node>, ParseError> {
    let mut out = Vec::with_capacity(nodes.len());
    for mut n in nodes {
        if n.name == "include" && n.block.is_none() {
            let pattern = n.arg(0).unwrap_or("").to_string();
            if depth >= MAX_INCLUDE_DEPTH {
                return Err(super::perr(
                    &n.file,
                    n.line,
                    format!("includes nested deeper than {MAX_INCLUDE_DEPTH}"),
                ));
            }
            let found = resolve(&pattern, &n, ctx);
            if let Some(e) = ctx.over_budget.take() {
                return Err(super::perr(&n.file, n.line, e));
            }
            for (name, text) in found {
                ctx.seen.push(name.clone());
                let inner = parse(Kind::Nginx, &name, &text)?;
                out.extend(expand(inner, ctx, depth + 1)?);
            }
            continue;
        }
        if let Some(kids) = n.block.take() {
            n.block = Some(expand(kids, ctx, depth)?);
        }
        out.push(n);
    }
    Ok(out)
}

fn glob_match(pat: &str, s: &str) -> bool {
    let (p, s): (Vec<char>, Vec<char>) = (pat.chars().collect(), s.chars().collect());
    // Iterative wildcard match with one backtrack point: linear-ish, no recursion.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < s.len() {
        if i < p.len() && (p[i] == '?' || p[i] == s[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(st) = star {
            i = st + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

/// The (name, text) of the files an include names; what cannot be read is a Skip finding.
fn resolve(pattern: &str, at: &Node, ctx: &mut Ctx) -> Vec<(String, String)> {
    let full = match &ctx.prefix {
        Some(root) if Path::new(pattern).is_absolute() => {
            root.join(pattern.trim_start_matches('/'))
        }
        _ if Path::new(pattern).is_absolute() => PathBuf::from(pattern),
        _ => ctx.base.join(pattern),
    };
    let glob = pattern.contains(['*', '?']);
    let mut out = Vec::new();
    let mut why = None;
    match &ctx.files {
        Files::Dump(d) => {
            let want = full.display().to_string();
            out.extend(
                d.iter()
                    .filter(|(k, _)| glob_match(&want, k))
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
            if out.is_empty() && !glob {
                why = Some("not in the nginx -T output".to_string());
            }
        }
        Files::Disk { roots, follow } => {
            let dir = full.parent().unwrap_or(Path::new("/")).to_path_buf();
            let fname = full
                .file_name()
                .and_then(|f| f.to_str())
                .unwrap_or("")
                .to_string();
            let mut cands: Vec<PathBuf> = if glob {
                std::fs::read_dir(&dir)
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| {
                        p.file_name()
                            .and_then(|f| f.to_str())
                            .is_some_and(|f| glob_match(&fname, f))
                    })
                    .collect()
            } else {
                vec![full.clone()]
            };
            cands.sort();
            for c in cands {
                let inside = c
                    .canonicalize()
                    .ok()
                    .is_some_and(|c| roots.iter().any(|r| c.starts_with(r)));
                if !inside && !follow {
                    why = Some("outside the given paths (--follow-includes reads it)".into());
                    continue;
                }
                if ctx.over_budget.is_some() {
                    break;
                }
                if let Some(root) = rtcheck_base::input::system_root(&c) {
                    why = Some(format!("resolves under {root}: never read"));
                    continue;
                }
                let size = std::fs::metadata(&c).map_or(0, |m| m.len());
                if let Err(e) = ctx.budget.charge(&c, size) {
                    ctx.over_budget = Some(format!("{e:#}"));
                    break;
                }
                match read_file(&c) {
                    Ok(t) => out.push((c.display().to_string(), t)),
                    Err(e) => why = Some(format!("{e:#}")),
                }
            }
        }
    }
    if let Some(why) = why {
        ctx.skipped.push(Finding {
            id: "lint-include".into(),
            title: "include followed".into(),
            status: Status::Skip,
            observed: format!("{}:{}: include {pattern}", at.file, at.line),
            expected: "every included file checked".into(),
            rule: "lint reads only the given paths unless --follow-includes".into(),
            reason: Some(format!("include {pattern}: {why}")),
            evidence: vec![],
            fix: Fix::default(),
            verify: None,
            verification: None,
            numbers: Default::default(),
            location: Some(crate::findings::SourceLocation {
                file: at.file.to_string(),
                line: at.line,
                block: None,
            }),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_name_and_content() {
        assert_eq!(detect("deploy/nginx.conf", "http {}"), Some(Kind::Nginx));
        assert_eq!(detect("haproxy.cfg", "global\n"), Some(Kind::Haproxy));
        assert_eq!(
            detect("x.conf", "global\nfrontend f\n bind :80\n"),
            Some(Kind::Haproxy)
        );
        assert_eq!(detect("Caddyfile", ":80"), Some(Kind::Caddy));
        assert_eq!(detect("caddy.json", "{\"apps\":{}}"), Some(Kind::CaddyJson));
        assert_eq!(detect("k.yaml", "kind: Ingress\n"), Some(Kind::Ingress));
        assert_eq!(
            detect("dynamic.yml", "http:\n  routers:\n    r: {}\n"),
            Some(Kind::Traefik)
        );
        assert_eq!(detect("k.yaml", "kind: Service\n"), None);
        assert_eq!(detect("README", "hello"), None);
    }

    #[test]
    fn globs() {
        assert!(glob_match("/a/conf.d/*.conf", "/a/conf.d/ws.conf"));
        assert!(!glob_match("/a/conf.d/*.conf", "/a/conf.d/ws.txt"));
        assert!(glob_match("a?c", "abc"));
    }

    #[test]
    fn an_nginx_dump_on_stdin_is_split_into_its_files() {
        let t = "nginx: the configuration file /etc/nginx/nginx.conf syntax is ok\n# configuration file /etc/nginx/nginx.conf:\nhttp {\n  include /etc/nginx/conf.d/*.conf;\n}\n\n# configuration file /etc/nginx/conf.d/ws.conf:\nserver {\n  location /ws { proxy_pass http://b; }\n}\n";
        let l = load_stdin(t, Kind::Nginx).unwrap();
        assert!(l.skipped.is_empty());
        let server = &l.configs[0].nodes[0].children()[0];
        assert_eq!(
            (&*server.file, server.line),
            ("/etc/nginx/conf.d/ws.conf", 1)
        );
    }
}
