//! The sentence under each resource chart: what it shows and how to read it, saying
//! only what it draws.

use std::fmt::Write as _;

use record::{ResourceSeries, SamplerKind};

use super::{sampler_of, series_name};
use crate::format;
use crate::place::{Group, OtherUnit};
use crate::sample_gather::{SampleData, SeriesData};

/// What a chart shows, saying only what it draws.
pub(super) fn caption(data: &SampleData, group: Group, drawn: &[&SeriesData]) -> String {
    let drawn = Drawn { data, drawn };
    let text = match group {
        Group::Cpu => cpu(&drawn),
        Group::Memory => memory(&drawn),
        Group::Connections => connections(&drawn),
        Group::Other(unit) => other(&drawn, unit),
        fixed => fixed_text(fixed).to_owned(),
    };
    text.trim_end().to_owned()
}

/// The series a chart draws, asked by name.
struct Drawn<'a> {
    data: &'a SampleData,
    drawn: &'a [&'a SeriesData],
}

impl Drawn<'_> {
    fn has(&self, series: ResourceSeries) -> bool {
        let name = series.name();
        self.drawn.iter().any(|s| series_name(self.data, s) == name)
    }

    fn any(&self, series: &[ResourceSeries]) -> bool {
        series.iter().any(|&one| self.has(one))
    }
}

/// CPU: process groups in % of one core, the host in % of all its cores.
fn cpu(drawn: &Drawn<'_>) -> String {
    use ResourceSeries as S;
    let mut text = String::from("CPU time (user + system) between samples.");
    if drawn.has(S::ProcessCpuPercent) {
        text.push_str(
            " Process groups (a process and all its descendants) in % of one core, \
             so 200% is two cores busy.",
        );
    }
    if drawn.has(S::HostCpuPercent) {
        let cores = core_count(drawn.data);
        let _ = write!(
            text,
            " The host in % of all its {}cores (100% = every core busy).",
            cores.map_or_else(String::new, |n| format!("{n} "))
        );
    }
    if drawn.any(&[S::HostCpuIowaitPercent, S::HostCpuStealPercent]) {
        text.push_str(
            " Dashed: time the host's cores waited for I/O (iowait) or had stolen \
             by the hypervisor (steal).",
        );
    }
    text
}

/// Memory: RSS per group, the host's use against its total, swap.
fn memory(drawn: &Drawn<'_>) -> String {
    use ResourceSeries as S;
    let data = drawn.data;
    let mut text = String::new();
    if drawn.has(S::ProcessRssBytes) {
        text.push_str(
            "Resident memory (RSS) of each process group: its processes' own \
             pages, with pages they share counted once. ",
        );
    }
    if drawn.has(S::HostMemoryUsedBytes) {
        let total = data
            .series
            .iter()
            .find(|s| series_name(data, s) == S::HostMemoryTotalBytes.name())
            .map(|s| format!(" of {} in all", format::bytes(s.trace.peak)));
        let _ = write!(
            text,
            "The host's memory in use (total minus available){}. ",
            total.unwrap_or_default()
        );
    }
    if drawn.has(S::HostSwapUsedBytes) {
        text.push_str("Dashed: swap in use. ");
    }
    text.push_str("Binary units: 1 GiB is 1024 MiB.");
    text
}

/// Connections: the host's TCP states, and sockets and fds per group.
fn connections(drawn: &Drawn<'_>) -> String {
    use ResourceSeries as S;
    let mut text = String::new();
    if drawn.any(&[S::HostTcpEstablished, S::HostTcpTimeWait, S::HostTcpSockets]) {
        text.push_str(
            "The host's TCP connections: established (the kernel's count, \
             close_wait included) and time_wait; other states counted socket by \
             socket. ",
        );
    }
    if drawn.any(&[S::ProcessSockets, S::ProcessFds]) {
        text.push_str(
            "Per process group, summed over its processes: open sockets, and \
             file descriptors (dashed).",
        );
    }
    text
}

/// Series without a chart of their own, with how Prometheus values read.
fn other(drawn: &Drawn<'_>, unit: OtherUnit) -> String {
    let mut text = format!("Series without a chart of their own, in {}.", unit.words());
    let prom = drawn
        .drawn
        .iter()
        .any(|s| sampler_of(drawn.data, s).is_some_and(|s| s.kind == SamplerKind::Prom));
    let note = match unit {
        OtherUnit::PerSecond | OtherUnit::BytesPerSecond | OtherUnit::SecondsPerSecond => {
            " Prometheus counters are drawn as rates per second over each interval."
        }
        OtherUnit::Seconds => {
            " Prometheus histogram quantiles are over each interval, not since the \
             server started."
        }
        _ => "",
    };
    if prom {
        text.push_str(note);
    }
    text
}

/// The captions that do not depend on what is drawn.
fn fixed_text(group: Group) -> &'static str {
    match group {
        Group::CpuCores => {
            "Each core's busy share between samples. One core at 100% while the others \
             have room points at a single-threaded bottleneck, or at interrupts handled \
             on one core."
        }
        Group::FdUse => {
            "Per process group: the open file descriptors of the process nearest its \
             limit (RLIMIT_NOFILE), in % of that limit. Each process has its own limit; at \
             100% its accept() and open() fail with \"too many open files\"."
        }
        Group::TcpErrors => {
            "Host-wide, per second: segments retransmitted, resets sent, connection \
             attempts that failed, and listen queue overflows and drops (connections the \
             kernel discarded because the server did not accept them fast enough)."
        }
        Group::Network => {
            "Bytes received (rx) and sent (tx, dashed) per second, per network interface. \
             Binary units: 1 MiB/s is 1024 KiB/s."
        }
        Group::DbTransactions => {
            "PostgreSQL transactions (commits and rollbacks; rollbacks alone dashed) per \
             second per database, from pg_stat_database. PostgreSQL publishes these \
             counters when a transaction ends, about once a second per backend at most, \
             so the line is jumpy while its sum is exact."
        }
        Group::DbConnections => {
            "Backends connected to each PostgreSQL database (pg_stat_database.numbackends, \
             less the sampler's own)."
        }
        Group::Cpu | Group::Memory | Group::Connections | Group::Other(_) => "",
    }
}

/// The host's cores, when it samples them one by one (one host sampler).
pub(super) fn core_count(data: &SampleData) -> Option<usize> {
    use ResourceSeries as S;
    let hosts = data
        .tables
        .samplers
        .iter()
        .filter(|s| s.kind == SamplerKind::Host)
        .count();
    let cores = data
        .tables
        .series
        .iter()
        .filter(|s| {
            s.name == S::HostCpuPercent.name() && s.labels.get("cpu").is_some_and(|c| c != "all")
        })
        .count();
    (hosts == 1 && cores > 0).then_some(cores)
}
