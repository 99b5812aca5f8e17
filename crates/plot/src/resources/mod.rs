//! The system under test beside the load: which chart each resource series goes to
//! ([`place`], one table by series name, `place.rs`) and the charts themselves
//! ([`charts`], here), on the page's time axis under the request charts. Legends are
//! named in `legend.rs`, coloured in `colors.rs`, captioned in `caption.rs`, and gaps
//! shaded in `bands.rs`.
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

mod bands;
mod caption;
mod colors;
mod legend;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use record::{SamplerInfo, SamplerKind};

use crate::axis::Scale;
use crate::format;
use crate::model::{Chart, Series, Style, Unit, x_seconds};
use crate::sample_gather::{MAX_POINTS_PER_SERIES, SampleData, SeriesData};

use crate::place::Group;
use bands::bands;
use caption::caption;
use colors::{LIMIT_COLOR, colors};
use legend::{kind_rank, legend_names, legend_value};

/// The most series one resource chart draws; the rest are counted in its caption.
pub const MAX_SERIES_PER_CHART: usize = 8;

/// A limit is drawn when it is at most this many times its sampler's highest use.
const LIMIT_RELEVANCE: f64 = 4.0;

/// A chart whose series' peaks spread wider than this starts on a log scale (host
/// memory in GiB beside a process's RSS in MiB would flatten the process to zero).
const LOG_SPREAD: f64 = 50.0;

/// Samples further apart than this many intervals, with no gap entry between them
/// (frames the monitor dropped, a monitor restarted), break the line too.
const HOLE_INTERVALS: u64 = 3;

const CHART_HEIGHT: f64 = 280.0;

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
    let (mains, left_out) = main_series(members);
    if mains.is_empty() {
        return None;
    }
    let (limits, far_limits) = split_limits(data, members, &mains);
    let mut drawn: Vec<&SeriesData> = mains.iter().copied().chain(limits).collect();
    drawn.sort_by_key(|s| {
        let kind = sampler_of(data, s).map_or(4, |sampler| kind_rank(&sampler.kind));
        (kind, sampler_id(data, s), s.id)
    });
    let mut series = drawn_series(data, group, &drawn, origin_unix_ns);
    if group == Group::FdUse {
        series.extend(full_limit_line(&series));
    }
    let (scale, toggle) = scale(group, &mains);
    let mut chart =
        Chart::time_series(group.id(), title(data, group, &drawn), group.unit(), series)
            .with_scale(scale, toggle);
    chart.height = CHART_HEIGHT;
    let (bands, band_note) = bands(data, &drawn, origin_unix_ns);
    chart.bands = bands;
    let mut caption = caption(data, group, &drawn);
    left_out_notes(&mut caption, group, left_out, &far_limits);
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

/// The series a chart draws for their own sake (not limits): those with the highest
/// peaks, at most [`MAX_SERIES_PER_CHART`], and how many were left out.
fn main_series<'a>(members: &[&'a SeriesData]) -> (Vec<&'a SeriesData>, usize) {
    let mut mains: Vec<&SeriesData> = members.iter().copied().filter(|s| !s.place.limit).collect();
    mains.sort_by(|a, b| b.trace.peak.total_cmp(&a.trace.peak).then(a.id.cmp(&b.id)));
    let left_out = mains.len().saturating_sub(MAX_SERIES_PER_CHART);
    mains.truncate(MAX_SERIES_PER_CHART);
    (mains, left_out)
}

/// The group's limits, split into those near their own sampler's use (drawn) and those
/// far above it (only named in the caption); limits of samplers with nothing drawn are
/// dropped.
fn split_limits<'a>(
    data: &SampleData,
    members: &[&'a SeriesData],
    mains: &[&SeriesData],
) -> (Vec<&'a SeriesData>, Vec<&'a SeriesData>) {
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
    (limits, far_limits)
}

/// The drawn series as chart series: legend name with the peak, colour, style and
/// points in the group's unit.
fn drawn_series(
    data: &SampleData,
    group: Group,
    drawn: &[&SeriesData],
    origin_unix_ns: u64,
) -> Vec<Series> {
    let names = legend_names(data, group, drawn);
    let colors = colors(data, group, drawn);
    let factor = group.scale_factor();
    let unit = group.unit();
    drawn
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
        .collect()
}

/// The caption's sentences about what the chart leaves out: series past
/// [`MAX_SERIES_PER_CHART`] and limits far above the use.
fn left_out_notes(caption: &mut String, group: Group, left_out: usize, far: &[&SeriesData]) {
    if left_out > 0 {
        let _ = write!(
            caption,
            " Showing the {MAX_SERIES_PER_CHART} series with the highest peaks of {}.",
            MAX_SERIES_PER_CHART + left_out
        );
    }
    for limit in far {
        let _ = write!(
            caption,
            " {} ({}) is not drawn: far above the use.",
            limit.place.label,
            legend_value(group.unit(), limit.trace.peak * group.scale_factor())
        );
    }
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
            let mut kinds: Vec<&SamplerKind> = drawn
                .iter()
                .filter_map(|s| sampler_of(data, s).map(|s| &s.kind))
                .collect();
            kinds.dedup();
            let who = match kinds.as_slice() {
                [SamplerKind::Prom] => "Prometheus",
                [SamplerKind::Host] => "Host",
                [SamplerKind::Process] => "Processes",
                [SamplerKind::Postgres] => "PostgreSQL",
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
