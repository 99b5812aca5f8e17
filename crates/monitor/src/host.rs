//! [`HostSampler`]: the whole machine. CPU busy share (all cores and each core, from
//! `/proc/stat`), memory, network bytes and packets per interface, TCP sockets by
//! state, socket totals (`/proc/net/sockstat`), TCP trouble counters (retransmits,
//! resets, listen overflows), system file descriptors, load average.
//!
//! A source that cannot be read is a gap for its series with the reason; the others
//! are still read.

use std::time::Instant;

use procfs::{Current, CurrentSI, KernelStats, LoadAverage, Meminfo};
use record::SamplerInfo;

use crate::hub::{Reading, SeriesDef};
use crate::netstat::{Counters, TCP_COUNTERS, parse_counters};
use crate::proc_stat::parse_file_nr;
use crate::rates::Rates;
use crate::sampler::{Sampler, Tick};
use crate::sockstat::{field, parse_sockstat};
use crate::tcp_states::{STATE_NAMES, count_states};
use record::ResourceSeries as S;

/// Busy, iowait, steal and total jiffies of one CPU line.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct CpuJiffies {
    busy: u64,
    iowait: u64,
    steal: u64,
    total: u64,
}

impl CpuJiffies {
    fn from(time: &procfs::CpuTime) -> CpuJiffies {
        let iowait = time.iowait.unwrap_or(0);
        let steal = time.steal.unwrap_or(0);
        let idle = time.idle + iowait;
        let total = time.user
            + time.nice
            + time.system
            + time.idle
            + iowait
            + time.irq.unwrap_or(0)
            + time.softirq.unwrap_or(0)
            + steal;
        CpuJiffies {
            busy: total.saturating_sub(idle),
            iowait,
            steal,
            total,
        }
    }

    /// (busy, iowait, steal) percent of the time between `before` and `self`.
    fn percent_since(&self, before: &CpuJiffies) -> Option<(f64, f64, f64)> {
        let total = self.total.checked_sub(before.total).filter(|&t| t > 0)? as f64;
        let share = |now: u64, then: u64| now.saturating_sub(then) as f64 / total * 100.0;
        Some((
            share(self.busy, before.busy),
            share(self.iowait, before.iowait),
            share(self.steal, before.steal),
        ))
    }
}

/// The per-state socket dump may take this share of one core, averaged.
const STATE_DUMP_SHARE: f64 = 0.001;

pub(crate) struct HostSampler {
    info: SamplerInfo,
    cpus: Option<Vec<CpuJiffies>>,
    counters: Rates<String>,
    /// When the next per-state dump is due (its cost sets the spacing).
    next_state_dump: Option<Instant>,
}

impl HostSampler {
    pub(crate) fn new(info: SamplerInfo) -> HostSampler {
        HostSampler {
            info,
            cpus: None,
            counters: Rates::default(),
            next_state_dump: None,
        }
    }

    fn cpu(&mut self, reading: &mut Reading) {
        let stats = match KernelStats::current() {
            Ok(stats) => stats,
            Err(err) => return reading.gap(Some(cpu_series("all")), format!("/proc/stat: {err}")),
        };
        let now: Vec<CpuJiffies> = std::iter::once(&stats.total)
            .chain(&stats.cpu_time)
            .map(CpuJiffies::from)
            .collect();
        if let Some(before) = self.cpus.as_ref().filter(|b| b.len() == now.len()) {
            for (index, (now, before)) in now.iter().zip(before).enumerate() {
                let label = if index == 0 {
                    "all".to_owned()
                } else {
                    (index - 1).to_string()
                };
                let Some((busy, iowait, steal)) = now.percent_since(before) else {
                    continue;
                };
                reading.value(cpu_series(&label), busy);
                if index == 0 {
                    reading.value(
                        SeriesDef::gauge(S::HostCpuIowaitPercent.name(), "percent")
                            .label("cpu", "all"),
                        iowait,
                    );
                    reading.value(
                        SeriesDef::gauge(S::HostCpuStealPercent.name(), "percent")
                            .label("cpu", "all"),
                        steal,
                    );
                }
            }
        }
        self.cpus = Some(now);
    }

    fn memory(reading: &mut Reading) {
        let memory = match Meminfo::current() {
            Ok(memory) => memory,
            Err(err) => {
                return reading.gap(
                    Some(SeriesDef::gauge(S::HostMemoryUsedBytes.name(), "bytes")),
                    format!("/proc/meminfo: {err}"),
                );
            }
        };
        let available = memory.mem_available.unwrap_or(memory.mem_free);
        reading.value(
            SeriesDef::gauge(S::HostMemoryTotalBytes.name(), "bytes"),
            memory.mem_total as f64,
        );
        reading.value(
            SeriesDef::gauge(S::HostMemoryAvailableBytes.name(), "bytes"),
            available as f64,
        );
        reading.value(
            SeriesDef::gauge(S::HostMemoryUsedBytes.name(), "bytes"),
            memory.mem_total.saturating_sub(available) as f64,
        );
        reading.value(
            SeriesDef::gauge(S::HostSwapUsedBytes.name(), "bytes"),
            memory.swap_total.saturating_sub(memory.swap_free) as f64,
        );
    }

    /// Pages written to swap, as bytes per second: swap *in use* can be old news, swap
    /// being written is memory running short now.
    fn swapping(&mut self, reading: &mut Reading, at: Instant) {
        let series = S::HostSwapOutBytesPerSec.name();
        let def = SeriesDef::rate(series, "bytes/s");
        match procfs::vmstat() {
            Ok(counters) => {
                let pages = counters.get("pswpout").copied().unwrap_or(0);
                let bytes = pages as f64 * procfs::page_size() as f64;
                reading.rate(def, self.counters.update(series.to_owned(), bytes, at));
            }
            Err(err) => reading.gap(Some(def), format!("/proc/vmstat: {err}")),
        }
    }

    fn network(&mut self, reading: &mut Reading, at: Instant) {
        let devices = match procfs::net::dev_status() {
            Ok(devices) => devices,
            Err(err) => {
                return reading.gap(
                    Some(SeriesDef::rate(S::HostNetRxBytesPerSec.name(), "bytes/s")),
                    format!("/proc/net/dev: {err}"),
                );
            }
        };
        let mut names: Vec<&String> = devices.keys().collect();
        names.sort();
        for name in names {
            let device = &devices[name];
            let counters = [
                (S::HostNetRxBytesPerSec.name(), "bytes/s", device.recv_bytes),
                (S::HostNetTxBytesPerSec.name(), "bytes/s", device.sent_bytes),
                (S::HostNetRxPacketsPerSec.name(), "1/s", device.recv_packets),
                (S::HostNetTxPacketsPerSec.name(), "1/s", device.sent_packets),
            ];
            for (series, unit, value) in counters {
                let def = SeriesDef::rate(series, unit).label("interface", name);
                let key = format!("{series}/{name}");
                reading.rate(def, self.counters.update(key, value as f64, at));
            }
            if let Some(speed) = link_speed_bytes_per_sec(name) {
                let def = SeriesDef::gauge(S::HostNetSpeedBytesPerSec.name(), "bytes/s");
                reading.value(def.label("interface", name), speed);
            }
        }
    }

    /// Socket totals every tick: sockstat, and the kernel's count of established
    /// connections (`CurrEstab`: established and close_wait; as `tcp_counters` read it).
    fn sockets(reading: &mut Reading, established: Option<f64>) {
        match std::fs::read_to_string("/proc/net/sockstat") {
            Ok(text) => {
                let stat = parse_sockstat(&text);
                let page = procfs::page_size() as f64;
                let fields = [
                    (S::HostTcpTimeWait.name(), "TCP", "tw", 1.0, "count"),
                    (S::HostSocketsUsed.name(), "sockets", "used", 1.0, "count"),
                    (S::HostTcpOrphans.name(), "TCP", "orphan", 1.0, "count"),
                    (S::HostTcpMemoryBytes.name(), "TCP", "mem", page, "bytes"),
                    (S::HostUdpSockets.name(), "UDP", "inuse", 1.0, "count"),
                ];
                for (series, protocol, name, scale, unit) in fields {
                    if let Some(value) = field(&stat, protocol, name) {
                        reading.value(SeriesDef::gauge(series, unit), value as f64 * scale);
                    }
                }
            }
            Err(err) => reading.gap(
                Some(SeriesDef::gauge(S::HostSocketsUsed.name(), "count")),
                format!("/proc/net/sockstat: {err}"),
            ),
        }
        if let Some(established) = established {
            reading.value(
                SeriesDef::gauge(S::HostTcpEstablished.name(), "count"),
                established,
            );
        }
    }

    /// TCP sockets by state, when due: every tick on a small host, less often where
    /// walking the kernel's tables is expensive (see [`STATE_DUMP_SHARE`]).
    fn socket_states(&mut self, reading: &mut Reading, now: Instant) {
        if self.next_state_dump.is_some_and(|due| now < due) {
            return;
        }
        let cpu_before = thread_cpu();
        match count_states() {
            Ok(counts) => {
                for (state, name) in STATE_NAMES.iter().enumerate().skip(1) {
                    let def =
                        SeriesDef::gauge(S::HostTcpSockets.name(), "count").label("state", name);
                    reading.value(def, counts[state] as f64);
                }
            }
            Err(err) => {
                let def =
                    SeriesDef::gauge(S::HostTcpSockets.name(), "count").label("state", "listen");
                reading.gap(Some(def), err.to_string());
            }
        }
        let cost = thread_cpu().saturating_sub(cpu_before);
        self.next_state_dump = Some(now + cost.div_f64(STATE_DUMP_SHARE));
    }

    /// The TCP trouble counters as rates; returns `CurrEstab` for [`HostSampler::sockets`].
    fn tcp_counters(&mut self, reading: &mut Reading, at: Instant) -> Option<f64> {
        let mut netstat = Counters::new();
        for path in ["/proc/net/snmp", "/proc/net/netstat"] {
            if let Ok(text) = std::fs::read_to_string(path) {
                parse_counters(&text, &mut netstat);
            }
        }
        for (section, name, series) in TCP_COUNTERS {
            let key = (section.to_owned(), name.to_owned());
            if let Some(&value) = netstat.get(&key) {
                let rate = self.counters.update(series.to_owned(), value, at);
                reading.rate(SeriesDef::rate(series, "1/s"), rate);
            }
        }
        netstat
            .get(&("Tcp".to_owned(), "CurrEstab".to_owned()))
            .copied()
    }

    fn descriptors_and_load(reading: &mut Reading) {
        let file_nr = std::fs::read_to_string("/proc/sys/fs/file-nr");
        match file_nr.as_deref().ok().and_then(parse_file_nr) {
            Some((open, max)) => {
                reading.value(
                    SeriesDef::gauge(S::HostFdsOpen.name(), "count"),
                    open as f64,
                );
                reading.value(SeriesDef::gauge(S::HostFdsMax.name(), "count"), max as f64);
            }
            None => reading.gap(
                Some(SeriesDef::gauge(S::HostFdsOpen.name(), "count")),
                "/proc/sys/fs/file-nr unreadable",
            ),
        }
        let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range");
        if let Some(ports) = range.as_deref().ok().and_then(parse_port_range) {
            reading.value(
                SeriesDef::gauge(S::HostEphemeralPorts.name(), "count"),
                ports as f64,
            );
        }
        if let Ok(load) = LoadAverage::current() {
            reading.value(
                SeriesDef::gauge(S::HostLoad1.name(), "count"),
                f64::from(load.one),
            );
        }
    }
}

/// `ip_local_port_range` ("32768\t60999"): how many ports it holds.
fn parse_port_range(text: &str) -> Option<u64> {
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    let (low, high) = (fields.next()?.ok()?, fields.next()?.ok()?);
    (high >= low).then(|| high - low + 1)
}

/// CPU time of the calling thread (user and system).
fn thread_cpu() -> std::time::Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// An interface's link speed in bytes per second, from the Mb/s its driver states;
/// none for loopback and for virtual links that state none (`-1`) or fail to read.
fn link_speed_bytes_per_sec(interface: &str) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/sys/class/net/{interface}/speed")).ok()?;
    parse_link_speed(&text)
}

fn parse_link_speed(text: &str) -> Option<f64> {
    let megabits: f64 = text.trim().parse().ok()?;
    (megabits > 0.0).then_some(megabits * 1e6 / 8.0)
}

fn cpu_series(cpu: &str) -> SeriesDef {
    SeriesDef::gauge(S::HostCpuPercent.name(), "percent").label("cpu", cpu)
}

impl Sampler for HostSampler {
    fn thread_name(&self) -> String {
        "loadlab-mon-host".to_owned()
    }

    fn sample(&mut self, tick: &Tick, out: &mut Vec<Reading>) {
        let mut reading = Reading::new(&self.info, tick.at_unix_ns);
        self.cpu(&mut reading);
        HostSampler::memory(&mut reading);
        self.swapping(&mut reading, tick.now);
        self.network(&mut reading, tick.now);
        let established = self.tcp_counters(&mut reading, tick.now);
        HostSampler::sockets(&mut reading, established);
        self.socket_states(&mut reading, tick.now);
        HostSampler::descriptors_and_load(&mut reading);
        out.push(reading);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_speeds_read_in_bytes_per_sec() {
        let cases: &[(&str, Option<f64>)] = &[
            ("1000\n", Some(125e6)),
            ("10000", Some(1.25e9)),
            ("-1\n", None),
            ("0", None),
            ("", None),
            ("fast", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_link_speed(text), *want, "{text:?}");
        }
    }

    #[test]
    fn the_ephemeral_range_counts_its_ports() {
        let cases: &[(&str, Option<u64>)] = &[
            ("32768\t60999\n", Some(28_232)),
            ("1024 65535", Some(64_512)),
            ("5000 5000", Some(1)),
            ("60999 32768", None),
            ("", None),
            ("a b", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_port_range(text), *want, "{text:?}");
        }
    }

    #[test]
    fn cpu_shares_from_jiffies() {
        let at = |busy, iowait, steal, total| CpuJiffies {
            busy,
            iowait,
            steal,
            total,
        };
        type Shares = Option<(f64, f64, f64)>;
        let rows: &[(CpuJiffies, CpuJiffies, Shares)] = &[
            (at(0, 0, 0, 0), at(50, 10, 5, 100), Some((50.0, 10.0, 5.0))),
            (
                at(100, 0, 0, 400),
                at(300, 0, 0, 600),
                Some((100.0, 0.0, 0.0)),
            ),
            // No time passed, or the counters went backwards: nothing to say.
            (at(5, 0, 0, 100), at(5, 0, 0, 100), None),
            (at(5, 0, 0, 100), at(5, 0, 0, 90), None),
        ];
        for (before, now, want) in rows {
            assert_eq!(now.percent_since(before), *want, "{before:?} -> {now:?}");
        }
    }

    #[test]
    fn reads_this_host() {
        let info = SamplerInfo {
            kind: record::SamplerKind::Host,
            name: "host".to_owned(),
        };
        let mut sampler = HostSampler::new(info);
        let mut out = Vec::new();
        for _ in 0..2 {
            let now = Instant::now();
            let tick = Tick { now, at_unix_ns: 1 };
            sampler.sample(&tick, &mut out);
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let second = &out[1];
        assert!(second.gaps.is_empty(), "{:?}", second.gaps);
        let names: Vec<&str> = second.values.iter().map(|(d, _)| d.name.as_str()).collect();
        let first: Vec<&str> = out[0].values.iter().map(|(d, _)| d.name.as_str()).collect();
        assert!(
            first.contains(&"host.tcp_sockets"),
            "states at the first tick: {first:?}"
        );
        for want in [
            "host.cpu_percent",
            "host.memory_used_bytes",
            "host.tcp_established",
            "host.tcp_time_wait",
            "host.fds_open",
            "host.net_rx_bytes_per_sec",
        ] {
            assert!(names.contains(&want), "{want} in {names:?}");
        }
        let all_cpu = second
            .values
            .iter()
            .find(|(d, _)| d.name == "host.cpu_percent" && d.labels["cpu"] == "all")
            .map(|(_, v)| *v);
        assert!(
            all_cpu.is_some_and(|cpu| (0.0..=100.0).contains(&cpu)),
            "{all_cpu:?}"
        );
    }
}
