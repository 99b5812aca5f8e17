//! Which processes form a group: [`Matcher`] picks the roots (by name, command-line
//! regex or pid) and [`members`] adds every descendant, so an nginx master and its
//! workers, or a shell script and what it started, are one group.

use std::collections::HashMap;

use regex::Regex;

use crate::spec::ProcessMatch;

/// What the scan knows about a process without reading it again.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ProcEntry {
    pub ppid: u32,
    pub comm: String,
    /// `argv` joined by spaces; empty for kernel threads and zombies.
    pub cmdline: String,
}

/// The kernel cuts `comm` to 15 bytes.
const COMM_LEN: usize = 15;

pub(crate) enum Matcher {
    Name(String),
    Regex(Regex),
    Pid(u32),
}

impl Matcher {
    pub(crate) fn new(spec: &ProcessMatch) -> Result<Matcher, regex::Error> {
        Ok(match spec {
            ProcessMatch::Name(name) => Matcher::Name(name.clone()),
            ProcessMatch::Regex(pattern) => Matcher::Regex(Regex::new(pattern)?),
            ProcessMatch::Pid(pid) => Matcher::Pid(*pid),
        })
    }

    pub(crate) fn matches(&self, pid: u32, entry: &ProcEntry) -> bool {
        match self {
            Matcher::Pid(want) => pid == *want,
            Matcher::Name(name) => {
                let argv0 = entry.cmdline.split(' ').next().unwrap_or_default();
                let argv0_name = argv0.rsplit('/').next().unwrap_or_default();
                entry.comm == *name
                    || argv0_name == name
                    || (entry.comm.len() == COMM_LEN
                        && name.len() > COMM_LEN
                        && name.starts_with(&entry.comm))
            }
            Matcher::Regex(regex) => {
                let text = if entry.cmdline.is_empty() {
                    &entry.comm
                } else {
                    &entry.cmdline
                };
                regex.is_match(text)
            }
        }
    }
}

/// The roots that match and all their descendants, sorted.
pub(crate) fn members(processes: &HashMap<u32, ProcEntry>, matcher: &Matcher) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (&pid, entry) in processes {
        children.entry(entry.ppid).or_default().push(pid);
    }
    let mut found: Vec<u32> = processes
        .iter()
        .filter(|(pid, entry)| matcher.matches(**pid, entry))
        .map(|(&pid, _)| pid)
        .collect();
    let mut next = 0;
    while next < found.len() {
        if let Some(kids) = children.get(&found[next]) {
            found.extend(kids.iter().copied());
        }
        next += 1;
    }
    found.sort_unstable();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(ppid: u32, comm: &str, cmdline: &str) -> ProcEntry {
        ProcEntry {
            ppid,
            comm: comm.to_owned(),
            cmdline: cmdline.to_owned(),
        }
    }

    fn table() -> HashMap<u32, ProcEntry> {
        [
            (1, entry(0, "init", "/sbin/init")),
            (
                10,
                entry(1, "nginx", "nginx: master process /usr/sbin/nginx"),
            ),
            (11, entry(10, "nginx", "nginx: worker process")),
            (12, entry(10, "nginx", "nginx: worker process")),
            (20, entry(1, "bash", "/bin/bash run.sh")),
            (21, entry(20, "ruby", "ruby /srv/app/bin/puma -w 2")),
            (22, entry(21, "ruby", "puma: cluster worker 0")),
            (
                30,
                entry(
                    1,
                    "postgres",
                    "/usr/lib/postgresql/15/bin/postgres -D /data",
                ),
            ),
            (31, entry(30, "postgres", "postgres: checkpointer")),
            (
                40,
                entry(1, "cloud_controll", "/srv/bin/cloud_controller_ng -c x"),
            ),
            (50, entry(2, "kworker/0:1", "")),
        ]
        .into_iter()
        .collect()
    }

    #[test]
    fn groups_roots_with_their_children() {
        let rows: &[(ProcessMatch, &[u32])] = &[
            (ProcessMatch::Name("nginx".into()), &[10, 11, 12]),
            // argv[0]'s file name counts as the name too.
            (ProcessMatch::Name("postgres".into()), &[30, 31]),
            // comm is cut to 15 bytes; a longer name still finds it.
            (ProcessMatch::Name("cloud_controller_ng".into()), &[40]),
            (ProcessMatch::Name("ngin".into()), &[]),
            (ProcessMatch::Regex("puma".into()), &[21, 22]),
            (ProcessMatch::Regex("^kworker".into()), &[50]),
            (ProcessMatch::Pid(20), &[20, 21, 22]),
            (ProcessMatch::Pid(999), &[]),
            (
                ProcessMatch::Pid(1),
                &[1, 10, 11, 12, 20, 21, 22, 30, 31, 40],
            ),
        ];
        let processes = table();
        for (spec, want) in rows {
            let matcher = Matcher::new(spec).unwrap();
            assert_eq!(members(&processes, &matcher), *want, "{spec:?}");
        }
    }
}
