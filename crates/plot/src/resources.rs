//! The system under test beside the load: which chart each resource series goes to
//! ([`place`], one table by series name) and the charts themselves ([`charts`]), on
//! the page's time axis under the request charts.
//!
//! Charts, each only when it has a series with a value: CPU (process groups in % of
//! one core, the host in % of all its cores), CPU per core, memory (RSS per group, host
//! memory in use), connections and file descriptors, file descriptors in % of the
//! limit, TCP errors per second, network traffic,
//! database transactions per second and connections, then everything else (Prometheus
//! metrics, per-core CPU, ...) in one chart per unit. A chart draws at most
//! [`MAX_SERIES_PER_CHART`] series, those with the highest peaks, and its caption
//! says how many it left out. Limits (host memory) are drawn, gray and dashed, only
//! when use comes near them, so 24 GiB does not flatten 700 MiB to the floor. A
//! group's fd limit is per process, so it is not drawn against the group's summed
//! fds: the fullest process's share of its limit has a chart of its own. Gaps break
//! lines and are shaded, named on hover.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use record::{ResourceSeries, SamplerInfo, SeriesInfo};

use crate::axis::Scale;
use crate::format;
use crate::model::x_seconds;
use crate::model::{Band, Chart, Series, Style, Unit};
use crate::sample_gather::{GapSpan, MAX_POINTS_PER_SERIES, SampleData, SeriesData};

/// The most series one resource chart draws; the rest are counted in its caption.
pub const MAX_SERIES_PER_CHART: usize = 8;
/// A limit is drawn when it is at most this many times its sampler's highest use.
const LIMIT_RELEVANCE: f64 = 4.0;
/// A chart whose series' peaks spread wider than this starts on a log scale (host
/// memory in GiB beside a process's RSS in MiB would flatten the process to zero).
const LOG_SPREAD: f64 = 50.0;
/// Gap bands shaded per chart; more are counted in the caption.
const MAX_BANDS_PER_CHART: usize = 64;
/// Samples further apart than this many intervals, with no gap entry between them
/// (frames the monitor dropped, a monitor restarted), break the line too.
const HOLE_INTERVALS: u64 = 3;
/// Legend entries longer than this (Prometheus names with many labels) are cut.
const MAX_LEGEND_CHARS: usize = 72;
/// Gap reasons named in a caption.
const MAX_CAPTION_REASONS: usize = 3;
const CHART_HEIGHT: f64 = 280.0;

/// Process groups keep their colour on every chart.
const GROUP_COLORS: [&str; 8] = [
    "#2563eb", "#0d9488", "#7c3aed", "#c2410c", "#0891b2", "#65a30d", "#db2777", "#4f46e5",
];
/// Host-wide series, darker and warmer, so they stand apart from the groups.
const HOST_COLORS: [&str; 6] = [
    "#111827", "#ea580c", "#a16207", "#dc2626", "#9333ea", "#0f766e",
];
/// Everything else, by position.
const PALETTE: [&str; 8] = [
    "#2563eb", "#ea580c", "#16a34a", "#9333ea", "#0891b2", "#dc2626", "#a16207", "#db2777",
];
const LIMIT_COLOR: &str = "#9ca3af";

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

    fn words(self) -> &'static str {
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
    fn scale_factor(self) -> f64 {
        if self == Group::Other(OtherUnit::Seconds) {
            1e9
        } else {
            1.0
        }
    }

    /// Groups that keep a process group's colour.
    fn by_group_colour(self) -> bool {
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
        S::HostTcpSockets => match label("state") {
            Some("established" | "time_wait" | "listen") | None => None,
            Some(state) => line(Group::Connections, state),
        },
        S::HostTcpOrphans => line(Group::Connections, "orphans"),
        S::HostNetRxBytesPerSec => line(Group::Network, &format!("{interface} rx")),
        S::HostNetTxBytesPerSec => dashed(Group::Network, &format!("{interface} tx")),
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
        S::ProcessRssBytes => line(Group::Memory, group),
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
fn series_text(series: &SeriesInfo) -> String {
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

/// A sampler's name without what the reader does not need: the scheme, the user
/// (whose password is `REDACTED` anyway) and a `/metrics` path.
fn short_name(sampler: &SamplerInfo) -> String {
    let Some((_, rest)) = sampler.name.split_once("://") else {
        return sampler.name.clone();
    };
    match rest.split_once('/') {
        Some((authority, path)) => {
            let host = authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host);
            if path == "metrics" {
                host.to_owned()
            } else {
                format!("{host}/{path}")
            }
        }
        None => rest
            .rsplit_once('@')
            .map_or(rest, |(_, host)| host)
            .to_owned(),
    }
}

/// Who a gap belongs to, for hover and captions: `host`, `nginx`, `prom 127.0.0.1:9113`.
fn sampler_text(sampler: &SamplerInfo) -> String {
    match sampler.kind.as_str() {
        "host" | "process" => sampler.name.clone(),
        kind => format!("{kind} {}", short_name(sampler)),
    }
}

/// Host-wide series first, then process groups, databases, scrapes.
fn kind_rank(kind: &str) -> u8 {
    match kind {
        "host" => 0,
        "process" => 1,
        "postgres" => 2,
        "prom" => 3,
        _ => 4,
    }
}

/// The resource charts of a page, on the time axis from `origin_unix_ns`.
pub fn charts(data: &SampleData, origin_unix_ns: u64) -> Vec<Chart> {
    let mut groups: BTreeMap<Group, Vec<&SeriesData>> = BTreeMap::new();
    for series in data.series.iter().filter(|s| s.trace.values > 0) {
        groups.entry(series.place.group).or_default().push(series);
    }
    groups
        .into_iter()
        .filter_map(|(group, members)| chart(data, group, &members, origin_unix_ns))
        .collect()
}

fn sampler_of<'a>(data: &'a SampleData, series: &SeriesData) -> Option<&'a SamplerInfo> {
    let info = data.tables.series.get(series.id as usize)?;
    data.tables.samplers.get(info.sampler as usize)
}

fn sampler_id(data: &SampleData, series: &SeriesData) -> u32 {
    data.tables
        .series
        .get(series.id as usize)
        .map_or(u32::MAX, |info| info.sampler)
}

/// The chart of one group, or `None` when nothing in it has a value.
fn chart(
    data: &SampleData,
    group: Group,
    members: &[&SeriesData],
    origin_unix_ns: u64,
) -> Option<Chart> {
    let mut mains: Vec<&SeriesData> = members.iter().copied().filter(|s| !s.place.limit).collect();
    mains.sort_by(|a, b| b.trace.peak.total_cmp(&a.trace.peak).then(a.id.cmp(&b.id)));
    let left_out = mains.len().saturating_sub(MAX_SERIES_PER_CHART);
    mains.truncate(MAX_SERIES_PER_CHART);
    if mains.is_empty() {
        return None;
    }
    // A limit is drawn when its own sampler's use comes near it.
    let (mut limits, mut far_limits) = (Vec::new(), Vec::new());
    for limit in members.iter().copied().filter(|s| s.place.limit) {
        let sampler = sampler_id(data, limit);
        let used = mains
            .iter()
            .filter(|s| sampler_id(data, s) == sampler)
            .map(|s| s.trace.peak)
            .fold(f64::NAN, f64::max);
        if used.is_nan() {
            continue;
        }
        if limit.trace.peak <= used * LIMIT_RELEVANCE {
            limits.push(limit);
        } else {
            far_limits.push(limit);
        }
    }
    let mut drawn: Vec<&SeriesData> = mains.iter().copied().chain(limits).collect();
    drawn.sort_by_key(|s| {
        let kind = sampler_of(data, s).map_or(4, |sampler| kind_rank(&sampler.kind));
        (kind, sampler_id(data, s), s.id)
    });
    let names = legend_names(data, group, &drawn);
    let colors = colors(data, group, &drawn);
    let factor = group.scale_factor();
    let unit = group.unit();
    let series: Vec<Series> = drawn
        .iter()
        .zip(names)
        .zip(colors)
        .map(|((one, name), color)| {
            let peak = legend_value(unit, one.trace.peak * factor);
            let name = if one.place.limit {
                format!("{name}: {peak}")
            } else {
                format!("{name}: peak {peak}")
            };
            let step_ns = data.step_ns(sampler_id(data, one));
            let (x, y) = points(
                &one.trace.points,
                step_ns.max(one.trace.bucket_ns),
                origin_unix_ns,
                factor,
            );
            let style = if one.place.limit {
                Style::Dashed
            } else {
                one.place.style
            };
            Series::new(name, color, style).with_points(x, y)
        })
        .collect();
    let mut series = series;
    if group == Group::FdUse {
        series.extend(full_limit_line(&series));
    }
    let (scale, toggle) = scale(group, &mains);
    let mut chart = Chart::time_series(group.id(), title(data, group, &drawn), unit, series)
        .with_scale(scale, toggle);
    chart.height = CHART_HEIGHT;
    let (bands, band_note) = bands(data, &drawn, origin_unix_ns);
    chart.bands = bands;
    let mut caption = caption(data, group, &drawn);
    if left_out > 0 {
        let _ = write!(
            caption,
            " Showing the {MAX_SERIES_PER_CHART} series with the highest peaks of {}.",
            MAX_SERIES_PER_CHART + left_out
        );
    }
    for limit in far_limits {
        let _ = write!(
            caption,
            " {} ({}) is not drawn: far above the use.",
            limit.place.label,
            legend_value(unit, limit.trace.peak * factor)
        );
    }
    if drawn.iter().any(|s| s.trace.bucket_ns > 0) {
        let _ = write!(
            caption,
            " Series with more samples than the chart has room for ({}, or -threshold when \
             lower) keep, in every stretch of time, their lowest and highest value.",
            format::grouped(MAX_POINTS_PER_SERIES as u64)
        );
    }
    caption.push_str(&band_note);
    chart.caption = caption;
    Some(chart)
}

/// The limit itself (100%) across the series' span, so the distance to it shows.
fn full_limit_line(series: &[Series]) -> Option<Series> {
    let xs = series.iter().flat_map(|s| s.x.iter().copied());
    let (first_s, last_s) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    (first_s < last_s).then(|| {
        Series::new("limit: 100%", LIMIT_COLOR, Style::Dashed)
            .with_points(vec![first_s, last_s], vec![100.0, 100.0])
    })
}

/// A value in a legend or caption: whole counts exactly (`1,024`, not `1.02k`: a limit
/// reads as the number it is), anything else as on the axis.
fn legend_value(unit: Unit, value: f64) -> String {
    if unit == Unit::Count && value.fract() == 0.0 && (0.0..1e15).contains(&value) {
        format::grouped(value as u64)
    } else {
        format::value(unit, value)
    }
}

/// Legend names: the place's label, after the sampler's short name when the chart
/// draws series of two samplers of one kind (two hosts through agents, two servers).
fn legend_names(data: &SampleData, group: Group, drawn: &[&SeriesData]) -> Vec<String> {
    let mut samplers_of_kind: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for one in drawn {
        if let Some(sampler) = sampler_of(data, one) {
            let ids = samplers_of_kind.entry(sampler.kind.as_str()).or_default();
            let id = sampler_id(data, one);
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    let distinct = samplers_of_kind.values().map(Vec::len).sum::<usize>();
    drawn
        .iter()
        .map(|one| {
            let sampler = sampler_of(data, one);
            let several = sampler.is_some_and(|s| {
                s.kind != "process"
                    && (samplers_of_kind.get(s.kind.as_str()).map_or(0, Vec::len) > 1
                        || matches!(group, Group::Other(_)) && distinct > 1)
            });
            let name = match sampler {
                Some(sampler) if several => format!("{} {}", short_name(sampler), one.place.label),
                _ => one.place.label.clone(),
            };
            cut(&name, MAX_LEGEND_CHARS)
        })
        .collect()
}

fn cut(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(chars - 1).collect();
    out.push('…');
    out
}

/// Process groups by their page-wide colour on the CPU, memory and connections
/// charts; limits gray; everything else by position.
fn colors(data: &SampleData, group: Group, drawn: &[&SeriesData]) -> Vec<&'static str> {
    let process_samplers: Vec<usize> = data
        .tables
        .samplers
        .iter()
        .enumerate()
        .filter(|(_, s)| s.kind == "process")
        .map(|(id, _)| id)
        .collect();
    let (mut host, mut other) = (0, 0);
    drawn
        .iter()
        .map(|one| {
            if one.place.limit {
                return LIMIT_COLOR;
            }
            let kind = sampler_of(data, one).map_or("", |s| s.kind.as_str());
            let sampler = sampler_id(data, one) as usize;
            if group.by_group_colour() && kind == "process" {
                let position = process_samplers.iter().position(|&id| id == sampler);
                return GROUP_COLORS[position.unwrap_or(0) % GROUP_COLORS.len()];
            }
            if group.by_group_colour() {
                host += 1;
                return HOST_COLORS[(host - 1) % HOST_COLORS.len()];
            }
            other += 1;
            PALETTE[(other - 1) % PALETTE.len()]
        })
        .collect()
}

/// x in seconds from the origin and y in the chart's unit; NaN where the trace has a
/// gap, and between two samples further apart than [`HOLE_INTERVALS`] intervals.
fn points(
    points: &[(u64, f64)],
    step_ns: u64,
    origin_unix_ns: u64,
    factor: f64,
) -> (Vec<f64>, Vec<f64>) {
    let hole_ns = step_ns.saturating_mul(HOLE_INTERVALS);
    let mut x = Vec::with_capacity(points.len());
    let mut y = Vec::with_capacity(points.len());
    let mut previous: Option<u64> = None;
    for &(at, value) in points {
        if let Some(before) = previous
            && at.saturating_sub(before) > hole_ns
        {
            x.push(x_seconds(origin_unix_ns, before + (at - before) / 2));
            y.push(f64::NAN);
        }
        x.push(x_seconds(origin_unix_ns, at));
        y.push(value * factor);
        previous = Some(at);
    }
    (x, y)
}

/// Percentages stay linear (0-100 reads at a glance); other charts start on a log
/// scale when their series' peaks spread wide, with the page's switch.
fn scale(group: Group, mains: &[&SeriesData]) -> (Scale, bool) {
    if group.unit() == Unit::Percent {
        return (Scale::Linear, false);
    }
    let peaks = mains.iter().map(|s| s.trace.peak).filter(|p| *p > 0.0);
    let (low, high) = peaks.fold((f64::INFINITY, 0.0f64), |(low, high), p| {
        (low.min(p), high.max(p))
    });
    if high > LOG_SPREAD * low {
        (Scale::Log, true)
    } else {
        (Scale::Linear, true)
    }
}

fn title(data: &SampleData, group: Group, drawn: &[&SeriesData]) -> String {
    match group {
        Group::Cpu => "CPU".to_owned(),
        Group::CpuCores => "CPU per core".to_owned(),
        Group::Memory => "Memory".to_owned(),
        Group::Connections => "Connections and file descriptors".to_owned(),
        Group::FdUse => "File descriptors, % of the limit".to_owned(),
        Group::TcpErrors => "TCP errors per second".to_owned(),
        Group::Network => "Network traffic".to_owned(),
        Group::DbTransactions => "Database transactions per second".to_owned(),
        Group::DbConnections => "Database connections".to_owned(),
        Group::Other(unit) => {
            let mut kinds: Vec<&str> = drawn
                .iter()
                .filter_map(|s| sampler_of(data, s).map(|s| s.kind.as_str()))
                .collect();
            kinds.dedup();
            let who = match kinds.as_slice() {
                ["prom"] => "Prometheus",
                ["host"] => "Host",
                ["process"] => "Processes",
                ["postgres"] => "PostgreSQL",
                _ => "More series",
            };
            format!("{who}: {}", unit.words())
        }
    }
}

/// The stored name of a drawn series.
fn series_name<'a>(data: &'a SampleData, series: &SeriesData) -> &'a str {
    data.tables
        .series
        .get(series.id as usize)
        .map_or("", |info| info.name.as_str())
}

/// What a chart shows, saying only what it draws.
fn caption(data: &SampleData, group: Group, drawn: &[&SeriesData]) -> String {
    use ResourceSeries as S;
    let has = |name: &str| drawn.iter().any(|s| series_name(data, s) == name);
    let any = |names: &[&str]| names.iter().any(|name| has(name));
    let mut text = String::new();
    match group {
        Group::Cpu => {
            text.push_str("CPU time (user + system) between samples.");
            if has(S::ProcessCpuPercent.name()) {
                text.push_str(
                    " Process groups (a process and all its descendants) in % of one core, \
                     so 200% is two cores busy.",
                );
            }
            if has(S::HostCpuPercent.name()) {
                let cores = core_count(data);
                let _ = write!(
                    text,
                    " The host in % of all its {}cores (100% = every core busy).",
                    cores.map_or_else(String::new, |n| format!("{n} "))
                );
            }
            if any(&[
                S::HostCpuIowaitPercent.name(),
                S::HostCpuStealPercent.name(),
            ]) {
                text.push_str(
                    " Dashed: time the host's cores waited for I/O (iowait) or had stolen \
                     by the hypervisor (steal).",
                );
            }
        }
        Group::CpuCores => text.push_str(
            "Each core's busy share between samples. One core at 100% while the others \
             have room points at a single-threaded bottleneck, or at interrupts handled \
             on one core.",
        ),
        Group::Memory => {
            if has(S::ProcessRssBytes.name()) {
                text.push_str(
                    "Resident memory (RSS) of each process group: its processes' own \
                     pages, with pages they share counted once. ",
                );
            }
            if has(S::HostMemoryUsedBytes.name()) {
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
            if has(S::HostSwapUsedBytes.name()) {
                text.push_str("Dashed: swap in use. ");
            }
            text.push_str("Binary units: 1 GiB is 1024 MiB.");
        }
        Group::Connections => {
            if any(&[
                S::HostTcpEstablished.name(),
                S::HostTcpTimeWait.name(),
                S::HostTcpSockets.name(),
            ]) {
                text.push_str(
                    "The host's TCP connections: established (the kernel's count, \
                     close_wait included) and time_wait; other states counted socket by \
                     socket. ",
                );
            }
            if any(&[S::ProcessSockets.name(), S::ProcessFds.name()]) {
                text.push_str(
                    "Per process group, summed over its processes: open sockets, and \
                     file descriptors (dashed).",
                );
            }
        }
        Group::FdUse => text.push_str(
            "Per process group: the open file descriptors of the process nearest its \
             limit (RLIMIT_NOFILE), in % of that limit. Each process has its own limit; at \
             100% its accept() and open() fail with \"too many open files\".",
        ),
        Group::TcpErrors => text.push_str(
            "Host-wide, per second: segments retransmitted, resets sent, connection \
             attempts that failed, and listen queue overflows and drops (connections the \
             kernel discarded because the server did not accept them fast enough).",
        ),
        Group::Network => text.push_str(
            "Bytes received (rx) and sent (tx, dashed) per second, per network interface. \
             Binary units: 1 MiB/s is 1024 KiB/s.",
        ),
        Group::DbTransactions => text.push_str(
            "PostgreSQL transactions (commits and rollbacks; rollbacks alone dashed) per \
             second per database, from pg_stat_database. PostgreSQL publishes these \
             counters when a transaction ends, about once a second per backend at most, \
             so the line is jumpy while its sum is exact.",
        ),
        Group::DbConnections => text.push_str(
            "Backends connected to each PostgreSQL database (pg_stat_database.numbackends, \
             less the sampler's own).",
        ),
        Group::Other(unit) => {
            let _ = write!(
                text,
                "Series without a chart of their own, in {}.",
                unit.words()
            );
            let prom = drawn
                .iter()
                .any(|s| sampler_of(data, s).is_some_and(|s| s.kind == "prom"));
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
        }
    }
    text.trim_end().to_owned()
}

/// The host's cores, when it samples them one by one (one host sampler).
fn core_count(data: &SampleData) -> Option<usize> {
    use ResourceSeries as S;
    let hosts = data
        .tables
        .samplers
        .iter()
        .filter(|s| s.kind == "host")
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

/// The chart's gap bands (overlapping ones merged, their reasons listed together) and
/// the caption's sentence about them.
fn bands(data: &SampleData, drawn: &[&SeriesData], origin_unix_ns: u64) -> (Vec<Band>, String) {
    let samplers: Vec<u32> = drawn.iter().map(|s| sampler_id(data, s)).collect();
    let relevant = |span: &&GapSpan| match span.series {
        None => samplers.contains(&span.sampler),
        Some(series) => drawn.iter().any(|s| s.id == series),
    };
    let mut raw: Vec<(f64, f64, String)> = Vec::new();
    let mut reasons: Vec<(String, u64)> = Vec::new();
    for span in data.spans.iter().filter(relevant) {
        let Some(sampler) = data.tables.samplers.get(span.sampler as usize) else {
            continue;
        };
        let mut who = sampler_text(sampler);
        if let Some(series) = span.series {
            let label = drawn
                .iter()
                .find(|s| s.id == series)
                .map_or_else(String::new, |s| s.place.label.clone());
            if !label.is_empty() && label != who {
                let _ = write!(who, " {label}");
            }
        }
        let reason = data
            .reasons
            .get(span.reason as usize)
            .map_or("", String::as_str);
        let label = format!("{who}: {reason}");
        match reasons.iter_mut().find(|(text, _)| *text == label) {
            Some((_, count)) => *count += span.count,
            None => reasons.push((label.clone(), span.count)),
        }
        // A gap stands for the interval around its tick.
        let half_ns = data.step_ns(span.sampler) / 2;
        raw.push((
            x_seconds(origin_unix_ns, span.first_unix_ns.saturating_sub(half_ns)),
            x_seconds(origin_unix_ns, span.last_unix_ns.saturating_add(half_ns)),
            label,
        ));
    }
    if raw.is_empty() {
        return (Vec::new(), String::new());
    }
    raw.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut bands: Vec<Band> = Vec::new();
    for (from_s, to_s, label) in raw {
        match bands.last_mut() {
            Some(last) if from_s <= last.to_s => {
                last.to_s = last.to_s.max(to_s);
                if !last.label.split("; ").any(|l| l == label) {
                    let _ = write!(last.label, "; {label}");
                }
            }
            _ => bands.push(Band {
                from_s,
                to_s,
                label,
            }),
        }
    }
    let mut note = String::from(" Shaded: no sample (");
    let named: Vec<String> = reasons
        .iter()
        .take(MAX_CAPTION_REASONS)
        .map(|(label, count)| {
            let samples = if *count == 1 { "sample" } else { "samples" };
            format!("{label}: {count} {samples}")
        })
        .collect();
    note.push_str(&named.join("; "));
    if reasons.len() > MAX_CAPTION_REASONS {
        let _ = write!(note, "; and {} more", reasons.len() - MAX_CAPTION_REASONS);
    }
    note.push_str(").");
    if bands.len() > MAX_BANDS_PER_CHART {
        let _ = write!(
            note,
            " The first {MAX_BANDS_PER_CHART} of {} gap stretches are shaded.",
            bands.len()
        );
        bands.truncate(MAX_BANDS_PER_CHART);
    }
    if data.dropped_spans > 0 {
        let _ = write!(note, " {} more gaps were not kept.", data.dropped_spans);
    }
    (bands, note)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use record::{SampleTables, SeriesKind};

    use super::*;
    use crate::sample_gather::Trace;

    fn sampler(kind: &str, name: &str) -> SamplerInfo {
        SamplerInfo {
            kind: kind.to_owned(),
            name: name.to_owned(),
        }
    }

    fn series(name: &str, labels: &[(&str, &str)], unit: &str) -> SeriesInfo {
        SeriesInfo {
            sampler: 0,
            name: name.to_owned(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
            unit: unit.to_owned(),
            kind: SeriesKind::Gauge,
        }
    }

    /// The series names `docs/MONITOR.md` lists in its table of loadlab's samplers.
    fn documented_series() -> Vec<String> {
        let doc = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/MONITOR.md"
        ));
        let mut names = Vec::new();
        for line in doc.lines() {
            let Some(kind) = ["host", "process", "postgres"]
                .into_iter()
                .find(|kind| line.starts_with(&format!("| {kind} |")))
            else {
                continue;
            };
            let cells: Vec<&str> = line.split('|').collect();
            for name in cells[2].split('`').skip(1).step_by(2) {
                if name.starts_with(&format!("{kind}.")) {
                    names.push(name.to_owned());
                }
            }
        }
        names
    }

    /// Every series the doc lists is one the code knows and lands on the chart meant
    /// for it (or, on purpose, on none): a renamed series cannot slip into "other".
    #[test]
    fn every_documented_series_reaches_its_chart() {
        let documented = documented_series();
        let known: Vec<&str> = ResourceSeries::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(
            documented, known,
            "docs/MONITOR.md and ResourceSeries disagree"
        );
        // (series, unit, chart id): None where no chart wants it (see `place`).
        let charts: &[(&str, &str, Option<&str>)] = &[
            ("host.cpu_percent", "percent", Some("cpu")),
            ("host.cpu_iowait_percent", "percent", Some("cpu")),
            ("host.cpu_steal_percent", "percent", Some("cpu")),
            ("host.memory_total_bytes", "bytes", Some("memory")),
            ("host.memory_available_bytes", "bytes", None),
            ("host.memory_used_bytes", "bytes", Some("memory")),
            ("host.swap_used_bytes", "bytes", Some("memory")),
            ("host.net_rx_bytes_per_sec", "bytes/s", Some("network")),
            ("host.net_tx_bytes_per_sec", "bytes/s", Some("network")),
            ("host.net_rx_packets_per_sec", "1/s", Some("other-per-sec")),
            ("host.net_tx_packets_per_sec", "1/s", Some("other-per-sec")),
            ("host.tcp_established", "count", Some("connections")),
            ("host.tcp_time_wait", "count", Some("connections")),
            ("host.tcp_sockets", "count", Some("connections")),
            ("host.sockets_used", "count", Some("other-count")),
            ("host.tcp_orphans", "count", Some("connections")),
            ("host.udp_sockets", "count", Some("other-count")),
            ("host.tcp_memory_bytes", "bytes", Some("other-bytes")),
            ("host.tcp_retransmits_per_sec", "1/s", Some("tcp-errors")),
            ("host.tcp_resets_sent_per_sec", "1/s", Some("tcp-errors")),
            (
                "host.tcp_connect_failures_per_sec",
                "1/s",
                Some("tcp-errors"),
            ),
            (
                "host.tcp_listen_overflows_per_sec",
                "1/s",
                Some("tcp-errors"),
            ),
            ("host.tcp_listen_drops_per_sec", "1/s", Some("tcp-errors")),
            ("host.fds_open", "count", Some("other-count")),
            ("host.fds_max", "count", Some("other-count")),
            ("host.load1", "count", Some("other-count")),
            ("process.cpu_percent", "percent", Some("cpu")),
            ("process.rss_bytes", "bytes", Some("memory")),
            ("process.count", "count", Some("other-count")),
            ("process.threads", "count", Some("other-count")),
            ("process.fds", "count", Some("connections")),
            ("process.sockets", "count", Some("connections")),
            ("process.fd_limit", "count", None),
            ("process.fd_use_percent", "percent", Some("fd-use")),
            (
                "postgres.connections",
                "count",
                Some("database-connections"),
            ),
            (
                "postgres.transactions_per_sec",
                "1/s",
                Some("database-transactions"),
            ),
            (
                "postgres.rollbacks_per_sec",
                "1/s",
                Some("database-transactions"),
            ),
        ];
        let labels = [
            ("cpu", "all"),
            ("state", "syn_recv"),
            ("group", "nginx"),
            ("database", "app"),
            ("interface", "eth0"),
        ];
        for name in &documented {
            let kind = name.split('.').next().unwrap();
            let Some(&(_, unit, want)) = charts.iter().find(|(n, ..)| n == name) else {
                panic!("{name}: no chart said for it in this test");
            };
            let place = place(&sampler(kind, kind), &series(name, &labels, unit));
            assert_eq!(place.map(|p| p.group.id()), want, "{name}");
        }
    }

    #[test]
    fn series_go_to_their_charts() {
        let host = sampler("host", "host");
        let nginx = sampler("process", "nginx");
        let pg = sampler("postgres", "postgres://u:REDACTED@127.0.0.1:5432/db");
        let prom = sampler("prom", "http://127.0.0.1:9113/metrics");
        // (sampler, series, labels, unit) -> (chart id, limit, dashed, label), or None.
        type Row<'a> = (
            &'a SamplerInfo,
            &'a str,
            &'a [(&'a str, &'a str)],
            &'a str,
            Option<(&'a str, bool, bool, &'a str)>,
        );
        let rows: &[Row<'_>] = &[
            (
                &host,
                "host.cpu_percent",
                &[("cpu", "all")],
                "percent",
                Some(("cpu", false, false, "host")),
            ),
            (
                &host,
                "host.cpu_percent",
                &[("cpu", "3")],
                "percent",
                Some(("cpu-cores", false, false, "core 3")),
            ),
            (
                &host,
                "host.cpu_iowait_percent",
                &[("cpu", "all")],
                "percent",
                Some(("cpu", false, true, "host iowait")),
            ),
            (
                &host,
                "host.memory_used_bytes",
                &[],
                "bytes",
                Some(("memory", false, false, "host used")),
            ),
            (
                &host,
                "host.memory_total_bytes",
                &[],
                "bytes",
                Some(("memory", true, true, "host total")),
            ),
            (&host, "host.memory_available_bytes", &[], "bytes", None),
            (
                &host,
                "host.tcp_sockets",
                &[("state", "close_wait")],
                "count",
                Some(("connections", false, false, "close_wait")),
            ),
            (
                &host,
                "host.tcp_sockets",
                &[("state", "established")],
                "count",
                None,
            ),
            (
                &host,
                "host.tcp_sockets",
                &[("state", "listen")],
                "count",
                None,
            ),
            (
                &host,
                "host.net_tx_bytes_per_sec",
                &[("interface", "eth0")],
                "bytes/s",
                Some(("network", false, true, "eth0 tx")),
            ),
            (
                &host,
                "host.tcp_listen_drops_per_sec",
                &[],
                "1/s",
                Some(("tcp-errors", false, false, "listen drops")),
            ),
            (
                &host,
                "host.load1",
                &[],
                "count",
                Some(("other-count", false, false, "host.load1")),
            ),
            (
                &nginx,
                "process.cpu_percent",
                &[("group", "nginx")],
                "percent",
                Some(("cpu", false, false, "nginx")),
            ),
            (
                &nginx,
                "process.rss_bytes",
                &[],
                "bytes",
                Some(("memory", false, false, "nginx")),
            ),
            (
                &nginx,
                "process.fds",
                &[("group", "nginx")],
                "count",
                Some(("connections", false, true, "nginx fds")),
            ),
            (
                &nginx,
                "process.fd_limit",
                &[("group", "nginx")],
                "count",
                None,
            ),
            (
                &nginx,
                "process.fd_use_percent",
                &[("group", "nginx")],
                "percent",
                Some(("fd-use", false, false, "nginx")),
            ),
            (
                &pg,
                "postgres.transactions_per_sec",
                &[("database", "shop")],
                "1/s",
                Some(("database-transactions", false, false, "shop")),
            ),
            (
                &pg,
                "postgres.rollbacks_per_sec",
                &[("database", "shop")],
                "1/s",
                Some(("database-transactions", false, true, "shop rollbacks")),
            ),
            (
                &pg,
                "postgres.connections",
                &[("database", "shop")],
                "count",
                Some(("database-connections", false, false, "shop")),
            ),
            (
                &prom,
                "http_request_duration_seconds",
                &[("quantile", "0.99")],
                "seconds",
                Some((
                    "other-seconds",
                    false,
                    false,
                    "http_request_duration_seconds{quantile=\"0.99\"}",
                )),
            ),
            (
                &prom,
                "nginx_connections_active",
                &[],
                "",
                Some(("other-values", false, false, "nginx_connections_active")),
            ),
            (
                &prom,
                "odd_unit",
                &[],
                "furlongs",
                Some(("other-values", false, false, "odd_unit")),
            ),
        ];
        for (sampler, name, labels, unit, want) in rows {
            let got = place(sampler, &series(name, labels, unit))
                .map(|p| (p.group.id(), p.limit, p.style == Style::Dashed, p.label));
            let want = want.map(|(id, limit, dashed, label)| (id, limit, dashed, label.to_owned()));
            assert_eq!(got, want, "{name} {labels:?}");
        }
    }

    #[test]
    fn sampler_names_are_shortened() {
        let rows = [
            ("http://127.0.0.1:9113/metrics", "127.0.0.1:9113"),
            (
                "http://127.0.0.1:9113/custom/path",
                "127.0.0.1:9113/custom/path",
            ),
            ("postgres://loadlab:REDACTED@db:5432/shop", "db:5432/shop"),
            ("postgres://db:5432", "db:5432"),
            ("nginx@203.0.113.5:7070", "nginx@203.0.113.5:7070"),
            ("host", "host"),
        ];
        for (name, want) in rows {
            assert_eq!(short_name(&sampler("prom", name)), want, "{name}");
        }
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
    }

    fn traced(id: u32, place: Place, values: &[(u64, f64)]) -> SeriesData {
        let mut trace = Trace::new();
        for &(second, value) in values {
            trace.push(second * 1_000_000_000, value, 4000);
        }
        SeriesData { id, place, trace }
    }

    #[test]
    fn charts_cap_series_keep_limits_near_use_and_break_at_holes() {
        let mut tables = SampleTables {
            samplers: vec![
                sampler("host", "host"),
                sampler("prom", "http://h:1/metrics"),
            ],
            series: Vec::new(),
        };
        let mut data = SampleData::default();
        // Memory in use near the host's total: the total is drawn as a ceiling.
        for (name, values) in [
            (
                "host.memory_used_bytes",
                vec![(0, 900.0), (1, 950.0), (2, f64::NAN), (10, 990.0)],
            ),
            ("host.memory_total_bytes", vec![(0, 1024.0), (1, 1024.0)]),
        ] {
            let info = series(name, &[], "bytes");
            let place = place(&tables.samplers[0], &info).unwrap();
            data.series
                .push(traced(tables.series.len() as u32, place, &values));
            tables.series.push(info);
        }
        // Twelve Prometheus gauges: the eight highest peaks are drawn.
        for i in 0..12u32 {
            let info = SeriesInfo {
                sampler: 1,
                ..series(&format!("g{i}"), &[], "count")
            };
            let place = place(&tables.samplers[1], &info).unwrap();
            data.series.push(traced(
                tables.series.len() as u32,
                place,
                &[(0, f64::from(i)), (1, 1.0)],
            ));
            tables.series.push(info);
        }
        data.tables = tables;
        data.batches = 1;
        let charts = charts(&data, 0);
        let ids: Vec<&str> = charts.iter().map(|c| c.id).collect();
        assert_eq!(ids, ["memory", "other-count"]);
        let memory = &charts[0];
        let names: Vec<&str> = memory.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["host used: peak 990 B", "host total: 1 KiB"]);
        // The gap at 2 s and the hole from 2 s to 10 s both break the line.
        let used = &memory.series[0];
        assert_eq!(used.x, [0.0, 1.0, 2.0, 6.0, 10.0]);
        assert!(used.y[2].is_nan() && used.y[3].is_nan() && used.y[4] == 990.0);
        let other = &charts[1];
        assert_eq!(other.series.len(), MAX_SERIES_PER_CHART);
        assert_eq!(other.title, "Prometheus: counts");
        assert!(other.series.iter().all(|s| !s.name.starts_with("g0:")));
        assert!(
            other.caption.contains("highest peaks of 12"),
            "{}",
            other.caption
        );

        // A far limit is named in the caption instead.
        let mut far = data.clone();
        far.series[1].trace = Trace::new();
        far.series[1].trace.push(0, 1_048_576.0, 4000);
        let memory = &super::charts(&far, 0)[0];
        assert_eq!(memory.series.len(), 1);
        assert!(
            memory.caption.contains("host total (1 MiB) is not drawn"),
            "{}",
            memory.caption
        );
    }

    #[test]
    fn gap_spans_become_merged_bands() {
        let tables = SampleTables {
            samplers: vec![sampler("process", "nginx")],
            series: vec![series(
                "process.cpu_percent",
                &[("group", "nginx")],
                "percent",
            )],
        };
        let place = place(&tables.samplers[0], &tables.series[0]).unwrap();
        let s = 1_000_000_000;
        let span = |first: u64, last: u64, reason: u32, count| GapSpan {
            sampler: 0,
            series: None,
            reason,
            first_unix_ns: first * s,
            last_unix_ns: last * s,
            count,
        };
        let data = SampleData {
            series: vec![traced(0, place, &[(0, 10.0), (9, 20.0)])],
            tables,
            steps_ns: vec![s],
            spans: vec![span(3, 5, 0, 3), span(5, 6, 1, 2), span(8, 8, 0, 1)],
            reasons: vec!["no process matches nginx".to_owned(), "gone".to_owned()],
            batches: 10,
            ..SampleData::default()
        };
        let chart = &charts(&data, 0)[0];
        let bands: Vec<(f64, f64, &str)> = chart
            .bands
            .iter()
            .map(|b| (b.from_s, b.to_s, b.label.as_str()))
            .collect();
        assert_eq!(
            bands,
            [
                (2.5, 6.5, "nginx: no process matches nginx; nginx: gone"),
                (7.5, 8.5, "nginx: no process matches nginx")
            ]
        );
        assert!(
            chart.caption.contains("Shaded: no sample (nginx: no process matches nginx: 4 samples; nginx: gone: 2 samples)."),
            "{}",
            chart.caption
        );
    }
}
