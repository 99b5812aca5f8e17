//! [`ProcessSampler`]: process groups (see `process_match.rs`), one shared `/proc` scan
//! per tick for all groups. Per group: CPU % of one core (over 100 when it uses more
//! than one), resident memory (shared pages counted once), threads, processes, open
//! fds against the soft limit, and sockets.
//!
//! Only new pids are read in full (`stat`, `cmdline`); members are re-read each tick.
//! A group with no process yet (or any more) is a gap "no process matches NAME". A
//! member that starts between two ticks counts from its second tick; CPU a member used
//! in the interval it exited in is not seen (the kernel keeps no record of it).

use std::collections::HashMap;
use std::io;
use std::time::Instant;

use record::SamplerInfo;

use crate::cpu_allowance::CpuAllowance;
use crate::hub::{Reading, SeriesDef};
use crate::proc_stat::{PidStat, parse_fd_limit, parse_pid_stat, parse_statm};
use crate::process_match::{Matcher, ProcEntry, members};
use crate::sampler::{Sampler, Tick};
use crate::spec::ProcessMatch;
use record::ResourceSeries as S;

/// Soft fd limits are re-read this often (ticks), spread over pids; they rarely change.
const LIMITS_EVERY: u32 = 30;
/// Classifying fds as sockets takes a `readlink` each (a few µs in the kernel); a
/// group with more fds than this is re-counted every few ticks instead of every tick,
/// so 10k sockets cost about what 250 do.
const SOCKET_LINKS_PER_TICK: u64 = 250;

struct Group {
    info: SamplerInfo,
    /// `None` when the pattern did not compile (a gap every tick says why).
    matcher: Result<Matcher, String>,
    /// pid -> (start ticks, cpu ticks) at the previous tick.
    cpu: HashMap<u32, (u64, u64)>,
    last_at: Option<Instant>,
    /// The tick at which sockets are counted next.
    sockets_due: u32,
}

/// A member's figures for one tick.
#[derive(Debug, Default)]
struct Member {
    stat: PidStat,
    /// Resident pages shared with other processes (file-backed or shared memory); read
    /// only for groups of more than one process.
    shared_pages: u64,
    fds: Option<u64>,
    sockets: Option<u64>,
    limits: Limits,
    fd_error: Option<String>,
}

/// What a member may use, re-read every [`LIMITS_EVERY`] ticks.
#[derive(Debug, Default, Clone)]
struct Limits {
    fd: Option<u64>,
    cpu: Option<CpuAllowance>,
    memory: Option<u64>,
}

impl Limits {
    fn read(pid: u32) -> Limits {
        Limits {
            fd: read_fd_limit(pid),
            cpu: CpuAllowance::read(pid),
            memory: crate::cgroup::read_memory_limit(pid),
        }
    }
}

pub(crate) struct ProcessSampler {
    groups: Vec<Group>,
    processes: HashMap<u32, ProcEntry>,
    limits: HashMap<u32, (u64, Limits)>,
    ticks: u32,
    ticks_per_sec: f64,
    page_bytes: f64,
    /// Linux 6.2+ reports a process's open fds as the size of `/proc/PID/fd`: one
    /// `stat` instead of listing the directory.
    fd_size_works: bool,
}

impl ProcessSampler {
    /// One group per matcher, each announced as its sampler.
    pub(crate) fn new(matchers: Vec<(ProcessMatch, SamplerInfo)>) -> ProcessSampler {
        let groups = matchers
            .into_iter()
            .map(|(spec, info)| Group {
                info,
                matcher: Matcher::new(&spec).map_err(|err| err.to_string()),
                cpu: HashMap::new(),
                last_at: None,
                sockets_due: 0,
            })
            .collect();
        ProcessSampler {
            groups,
            processes: HashMap::new(),
            limits: HashMap::new(),
            ticks: 0,
            ticks_per_sec: procfs::ticks_per_second() as f64,
            page_bytes: procfs::page_size() as f64,
            fd_size_works: std::fs::metadata("/proc/self/fd").is_ok_and(|m| m.len() > 0),
        }
    }

    /// Lists `/proc`, forgets pids that are gone and reads the new ones.
    fn scan(&mut self) -> io::Result<()> {
        let mut seen = Vec::with_capacity(self.processes.len() + 16);
        for entry in std::fs::read_dir("/proc")? {
            let Ok(entry) = entry else { continue };
            if let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            {
                seen.push(pid);
            }
        }
        seen.sort_unstable();
        self.processes
            .retain(|pid, _| seen.binary_search(pid).is_ok());
        self.limits.retain(|pid, _| seen.binary_search(pid).is_ok());
        for pid in seen {
            if self.processes.contains_key(&pid) {
                continue;
            }
            if let Some(stat) = read_stat(pid) {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let cmdline = String::from_utf8_lossy(&cmdline)
                    .trim_end_matches('\0')
                    .replace('\0', " ");
                let entry = ProcEntry {
                    ppid: stat.ppid,
                    comm: stat.comm,
                    cmdline,
                };
                self.processes.insert(pid, entry);
            }
        }
        Ok(())
    }

    /// A member's figures; `None` when it is gone or a zombie (exited, holding nothing).
    fn member(&mut self, pid: u32, count_sockets: bool, read_shared: bool) -> Option<Member> {
        let stat = read_stat(pid).filter(|stat| !matches!(stat.state, 'Z' | 'X'))?;
        let mut member = Member {
            stat,
            ..Member::default()
        };
        if let Some((resident, shared)) = read_shared.then(|| read_statm(pid)).flatten() {
            (member.stat.rss_pages, member.shared_pages) = (resident, shared);
        }
        let counted = if count_sockets {
            count_fds(pid).map(|(fds, sockets)| (fds, Some(sockets)))
        } else {
            open_fds(pid, self.fd_size_works).map(|fds| (fds, None))
        };
        match counted {
            Ok((fds, sockets)) => (member.fds, member.sockets) = (Some(fds), sockets),
            Err(err) => member.fd_error = Some(format!("/proc/{pid}/fd: {err}")),
        }
        let start = member.stat.start_ticks;
        let cached = self
            .limits
            .get(&pid)
            .filter(|(s, _)| *s == start)
            .map(|(_, l)| l.clone());
        member.limits = match cached {
            Some(limits) if !self.ticks.wrapping_add(pid).is_multiple_of(LIMITS_EVERY) => limits,
            _ => {
                let limits = Limits::read(pid);
                self.limits.insert(pid, (start, limits.clone()));
                limits
            }
        };
        Some(member)
    }

    fn sample_group(&mut self, index: usize, tick: &Tick) -> Reading {
        let mut reading = Reading::new(&self.groups[index].info, tick.at_unix_ns);
        let pids = match &self.groups[index].matcher {
            Ok(matcher) => members(&self.processes, matcher),
            Err(err) => {
                reading.gap(None, format!("bad pattern: {err}"));
                return reading;
            }
        };
        let count_sockets = self.ticks >= self.groups[index].sockets_due;
        let read_shared = pids.len() > 1;
        // The members are read from here on: CPU rates use this instant, not the tick's
        // (the /proc scan before it can take milliseconds).
        let read_at = Instant::now();
        let found: Vec<(u32, Member)> = pids
            .into_iter()
            .filter_map(|pid| Some((pid, self.member(pid, count_sockets, read_shared)?)))
            .collect();
        let group = &mut self.groups[index];
        if count_sockets {
            let fds: u64 = found.iter().filter_map(|(_, m)| m.fds).sum();
            let every = fds.div_ceil(SOCKET_LINKS_PER_TICK).max(1);
            group.sockets_due = self
                .ticks
                .saturating_add(u32::try_from(every).unwrap_or(u32::MAX));
        }
        if found.is_empty() {
            reading.gap(None, format!("no process matches {}", group.info.name));
            group.cpu.clear();
            group.last_at = None;
            return reading;
        }
        let label = group.info.name.clone();
        let series = |name: &str, unit: &str| SeriesDef::gauge(name, unit).label("group", &label);
        // CPU: ticks used since the previous tick by members seen both times.
        let mut used_ticks = 0u64;
        let mut cpu = HashMap::with_capacity(found.len());
        for (pid, member) in &found {
            let now = (member.stat.start_ticks, member.stat.cpu_ticks);
            if let Some(&(_, before)) = group.cpu.get(pid).filter(|(start, _)| *start == now.0) {
                used_ticks += now.1.saturating_sub(before);
            }
            cpu.insert(*pid, now);
        }
        if let Some(last_at) = group.last_at {
            let seconds = read_at.saturating_duration_since(last_at).as_secs_f64();
            if seconds > 0.0 {
                let percent = used_ticks as f64 / self.ticks_per_sec / seconds * 100.0;
                reading.value(series(S::ProcessCpuPercent.name(), "percent"), percent);
            }
        }
        (group.cpu, group.last_at) = (cpu, Some(read_at));
        let allowances = found.iter().filter_map(|(_, m)| m.limits.cpu.as_ref());
        if let Some(percent) = CpuAllowance::group_percent(allowances) {
            reading.value(series(S::ProcessCpuLimitPercent.name(), "percent"), percent);
        }
        let sum = |f: &dyn Fn(&Member) -> u64| found.iter().map(|(_, m)| f(m)).sum::<u64>() as f64;
        reading.value(series(S::ProcessCount.name(), "count"), found.len() as f64);
        reading.value(
            series(S::ProcessThreads.name(), "count"),
            sum(&|m| m.stat.threads),
        );
        reading.value(
            series(S::ProcessRssBytes.name(), "bytes"),
            group_rss_pages(&found) as f64 * self.page_bytes,
        );
        let memory_limits = found.iter().map(|(_, m)| m.limits.memory);
        if let Some(limit) = crate::cgroup::group_memory_limit(memory_limits) {
            let def = series(S::ProcessMemoryLimitBytes.name(), "bytes");
            reading.value(def, limit as f64);
        }
        fd_values(&mut reading, &found, &series);
        reading
    }
}

/// Open fds and sockets summed; the member closest to its soft limit gives the limit
/// and the use percent (each process has its own limit: "accept4: too many open files"
/// happens to one of them).
fn fd_values(
    reading: &mut Reading,
    found: &[(u32, Member)],
    series: &dyn Fn(&str, &str) -> SeriesDef,
) {
    if let Some(error) = found.iter().find_map(|(_, m)| m.fd_error.clone()) {
        reading.gap(Some(series(S::ProcessFds.name(), "count")), error.clone());
        reading.gap(Some(series(S::ProcessSockets.name(), "count")), error);
        return;
    }
    let fds: u64 = found.iter().filter_map(|(_, m)| m.fds).sum();
    reading.value(series(S::ProcessFds.name(), "count"), fds as f64);
    let sockets: Option<u64> = found.iter().map(|(_, m)| m.sockets).sum();
    if let Some(sockets) = sockets {
        reading.value(series(S::ProcessSockets.name(), "count"), sockets as f64);
    }
    let busiest = found
        .iter()
        .filter_map(|(_, m)| Some((m.fds? as f64, m.limits.fd.filter(|&l| l > 0)? as f64)))
        .max_by(|a, b| (a.0 / a.1).total_cmp(&(b.0 / b.1)));
    if let Some((fds, limit)) = busiest {
        reading.value(series(S::ProcessFdLimit.name(), "count"), limit);
        reading.value(
            series(S::ProcessFdUsePercent.name(), "percent"),
            fds / limit * 100.0,
        );
    }
}

/// The group's resident memory with shared pages counted once: every member's own
/// pages plus the largest member's shared ones. Summed RSS would count PostgreSQL's
/// shared buffers once per backend, gigabytes more than the host has.
fn group_rss_pages(found: &[(u32, Member)]) -> u64 {
    let own: u64 = found
        .iter()
        .map(|(_, m)| m.stat.rss_pages.saturating_sub(m.shared_pages))
        .sum();
    let shared = found.iter().map(|(_, m)| m.shared_pages).max();
    own + shared.unwrap_or(0)
}

fn read_statm(pid: u32) -> Option<(u64, u64)> {
    parse_statm(&std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?)
}

fn read_stat(pid: u32) -> Option<PidStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_pid_stat(&text)
}

/// Open fds: the size of `/proc/PID/fd` where the kernel reports it, else a listing.
fn open_fds(pid: u32, fd_size_works: bool) -> io::Result<u64> {
    let dir = format!("/proc/{pid}/fd");
    if fd_size_works {
        return std::fs::metadata(&dir).map(|m| m.len());
    }
    Ok(std::fs::read_dir(&dir)?.count() as u64)
}

/// (open fds, of which sockets).
fn count_fds(pid: u32) -> io::Result<(u64, u64)> {
    let dir = format!("/proc/{pid}/fd");
    let (mut fds, mut sockets) = (0, 0);
    for entry in std::fs::read_dir(&dir)? {
        let Ok(entry) = entry else { continue };
        fds += 1;
        if std::fs::read_link(entry.path()).is_ok_and(|target| {
            target
                .as_os_str()
                .as_encoded_bytes()
                .starts_with(b"socket:")
        }) {
            sockets += 1;
        }
    }
    Ok((fds, sockets))
}

/// The soft `RLIMIT_NOFILE`; `None` when unlimited or unreadable.
fn read_fd_limit(pid: u32) -> Option<u64> {
    parse_fd_limit(&std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?)
}

impl Sampler for ProcessSampler {
    fn thread_name(&self) -> String {
        "loadlab-mon-process".to_owned()
    }

    fn sample(&mut self, tick: &Tick, out: &mut Vec<Reading>) {
        self.ticks = self.ticks.wrapping_add(1);
        if let Err(err) = self.scan() {
            for group in &self.groups {
                let mut reading = Reading::new(&group.info, tick.at_unix_ns);
                reading.gap(None, format!("/proc: {err}"));
                out.push(reading);
            }
            return;
        }
        for index in 0..self.groups.len() {
            let reading = self.sample_group(index, tick);
            out.push(reading);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn tick() -> Tick {
        let now = Instant::now();
        Tick { now, at_unix_ns: 1 }
    }

    fn value(reading: &Reading, name: &str) -> Option<f64> {
        reading
            .values
            .iter()
            .find(|(d, _)| d.name == name)
            .map(|(_, v)| *v)
    }

    /// Nanoseconds a process has run, from `/proc/PID/schedstat`: a different kernel
    /// counter from the clock ticks in `stat` that the sampler reads.
    fn run_ns(pid: u32) -> u64 {
        let text = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).unwrap();
        text.split_whitespace().next().unwrap().parse().unwrap()
    }

    #[test]
    fn group_memory_counts_shared_pages_once() {
        let member = |rss_pages, shared_pages| Member {
            stat: PidStat {
                rss_pages,
                ..PidStat::default()
            },
            shared_pages,
            ..Member::default()
        };
        let rows: &[(&[(u64, u64)], u64)] = &[
            (&[], 0),
            (&[(800, 0)], 800),
            // A PostgreSQL: a postmaster and backends mapping the same shared buffers.
            (&[(1000, 900), (950, 900), (920, 900)], 100 + 50 + 20 + 900),
            // Shared pages each sees differ: the largest set stands for all.
            (&[(500, 100), (700, 400)], 400 + 300 + 400),
            // stat and statm read a moment apart: never below zero.
            (&[(10, 20)], 20),
        ];
        for (members, want) in rows {
            let found: Vec<(u32, Member)> = members
                .iter()
                .map(|&(rss, shared)| (1, member(rss, shared)))
                .collect();
            assert_eq!(group_rss_pages(&found), *want, "{members:?}");
        }
    }

    #[test]
    fn measures_processes_and_reports_missing_ones() {
        let me = std::process::id();
        let mut busy = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let groups = [
            ProcessMatch::Pid(me),
            ProcessMatch::Name("no-such-process-xyz".into()),
            ProcessMatch::Pid(busy.id()),
        ]
        .into_iter()
        .map(|matcher| {
            let name = crate::spec::SamplerSpec::Process(matcher.clone()).name();
            let info = SamplerInfo {
                kind: record::SamplerKind::Process,
                name,
            };
            (matcher, info)
        })
        .collect();
        let mut sampler = ProcessSampler::new(groups);
        let mut out = Vec::new();
        let (ran_before, before) = (run_ns(busy.id()), Instant::now());
        sampler.sample(&tick(), &mut out);
        std::thread::sleep(Duration::from_millis(600));
        sampler.sample(&tick(), &mut out);
        let (ran_after, after) = (run_ns(busy.id()), Instant::now());
        let _ = busy.kill();
        let _ = busy.wait();
        let (mine, missing, spinning) = (&out[3], &out[4], &out[5]);
        let cpu = value(spinning, "process.cpu_percent").unwrap();
        let want = (ran_after - ran_before) as f64 / after.duration_since(before).as_nanos() as f64
            * 100.0;
        // stat counts clock ticks (10 ms) and the windows differ by the scan's length.
        assert!(
            (cpu - want).abs() < 15.0,
            "sampled {cpu:.1}%, schedstat says {want:.1}%"
        );
        assert!(mine.gaps.is_empty(), "{:?}", mine.gaps);
        assert!(value(mine, "process.rss_bytes").unwrap() > 1e6);
        assert!(value(mine, "process.threads").unwrap() >= 1.0);
        assert!(value(mine, "process.sockets").unwrap() >= 1.0);
        let fds = value(mine, "process.fds").unwrap();
        let limit = value(mine, "process.fd_limit").unwrap();
        let percent = value(mine, "process.fd_use_percent").unwrap();
        // fds are the group's sum (the busy shell is our child, so in our group); the
        // percent is its busiest member's own.
        assert!(
            percent > 0.0 && percent <= fds / limit * 100.0 + 1e-9,
            "{percent} {fds} {limit}"
        );
        assert_eq!(
            missing.gaps,
            vec![(None, "no process matches no-such-process-xyz".to_owned())]
        );
        assert!(missing.values.is_empty());
        drop(listener);
    }
}
