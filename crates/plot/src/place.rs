//! [`place`]: which chart each resource series goes to and how it reads there, one
//! exhaustive table over [`ResourceSeries`]; series our samplers do not write
//! (Prometheus metrics) go to one chart per unit ([`Group::Other`]).

use record::{ResourceSeries, SamplerInfo, SeriesInfo};

use crate::model::{Style, Unit};

/// A chart of resource series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    Cpu,
    CpuCores,
    Memory,
    Connections,
    FdUse,
    TcpErrors,
    Network,
    DbTransactions,
    DbConnections,
    /// Series without a chart of their own, one chart per unit.
    Other(OtherUnit),
}

/// The units series are stored in (`docs/RECORD_FORMAT.md`), for the other charts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OtherUnit {
    Percent,
    Bytes,
    BytesPerSecond,
    Count,
    PerSecond,
    Seconds,
    SecondsPerSecond,
    Ratio,
    /// Empty or unknown.
    Plain,
}

impl OtherUnit {
    pub fn from_unit(unit: &str) -> OtherUnit {
        match unit {
            "percent" => OtherUnit::Percent,
            "bytes" => OtherUnit::Bytes,
            "bytes/s" => OtherUnit::BytesPerSecond,
            "count" => OtherUnit::Count,
            "1/s" => OtherUnit::PerSecond,
            "seconds" => OtherUnit::Seconds,
            "seconds/s" => OtherUnit::SecondsPerSecond,
            "ratio" => OtherUnit::Ratio,
            _ => OtherUnit::Plain,
        }
    }

    pub(crate) fn words(self) -> &'static str {
        match self {
            OtherUnit::Percent => "percent",
            OtherUnit::Bytes => "bytes",
            OtherUnit::BytesPerSecond => "bytes per second",
            OtherUnit::Count => "counts",
            OtherUnit::PerSecond => "per second",
            OtherUnit::Seconds => "seconds",
            OtherUnit::SecondsPerSecond => "seconds per second",
            OtherUnit::Ratio => "ratios",
            OtherUnit::Plain => "values without a unit",
        }
    }
}

impl Group {
    /// The chart's id: its element id on the page and its file name.
    pub fn id(self) -> &'static str {
        match self {
            Group::Cpu => "cpu",
            Group::CpuCores => "cpu-cores",
            Group::Memory => "memory",
            Group::Connections => "connections",
            Group::FdUse => "fd-use",
            Group::TcpErrors => "tcp-errors",
            Group::Network => "network",
            Group::DbTransactions => "database-transactions",
            Group::DbConnections => "database-connections",
            Group::Other(unit) => match unit {
                OtherUnit::Percent => "other-percent",
                OtherUnit::Bytes => "other-bytes",
                OtherUnit::BytesPerSecond => "other-bytes-per-sec",
                OtherUnit::Count => "other-count",
                OtherUnit::PerSecond => "other-per-sec",
                OtherUnit::Seconds => "other-seconds",
                OtherUnit::SecondsPerSecond => "other-seconds-per-sec",
                OtherUnit::Ratio => "other-ratio",
                OtherUnit::Plain => "other-values",
            },
        }
    }

    pub fn unit(self) -> Unit {
        match self {
            Group::Cpu | Group::CpuCores | Group::FdUse => Unit::Percent,
            Group::Memory => Unit::Bytes,
            Group::Network => Unit::BytesPerSecond,
            Group::Connections | Group::DbConnections => Unit::Count,
            Group::TcpErrors | Group::DbTransactions => Unit::PerSecond,
            Group::Other(unit) => match unit {
                OtherUnit::Percent => Unit::Percent,
                OtherUnit::Bytes => Unit::Bytes,
                OtherUnit::BytesPerSecond => Unit::BytesPerSecond,
                OtherUnit::Count => Unit::Count,
                OtherUnit::PerSecond => Unit::PerSecond,
                // Drawn in nanoseconds, so the axis reads 250ms like the latency charts.
                OtherUnit::Seconds => Unit::Duration,
                OtherUnit::SecondsPerSecond | OtherUnit::Ratio | OtherUnit::Plain => Unit::Number,
            },
        }
    }

    /// What a stored value is multiplied by to be drawn in [`Group::unit`].
    pub(crate) fn scale_factor(self) -> f64 {
        if self == Group::Other(OtherUnit::Seconds) {
            1e9
        } else {
            1.0
        }
    }

    /// Groups that keep a process group's colour.
    pub(crate) fn by_group_colour(self) -> bool {
        matches!(
            self,
            Group::Cpu | Group::Memory | Group::Connections | Group::FdUse
        )
    }
}

/// Where a series goes and how it reads there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub group: Group,
    /// A ceiling (host memory, fd limit): drawn gray and dashed, when near the use.
    pub limit: bool,
    pub style: Style,
    /// The legend entry, before any sampler prefix.
    pub label: String,
}

/// The chart `series` of `sampler` goes to, or `None` when no chart wants it: it
/// repeats another series (`host.memory_available_bytes` is total minus used;
/// `host.tcp_sockets{state=established}` is `host.tcp_established` counted the
/// expensive way) or only flattens the chart (`host.fds_max`, listening sockets).
pub fn place(sampler: &SamplerInfo, series: &SeriesInfo) -> Option<Place> {
    use ResourceSeries as S;
    let label = |key: &str| series.labels.get(key).map(String::as_str);
    let group = label("group").unwrap_or(&sampler.name);
    let database = label("database").unwrap_or("?");
    let interface = label("interface").unwrap_or("?");
    let on = |group: Group, style: Style, text: String| {
        Some(Place {
            group,
            limit: false,
            style,
            label: text,
        })
    };
    let line = |group: Group, text: &str| on(group, Style::Line, text.to_owned());
    let dashed = |group: Group, text: &str| on(group, Style::Dashed, text.to_owned());
    let ceiling = |group: Group, text: String| {
        Some(Place {
            group,
            limit: true,
            style: Style::Dashed,
            label: text,
        })
    };
    // Series names are namespaced (`host.`, `process.`, `postgres.`); Prometheus names
    // have no dots, so the name alone says what a series is, through an agent too.
    let Some(known) = ResourceSeries::from_name(&series.name) else {
        return line(
            Group::Other(OtherUnit::from_unit(&series.unit)),
            &series_text(series),
        );
    };
    match known {
        S::HostCpuPercent => match label("cpu") {
            None | Some("all") => line(Group::Cpu, "host"),
            // One core pegged while the host idles: a single-threaded bottleneck.
            Some(cpu) => line(Group::CpuCores, &format!("core {cpu}")),
        },
        S::HostCpuIowaitPercent => dashed(Group::Cpu, "host iowait"),
        S::HostCpuStealPercent => dashed(Group::Cpu, "host steal"),
        S::HostMemoryUsedBytes => line(Group::Memory, "host used"),
        S::HostSwapUsedBytes => dashed(Group::Memory, "host swap used"),
        S::HostMemoryTotalBytes => ceiling(Group::Memory, "host total".to_owned()),
        S::HostMemoryAvailableBytes => None,
        S::HostTcpEstablished => line(Group::Connections, "established"),
        S::HostTcpTimeWait => line(Group::Connections, "time_wait"),
        S::HostEphemeralPorts => ceiling(Group::Connections, "ephemeral ports".to_owned()),
        S::HostTcpSockets => match label("state") {
            Some("established" | "time_wait" | "listen") | None => None,
            Some(state) => line(Group::Connections, state),
        },
        S::HostTcpOrphans => line(Group::Connections, "orphans"),
        S::HostNetRxBytesPerSec => line(Group::Network, &format!("{interface} rx")),
        S::HostNetTxBytesPerSec => dashed(Group::Network, &format!("{interface} tx")),
        S::HostNetSpeedBytesPerSec => ceiling(Group::Network, format!("{interface} speed")),
        S::HostSwapOutBytesPerSec => line(
            Group::Other(OtherUnit::from_unit(&series.unit)),
            "host swap out",
        ),
        // Sent segments dwarf the errors the chart is for; retransmits are judged
        // against them in the diagnosis.
        S::HostTcpSegmentsSentPerSec => None,
        S::HostTcpRetransmitsPerSec => line(Group::TcpErrors, "retransmits"),
        S::HostTcpResetsSentPerSec => line(Group::TcpErrors, "resets sent"),
        S::HostTcpConnectFailuresPerSec => line(Group::TcpErrors, "connect failures"),
        S::HostTcpListenOverflowsPerSec => line(Group::TcpErrors, "listen overflows"),
        S::HostTcpListenDropsPerSec => line(Group::TcpErrors, "listen drops"),
        S::HostFdsMax => ceiling(
            Group::Other(OtherUnit::Count),
            S::HostFdsMax.name().to_owned(),
        ),
        S::ProcessCpuPercent => line(Group::Cpu, group),
        S::ProcessCpuLimitPercent => ceiling(Group::Cpu, format!("{group} allowance")),
        S::ProcessRssBytes => line(Group::Memory, group),
        S::ProcessMemoryLimitBytes => ceiling(Group::Memory, format!("{group} limit")),
        S::ProcessSockets => line(Group::Connections, &format!("{group} sockets")),
        S::ProcessFds => dashed(Group::Connections, &format!("{group} fds")),
        // Each process has its own limit; the use percent says how near the fullest is.
        S::ProcessFdLimit => None,
        S::ProcessFdUsePercent => line(Group::FdUse, group),
        S::ProcessCount => line(
            Group::Other(OtherUnit::Count),
            &format!("{group} processes"),
        ),
        S::ProcessThreads => line(Group::Other(OtherUnit::Count), &format!("{group} threads")),
        S::PostgresTransactionsPerSec => line(Group::DbTransactions, database),
        S::PostgresRollbacksPerSec => {
            dashed(Group::DbTransactions, &format!("{database} rollbacks"))
        }
        S::PostgresConnections => line(Group::DbConnections, database),
        S::PostgresBusyConnections => dashed(Group::DbConnections, &format!("{database} busy")),
        // Lines per second by pattern; `all` would dwarf the errors a reader looks for.
        S::LogLinesPerSec => match label("pattern") {
            Some("all") | None => None,
            Some(pattern) => line(
                Group::Other(OtherUnit::from_unit(&series.unit)),
                &format!("{} log: {pattern}", sampler.name),
            ),
        },
        S::LogExample => None,
        S::PostgresMaxConnections => ceiling(Group::DbConnections, "max_connections".to_owned()),
        // Charted as what they are: counts without a chart of their own.
        S::HostLoad1
        | S::HostSocketsUsed
        | S::HostUdpSockets
        | S::HostFdsOpen
        | S::HostTcpMemoryBytes
        | S::HostNetRxPacketsPerSec
        | S::HostNetTxPacketsPerSec => line(
            Group::Other(OtherUnit::from_unit(&series.unit)),
            &series_text(series),
        ),
    }
}

/// `name{key="value",...}`, as Prometheus writes a series.
pub(super) fn series_text(series: &SeriesInfo) -> String {
    if series.labels.is_empty() {
        return series.name.clone();
    }
    let labels: Vec<String> = series
        .labels
        .iter()
        .map(|(key, value)| format!("{key}=\"{value}\""))
        .collect();
    format!("{}{{{}}}", series.name, labels.join(","))
}
