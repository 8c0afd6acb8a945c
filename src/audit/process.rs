//! Which process `audit --pid LIST` / `--process NAME` judges. A master/worker server
//! (nginx, HAProxy, gunicorn, php-fpm...) serves from its workers, so its workers are
//! judged: the master's limits do not reach them once they run. Pure over a process
//! table; `cmd::audit` reads it.

/// One process as the resolution needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    /// /proc/PID/stat's comm (15 characters at most).
    pub comm: String,
    /// The name it shows: argv[0]'s base name, before a process title's `:` (`nginx:
    /// worker process` -> nginx, `gunicorn: master [app]` -> gunicorn); else comm.
    pub name: String,
}

/// The name a process shows, from its comm and its command line (argv NUL-separated).
pub fn shown_name(comm: &str, cmdline: &[u8]) -> String {
    let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    let argv0 = String::from_utf8_lossy(argv0);
    let head = argv0.split(':').next().unwrap_or_default().trim();
    let base = head.rsplit('/').next().unwrap_or_default();
    let base = base.split_whitespace().next().unwrap_or_default();
    if base.is_empty() {
        comm.to_string()
    } else {
        base.to_string()
    }
}

/// A master and the workers it forked (same comm).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub name: String,
    pub master: u32,
    pub workers: Vec<u32>,
}

/// What is judged: one process (a worker when there is a master), its group, and the
/// other processes given that are not part of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub pid: u32,
    pub group: Option<Group>,
    pub others: Vec<u32>,
}

/// The processes called `name` (comm or shown name).
pub fn named(all: &[Proc], name: &str) -> Vec<u32> {
    all.iter()
        .filter(|p| p.comm == name || p.name == name)
        .map(|p| p.pid)
        .collect()
}

/// Judge `given` (present in `all`): a master given (alone or with its workers) means its
/// workers; a worker given with no master means that worker.
pub fn resolve(all: &[Proc], given: &[u32]) -> Option<Judged> {
    let get = |pid: u32| all.iter().find(|p| p.pid == pid);
    let first = *given.first()?;
    let workers_of = |m: &Proc| -> Vec<u32> {
        all.iter()
            .filter(|c| c.ppid == m.pid && c.comm == m.comm)
            .map(|c| c.pid)
            .collect()
    };
    // The master: a given process with same-named children, or the parent of a given
    // process when that parent was given too.
    let master = given.iter().filter_map(|&p| get(p)).find(|p| {
        !workers_of(p).is_empty()
            && (given.len() == 1
                || given
                    .iter()
                    .any(|g| get(*g).is_some_and(|c| c.ppid == p.pid)))
    });
    let Some(m) = master else {
        return Some(Judged {
            pid: first,
            group: None,
            others: given[1..].to_vec(),
        });
    };
    let workers = workers_of(m);
    let others = given
        .iter()
        .copied()
        .filter(|p| *p != m.pid && !workers.contains(p))
        .collect();
    Some(Judged {
        pid: workers[0],
        group: Some(Group {
            name: m.name.clone(),
            master: m.pid,
            workers,
        }),
        others,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: u32, ppid: u32, comm: &str, title: &str) -> Proc {
        Proc {
            pid,
            ppid,
            comm: comm.into(),
            name: shown_name(comm, title.as_bytes()),
        }
    }

    fn table() -> Vec<Proc> {
        vec![
            p(1, 0, "systemd", "/sbin/init\0"),
            p(
                100,
                1,
                "nginx",
                "nginx: master process /usr/sbin/nginx -g daemon on;\0",
            ),
            p(101, 100, "nginx", "nginx: worker process\0"),
            p(102, 100, "nginx", "nginx: worker process\0"),
            p(200, 1, "python3", "gunicorn: master [app:app]\0"),
            p(201, 200, "python3", "gunicorn: worker [app:app]\0"),
            p(300, 1, "node", "/usr/bin/node\0server.js\0"),
        ]
    }

    #[test]
    fn names_from_titles_and_argv0() {
        assert_eq!(table()[1].name, "nginx");
        assert_eq!(table()[4].name, "gunicorn");
        assert_eq!(table()[6].name, "node");
        assert_eq!(shown_name("php-fpm8.2", b"php-fpm: pool www\0"), "php-fpm");
        assert_eq!(shown_name("kworker", b""), "kworker");
    }

    #[test]
    fn a_master_means_its_workers() {
        let t = table();
        // `pidof nginx` prints workers and master; the master alone; by name.
        for given in [vec![102, 101, 100], vec![100], named(&t, "nginx")] {
            let j = resolve(&t, &given).unwrap();
            assert_eq!(j.pid, 101, "{given:?}");
            let g = j.group.unwrap();
            assert_eq!((g.name.as_str(), g.master), ("nginx", 100));
            assert_eq!(g.workers, vec![101, 102]);
            assert!(j.others.is_empty());
        }
        let j = resolve(&t, &named(&t, "gunicorn")).unwrap();
        assert_eq!((j.pid, j.group.unwrap().master), (201, 200));
        // A worker alone is that worker; a plain server is itself.
        assert_eq!(resolve(&t, &[102]).unwrap().group, None);
        let j = resolve(&t, &[300, 1]).unwrap();
        assert_eq!((j.pid, j.group, j.others), (300, None, vec![1]));
        assert_eq!(resolve(&t, &[]), None);
    }
}
