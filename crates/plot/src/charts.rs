//! The charts of a run page, built from [`RunData`]: latency over time (every request,
//! sampled), latency percentiles per interval, requests per second asked / sent /
//! successful, status codes per second, for flows each check's failures per interval,
//! then the system under test's resources when the inputs hold samples (`resources/`:
//! CPU, memory, connections, database, ...), the latency distribution as a percentile
//! curve (and one per flow step), and the generator's own health (send lag, CPU, in
//! flight and behind). Time charts share one axis, and carry the diagnosis's knee and
//! findings as markers (`markers.rs`).

use std::fmt::Write as _;

use report::GROUP_EXACT_LIMIT;

use crate::asked::asked_per_row;
use crate::axis::Scale;
use crate::bins::{CheckCount, Row, StatusKey, TRANSPORT, dense};
use crate::downsample::{Sampled, min_max_rows};
use crate::format;
use crate::gather::{AttackData, ERROR_LABEL, RunData, status_name};
use crate::generator::{Track, tracks};
use crate::markers::diagnosis_markers;
use crate::model::{Chart, Series, Style, TimeAxis, Unit, XAxis};
use crate::resources;

/// Series colours: OK requests per attack, failed ones per attack.
const OK_COLORS: [&str; 6] = [
    "#2563eb", "#0d9488", "#7c3aed", "#0891b2", "#65a30d", "#4f46e5",
];
const FAILED_COLORS: [&str; 4] = ["#dc2626", "#ea580c", "#db2777", "#a16207"];
/// p50, p90, p99, max.
const PERCENTILE_COLORS: [&str; 4] = ["#2563eb", "#7c3aed", "#db2777", "#111827"];
const GRAY: &str = "#6b7280";
const GREEN: &str = "#16a34a";
const BLUE: &str = "#2563eb";
const ORANGE: &str = "#ea580c";
/// A replay's original (what the log said), beside the replay's own lines.
const ORIGINAL: &str = "#c2410c";
/// The most status codes drawn apart; the rest are summed as "other".
const MAX_STATUS_SERIES: usize = 8;
/// The most checks drawn apart (those that failed most); the rest are one line.
const MAX_CHECK_SERIES: usize = 8;
/// Lines of checks that failed, in turn.
const CHECK_COLORS: [&str; 8] = [
    "#dc2626", "#ea580c", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#2563eb", "#a16207",
];
/// Lines of checks that never failed: quiet, so the colours go to the ones that did.
const PASSED_GRAY: &str = "#9ca3af";
/// Latency charts switch to a log scale when the slowest request is this many times
/// the median: a 30 s timeout among 1 ms responses would flatten everything else.
const LOG_SPREAD: f64 = 50.0;
/// Points per decade on the percentile curve.
const CURVE_STEPS_PER_NINE: u32 = 20;

/// The charts of one page and the time axis they share.
pub struct PageCharts {
    pub axis: TimeAxis,
    pub charts: Vec<Chart>,
}

pub fn build(data: &RunData, threshold: usize) -> PageCharts {
    let rows = dense(&data.rows);
    let tracks = tracks(&data.summaries, data.origin_unix_ns);
    let scale = latency_scale(data);
    let requests = data.report.requests > 0;
    let mut charts = Vec::new();
    if requests {
        charts.extend([
            latency_scatter(data, scale),
            percentiles_over_time(data, &rows, scale, threshold),
            rates(data, &rows, threshold),
        ]);
        if !data.replay.is_empty() {
            charts.push(replay_latency(data, &rows, scale, threshold));
        }
        charts.push(statuses(data, &rows, threshold));
        if !data.flows.checks.is_empty() {
            charts.push(checks(data, &rows, threshold));
        }
    }
    // The connections held and their messages, on the run's clock under the
    // requests' (only for a run whose connections the stats samples counted).
    if tracks.iter().any(|track| !track.streams.is_empty()) {
        charts.extend(stream_charts(&tracks, threshold));
    }
    // Right under the request charts, so a latency step and the CPU or connection
    // count behind it sit one above the other.
    charts.extend(resources::charts(&data.samples, data.origin_unix_ns));
    if requests {
        charts.push(distribution(data, scale));
        if data.flows.steps.len() > 1 {
            charts.push(step_distribution(data, scale));
        }
    }
    if requests && data.facts.lag_recorded {
        charts.push(send_lag(data, &rows, threshold));
    }
    if !tracks.is_empty() {
        charts.push(generator_cpu(&tracks, threshold));
        charts.push(generator_queue(&tracks, threshold));
    }
    mark_the_diagnosis(&mut charts, data);
    crate::traces_page::mark_traced(&mut charts, data);
    let rows_end_s = data.rows.last().map_or(0.0, |row| {
        (row.index + 1) as f64 * data.every_ns as f64 / 1e9
    });
    let (start_s, end_s) = time_extent(&charts);
    PageCharts {
        axis: TimeAxis {
            origin_unix_ns: data.origin_unix_ns,
            zero: data.zero,
            start_s,
            end_s: end_s.max(rows_end_s),
        },
        charts,
    }
}

/// The knee and each finding of the run's diagnosis, on every time chart.
fn mark_the_diagnosis(charts: &mut [Chart], data: &RunData) {
    let Some(diagnosis) = &data.report.extras.diagnosis else {
        return;
    };
    let markers = diagnosis_markers(diagnosis, data.origin_unix_ns);
    for chart in charts.iter_mut().filter(|c| c.x_axis == XAxis::Time) {
        chart.markers.clone_from(&markers);
    }
}

fn latency_scale(data: &RunData) -> Scale {
    let latencies = &data.report.latencies;
    if latencies.max_ns as f64 > LOG_SPREAD * latencies.p50_ns.max(1) as f64 {
        Scale::Log
    } else {
        Scale::Linear
    }
}

/// The earliest point of any time chart (0, or earlier for resource samples taken
/// before the first request: the axis grows to show them rather than cut them) and
/// the latest, at least 1 ms.
fn time_extent(charts: &[Chart]) -> (f64, f64) {
    let time_charts = charts.iter().filter(|chart| chart.x_axis == XAxis::Time);
    let points = time_charts
        .clone()
        .flat_map(|chart| chart.series.iter().flat_map(|s| s.x.iter().copied()));
    let bands = time_charts.flat_map(|chart| chart.bands.iter().flat_map(|b| [b.from_s, b.to_s]));
    points
        .chain(bands)
        .filter(|x| x.is_finite())
        .fold((0.0, 0.001), |(start, end), x| {
            (f64::min(start, x), f64::max(end, x))
        })
}

fn attack_name(data: &RunData, id: usize) -> String {
    let name = data.tables.attacks.get(id).map_or("", |a| a.name.as_str());
    if name.is_empty() {
        format!("attack {}", id + 1)
    } else {
        name.to_owned()
    }
}

/// Attacks that had requests, with their ids.
fn active_attacks(data: &RunData) -> impl Iterator<Item = (usize, &AttackData)> {
    data.attacks
        .iter()
        .enumerate()
        .filter(|(_, a)| a.requests > 0)
}

fn latency_scatter(data: &RunData, scale: Scale) -> Chart {
    let several = active_attacks(data).count() > 1;
    let mut labels = Vec::new();
    let (mut ok, mut failed) = (Vec::new(), Vec::new());
    for (position, (id, attack)) in active_attacks(data).enumerate() {
        let prefix = if several {
            format!("{} ", attack_name(data, id))
        } else {
            String::new()
        };
        if attack.ok.seen > 0 {
            let color = OK_COLORS[position % OK_COLORS.len()];
            ok.push(points(
                format!("{prefix}OK"),
                color,
                &attack.ok,
                data,
                &mut labels,
            ));
        }
        if attack.failed.seen > 0 {
            let color = FAILED_COLORS[position % FAILED_COLORS.len()];
            let name = format!("{prefix}failed");
            let mut series = points(name, color, &attack.failed, data, &mut labels);
            series.emphasis = true;
            failed.push(series);
        }
    }
    // Failed requests are drawn last, on top of the OK ones.
    let series: Vec<Series> = ok.into_iter().chain(failed).collect();
    let reduced = series.iter().any(|s| s.total.is_some());
    let mut caption = "Every request at its send time: latency from the intended send time \
                       (no coordinated omission). Failed requests (no response, or a status \
                       outside 200-399) are drawn on top."
        .to_owned();
    if reduced {
        caption.push_str(
            " Series with more points than the threshold show one request per cell of a \
             time x log-latency grid, the slowest of the cell, shaded by how many requests \
             the cell holds: the slowest request of every column is always drawn; the legend \
             says how many are.",
        );
    }
    let mut chart = Chart::time_series("latency", "Latency over time", Unit::Duration, series)
        .with_scale(scale, true)
        .with_caption(caption);
    chart.labels = labels;
    chart.height = 380.0;
    chart
}

/// A sampled point series; each point's label is interned in `labels`.
fn points(
    name: String,
    color: &'static str,
    sampled: &Sampled,
    data: &RunData,
    labels: &mut Vec<String>,
) -> Series {
    let mut series = Series::new(name, color, Style::Points);
    let mut interned: Vec<(u32, u32)> = Vec::new();
    for point in &sampled.points {
        series.x.push(point.t_ns as f64 / 1e9);
        series.y.push(point.latency_ns as f64);
        let index = match interned.iter().find(|(label, _)| *label == point.label) {
            Some(&(_, index)) => index,
            None => {
                let index = intern(labels, label_text(point.label, data));
                interned.push((point.label, index));
                index
            }
        };
        series.labels.push(index);
    }
    if sampled.seen > sampled.points.len() as u64 {
        series.total = Some(sampled.seen);
        series.weights = sampled.points.iter().map(|p| p.weight).collect();
    }
    series
}

fn intern(labels: &mut Vec<String>, text: String) -> u32 {
    match labels.iter().position(|l| *l == text) {
        Some(index) => index as u32,
        None => {
            labels.push(text);
            (labels.len() - 1) as u32
        }
    }
}

fn label_text(label: u32, data: &RunData) -> String {
    if label < ERROR_LABEL {
        return label.to_string();
    }
    let id = label - ERROR_LABEL;
    data.tables
        .error(id)
        .map_or_else(|| format!("error #{id}"), |e| e.text.clone())
}

/// x of each row: the middle of its interval, in seconds; breaks sit between rows.
fn row_times(rows: &[Option<Row>], every_ns: u64) -> Vec<f64> {
    let every_s = every_ns as f64 / 1e9;
    let mut times = Vec::with_capacity(rows.len());
    let mut last_index = 0;
    for row in rows {
        let index = row.as_ref().map_or(last_index + 1, |row| row.index);
        times.push((index as f64 + 0.5) * every_s);
        last_index = index;
    }
    times
}

/// One value per row; NaN for breaks and where `value` has none.
fn row_values(rows: &[Option<Row>], value: impl Fn(&Row) -> Option<f64>) -> Vec<f64> {
    rows.iter()
        .map(|row| row.as_ref().and_then(&value).unwrap_or(f64::NAN))
        .collect()
}

/// Keeps at most `limit` rows of series that share their x (see [`min_max_rows`]),
/// and says so in the caption.
fn reduce_rows(chart: &mut Chart, limit: usize) {
    let Some(rows) = chart.series.first().map(|s| s.x.len()) else {
        return;
    };
    let columns: Vec<&[f64]> = chart.series.iter().map(|s| s.y.as_slice()).collect();
    let keep = min_max_rows(&columns, rows, limit);
    if keep.len() == rows {
        return;
    }
    for series in &mut chart.series {
        series.x = keep.iter().map(|&i| series.x[i]).collect();
        series.y = keep.iter().map(|&i| series.y[i]).collect();
    }
    let _ = write!(
        chart.caption,
        " Showing {} of {} points per series: in every stretch each series keeps its \
         lowest and highest point.",
        format::grouped(keep.len() as u64),
        format::grouped(rows as u64)
    );
}

fn interval_name(every_ns: u64) -> String {
    if every_ns == 1_000_000_000 {
        "second".to_owned()
    } else {
        format::duration_ns(every_ns as f64)
    }
}

fn percentiles_over_time(
    data: &RunData,
    rows: &[Option<Row>],
    scale: Scale,
    limit: usize,
) -> Chart {
    let times = row_times(rows, data.every_ns);
    let names = ["p50", "p90", "p99", "max"];
    let series = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let values = row_values(rows, |row| row.latency_ns.map(|l| l[i] as f64));
            Series::new(*name, PERCENTILE_COLORS[i], Style::Line).with_points(times.clone(), values)
        })
        .collect();
    let every = interval_name(data.every_ns);
    let mut chart = Chart::time_series(
        "percentiles",
        format!("Latency percentiles per {every}"),
        Unit::Duration,
        series,
    )
    .with_scale(scale, true)
    .with_caption(format!(
        "Percentiles of the requests sent in each {every} (exact, nearest rank); gaps are \
         intervals with no request sent."
    ));
    reduce_rows(&mut chart, limit);
    chart
}

fn rates(data: &RunData, rows: &[Option<Row>], limit: usize) -> Chart {
    let times = row_times(rows, data.every_ns);
    let per_second = 1e9 / data.every_ns as f64;
    let rate = |count: u64| count as f64 * per_second;
    let mut series = Vec::new();
    if let Some(asked) = asked_per_row(rows, data) {
        let asked = asked.into_iter().map(|a| a * per_second).collect();
        series.push(Series::new("asked", GRAY, Style::Dashed).with_points(times.clone(), asked));
    }
    let sending = sending_rows(rows);
    if let Some(asked) = series.first_mut() {
        // After the last send only a tail of unsent requests is worth a line.
        for (value, position) in asked.y.iter_mut().zip(0..) {
            if !sending.contains(&position) && *value == 0.0 {
                *value = f64::NAN;
            }
        }
    }
    let mut started = row_values(rows, |row| Some(rate(row.started)));
    blank_outside(&mut started, &sending);
    let done = row_values(rows, |row| Some(rate(row.ok_done)));
    series.push(Series::new("achieved", BLUE, Style::Line).with_points(times.clone(), started));
    let flows = data.tables.attacks.iter().any(|attack| attack.flow);
    if flows {
        // The steps of a run: not the load a flow asks for, still what the server saw.
        let mut sent = row_values(rows, |row| Some(rate(row.sent)));
        blank_outside(&mut sent, &sending);
        series.push(Series::new("requests", ORANGE, Style::Line).with_points(times.clone(), sent));
    }
    series.push(Series::new("successful", GREEN, Style::Line).with_points(times.clone(), done));
    let every = interval_name(data.every_ns);
    let mut caption = if flows {
        format!(
            "Asked: what the schedule made due in each {every} (open model only): a flow's \
             runs started (and any other attack's requests). Achieved: runs started (a run's \
             first request sent; other attacks' requests). Requests: every request sent, \
             each step of a run. Successful: responses with a status in 200-399 completed \
             in the {every}. Achieved below asked means the generator fell behind."
        )
    } else {
        format!(
            "Asked: what the schedule made due in each {every} (open model only). Achieved: \
             requests sent. Successful: responses with a status in 200-399 completed in the \
             {every}. Achieved below asked means the generator fell behind; successful below \
             achieved means the server did."
        )
    };
    if !data.replay.is_empty() {
        let mut logged = row_values(rows, |row| Some(rate(row.logged)));
        blank_outside(&mut logged, &sending);
        let name = "original (logged)";
        // Dashed and on top: where the replay follows the log exactly, both show.
        series.push(Series::new(name, ORIGINAL, Style::Dashed).with_points(times, logged));
        caption.push_str(
            " Original: the requests the replayed log holds, at their logged time on the \
             replay's axis (sped up as replayed); achieved following it is a faithful replay.",
        );
    }
    let title = if flows {
        "Runs started and requests per second"
    } else {
        "Requests per second"
    };
    let mut chart =
        Chart::time_series("rate", title, Unit::PerSecond, series).with_caption(caption);
    reduce_rows(&mut chart, limit);
    chart
}

/// A replay's p99 per interval against its original's (`replay_gather.rs`).
fn replay_latency(data: &RunData, rows: &[Option<Row>], scale: Scale, limit: usize) -> Chart {
    let times = row_times(rows, data.every_ns);
    let original = row_values(rows, |row| row.original_p99_ns.map(|ns| ns as f64));
    let replayed = row_values(rows, |row| row.replay_p99_ns.map(|ns| ns as f64));
    let series = vec![
        Series::new("original p99 (logged)", ORIGINAL, Style::Dashed)
            .with_points(times.clone(), original),
        Series::new("replay p99", BLUE, Style::Line).with_points(times, replayed),
    ];
    let every = interval_name(data.every_ns);
    let mut chart = Chart::time_series(
        "replay-latency",
        format!("Replay vs original: latency p99 per {every}"),
        Unit::Duration,
        series,
    )
    .with_scale(scale, true)
    .with_caption(format!(
        "The requests the replayed log holds, at their logged time on the replay's axis: \
         the p99 the log says the server took then, and the replay's p99 (from the \
         intended send time), per {every}. Gaps: no request, or a log without latencies."
    ));
    reduce_rows(&mut chart, limit);
    chart
}

fn statuses(data: &RunData, rows: &[Option<Row>], limit: usize) -> Chart {
    let times = row_times(rows, data.every_ns);
    let per_second = 1e9 / data.every_ns as f64;
    let sending = sending_rows(rows);
    let (shown, other) = status_groups(rows);
    let stacked = |name: String, color, keys: &[StatusKey]| {
        let mut values = row_values(rows, |row| {
            Some(keys.iter().map(|&k| status_count(row, k)).sum::<u64>() as f64 * per_second)
        });
        blank_outside(&mut values, &sending);
        let total: u64 = rows
            .iter()
            .flatten()
            .map(|row| keys.iter().map(|&k| status_count(row, k)).sum::<u64>())
            .sum();
        Series::new(
            format!("{name}: {}", format::grouped(total)),
            color,
            Style::Stacked,
        )
        .with_points(times.clone(), values)
    };
    let mut series: Vec<Series> = shown
        .iter()
        .enumerate()
        .map(|(position, &key)| stacked(status_name(key), status_color(key, position), &[key]))
        .collect();
    if !other.is_empty() {
        series.push(stacked("other".to_owned(), GRAY, &other));
    }
    let mut chart =
        Chart::time_series("status", "Status codes per second", Unit::PerSecond, series)
            .with_caption(
                "Requests sent per second by response status, stacked; 0 is no HTTP response, \
         named by the error (timeout, connect, reset, ...).",
            );
    reduce_rows(&mut chart, limit);
    chart
}

/// Each check's failures per interval, as a share of its runs in that interval (the
/// requests sent in it whose step has the check): a line at 0 while every run passes,
/// on an axis that grows to the worst interval, so a 0.5% dip is as plain to see as
/// an outage. Drawn apart: up to [`MAX_CHECK_SERIES`] checks, those that failed most
/// when there are more (the rest are one line), in the flow's order.
fn checks(data: &RunData, rows: &[Option<Row>], limit: usize) -> Chart {
    let times = row_times(rows, data.every_ns);
    let (shown, other) = check_groups(data);
    let line = |name: String, color, ids: &[u32]| {
        let values = row_values(rows, |row| {
            let runs = ids.iter().filter_map(|&id| row.check(id)).fold(
                CheckCount::default(),
                |mut sum, count| {
                    sum.passed += count.passed;
                    sum.failed += count.failed;
                    sum
                },
            );
            let total = runs.passed + runs.failed;
            (total > 0).then(|| runs.failed as f64 * 100.0 / total as f64)
        });
        Series::new(name, color, Style::Line).with_points(times.clone(), values)
    };
    let checks = &data.flows.checks;
    let mut failing = 0;
    let mut series: Vec<Series> = shown
        .iter()
        .map(|&id| {
            let check = &checks[id as usize];
            let name = format!("{}: {} failed", check.name, format::grouped(check.failed));
            let color = if check.failed == 0 {
                PASSED_GRAY
            } else {
                failing += 1;
                CHECK_COLORS[(failing - 1) % CHECK_COLORS.len()]
            };
            line(name, color, &[id])
        })
        .collect();
    if !other.is_empty() {
        let failed: u64 = other.iter().map(|&id| checks[id as usize].failed).sum();
        let name = format!(
            "{} other checks: {} failed",
            other.len(),
            format::grouped(failed)
        );
        series.push(line(name, GRAY, &other));
    }
    let every = interval_name(data.every_ns);
    let mut chart = Chart::time_series(
        "checks",
        format!("Checks failed, % of runs per {every}"),
        Unit::Share,
        series,
    )
    .with_caption(format!(
        "Of each check's runs in the requests sent in each {every}, the share that failed \
         (0% while every run passes); a check runs on every answer of its step, a request \
         with no answer fails all its step's checks. Gaps are intervals the check did not \
         run. Totals and pass rates are in the Checks table above."
    ));
    reduce_rows(&mut chart, limit);
    chart
}

/// The check ids drawn apart (in flow order) and the ones drawn as one line.
fn check_groups(data: &RunData) -> (Vec<u32>, Vec<u32>) {
    let checks = &data.flows.checks;
    let mut ids: Vec<u32> = (0..checks.len() as u32).collect();
    if ids.len() <= MAX_CHECK_SERIES {
        return (ids, Vec::new());
    }
    ids.sort_by_key(|&id| (std::cmp::Reverse(checks[id as usize].failed), id));
    let other = ids.split_off(MAX_CHECK_SERIES - 1);
    ids.sort_unstable();
    (ids, other)
}

/// Positions of the rows from the first to the last with a request sent.
fn sending_rows(rows: &[Option<Row>]) -> std::ops::RangeInclusive<usize> {
    let sends = |row: &Option<Row>| row.as_ref().is_some_and(|r| r.sent > 0);
    let first = rows.iter().position(sends).unwrap_or(0);
    let last = rows.iter().rposition(sends).unwrap_or(0);
    first..=last
}

/// No value outside `keep`: a rate of sends means nothing before the first or after
/// the last.
fn blank_outside(values: &mut [f64], keep: &std::ops::RangeInclusive<usize>) {
    for (position, value) in values.iter_mut().enumerate() {
        if !keep.contains(&position) {
            *value = f64::NAN;
        }
    }
}

fn status_count(row: &Row, key: StatusKey) -> u64 {
    row.statuses
        .iter()
        .find(|(k, _)| *k == key)
        .map_or(0, |(_, count)| *count)
}

/// The status keys drawn apart (successes first, then by code, transport errors last)
/// and the ones summed as "other".
fn status_groups(rows: &[Option<Row>]) -> (Vec<StatusKey>, Vec<StatusKey>) {
    let mut totals: Vec<(StatusKey, u64)> = Vec::new();
    for (key, count) in rows.iter().flatten().flat_map(|row| row.statuses.iter()) {
        match totals.iter_mut().find(|(k, _)| k == key) {
            Some((_, total)) => *total += count,
            None => totals.push((*key, *count)),
        }
    }
    totals.sort_by_key(|&(key, count)| (std::cmp::Reverse(count), key));
    let split = if totals.len() > MAX_STATUS_SERIES {
        MAX_STATUS_SERIES - 1
    } else {
        totals.len()
    };
    let mut shown: Vec<StatusKey> = totals[..split].iter().map(|(k, _)| *k).collect();
    let other = totals[split..].iter().map(|(k, _)| *k).collect();
    // Failures at the bottom of the stack, where a growing band is plain to see:
    // transport errors, then statuses from the highest down.
    shown.sort_unstable_by_key(|&key| (key < TRANSPORT, std::cmp::Reverse(key)));
    (shown, other)
}

fn status_color(key: StatusKey, position: usize) -> &'static str {
    const SUCCESS: [&str; 3] = ["#16a34a", "#4ade80", "#15803d"];
    const REDIRECT: [&str; 2] = ["#0891b2", "#67e8f9"];
    const CLIENT: [&str; 3] = ["#f59e0b", "#fbbf24", "#b45309"];
    const SERVER: [&str; 3] = ["#dc2626", "#f87171", "#991b1b"];
    const TRANSPORT_COLORS: [&str; 3] = ["#6d28d9", "#a78bfa", "#4c1d95"];
    let palette: &[&str] = match key {
        200..=299 => &SUCCESS,
        300..=399 => &REDIRECT,
        400..=499 => &CLIENT,
        500..=599 => &SERVER,
        k if k >= TRANSPORT => &TRANSPORT_COLORS,
        _ => &[GRAY],
    };
    palette[position % palette.len()]
}

fn distribution(data: &RunData, scale: Scale) -> Chart {
    let all = &data.report.latencies;
    let attacks: Vec<(usize, &AttackData)> = active_attacks(data).collect();
    let whole_run = |name: &str, color| {
        curve(name, color, data.report.requests, all.max_ns, |q| {
            all.quantiles.quantile(q)
        })
    };
    let mut series = Vec::new();
    if attacks.len() > 1 {
        series.push(whole_run("all", "#111827"));
        for (position, (id, attack)) in attacks.iter().enumerate() {
            let color = OK_COLORS[position % OK_COLORS.len()];
            let name = attack_name(data, *id);
            series.push(curve(
                &name,
                color,
                attack.requests,
                attack.max_latency_ns,
                |q| attack.latency.quantile(q),
            ));
        }
    } else {
        series.push(whole_run("latency", OK_COLORS[0]));
    }
    let exact = data.report.latencies_exact
        && (attacks.len() <= 1
            || attacks
                .iter()
                .all(|(_, a)| a.requests <= GROUP_EXACT_LIMIT as u64));
    let caption = format!(
        "Latency at each percentile, HDR style: each step right is ten times rarer. \
         Percentiles are {}; the curve ends at the slowest request.",
        exactness(exact)
    );
    nines_chart(
        "distribution",
        "Latency distribution",
        scale,
        series,
        caption,
    )
}

/// A percentile curve per flow step: which step is slow, and how far into its tail.
fn step_distribution(data: &RunData, scale: Scale) -> Chart {
    let series = data
        .flows
        .steps
        .iter()
        .enumerate()
        .map(|(position, step)| {
            let color = OK_COLORS[position % OK_COLORS.len()];
            curve(&step.name, color, step.requests, step.max_latency_ns, |q| {
                step.latency.quantile(q)
            })
        })
        .collect();
    let exact = data
        .flows
        .steps
        .iter()
        .all(|step| step.requests <= GROUP_EXACT_LIMIT as u64);
    let caption = format!(
        "Latency at each percentile for each step of the flows, HDR style (a step's \
         latency counts from its own intended time: the previous answer plus the think \
         time). Percentiles are {}; each curve ends at the step's slowest request.",
        exactness(exact)
    );
    let title = "Latency distribution by step";
    nines_chart("step-distribution", title, scale, series, caption)
}

/// How exact a percentile curve is: whether its values stayed under the exact limit.
fn exactness(exact: bool) -> &'static str {
    if exact {
        "exact"
    } else {
        "to 3 significant digits"
    }
}

/// A chart of percentile curves (x: the nines), toggled by series.
fn nines_chart(
    id: &'static str,
    title: &str,
    scale: Scale,
    series: Vec<Series>,
    caption: String,
) -> Chart {
    Chart {
        id,
        title: title.to_owned(),
        x_axis: XAxis::Nines,
        unit: Unit::Duration,
        scale,
        toggle: true,
        series,
        labels: Vec::new(),
        caption,
        height: 340.0,
        bands: Vec::new(),
        markers: Vec::new(),
    }
}

/// The percentile curve of `count` values: 20 points per nine, up to the last nine the
/// count supports, then the maximum one step further right.
fn curve(
    name: &str,
    color: &'static str,
    count: u64,
    max_ns: u64,
    quantile: impl Fn(f64) -> u64,
) -> Series {
    let last_nines = (count.max(1) as f64).log10();
    let steps = (last_nines * f64::from(CURVE_STEPS_PER_NINE)).floor() as u32;
    // The legend reads the usual percentiles, so a PNG of the chart says them too.
    let mut marks: Vec<String> = [(0.5, "p50"), (0.9, "p90"), (0.99, "p99"), (0.999, "p99.9")]
        .iter()
        .filter(|(q, _)| count as f64 * (1.0 - q) >= 1.0)
        .map(|&(q, label)| format!("{label} {}", format::duration_ns(quantile(q) as f64)))
        .collect();
    marks.push(format!("max {}", format::duration_ns(max_ns as f64)));
    let mut series = Series::new(format!("{name}: {}", marks.join(", ")), color, Style::Line);
    for step in 0..=steps {
        let nines = f64::from(step) / f64::from(CURVE_STEPS_PER_NINE);
        series.x.push(nines);
        series.y.push(quantile(1.0 - 10f64.powf(-nines)) as f64);
    }
    series.x.push(last_nines.max(0.5) + 0.25);
    series.y.push(max_ns as f64);
    series
}

fn send_lag(data: &RunData, rows: &[Option<Row>], limit: usize) -> Chart {
    let times = row_times(rows, data.every_ns);
    let p99 = row_values(rows, |row| row.send_lag_ns.map(|l| l[0] as f64));
    let max = row_values(rows, |row| row.send_lag_ns.map(|l| l[1] as f64));
    let spread = max
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
        / p99
            .iter()
            .copied()
            .filter(|v| v.is_finite() && *v > 0.0)
            .fold(f64::INFINITY, f64::min);
    let scale = if spread > LOG_SPREAD {
        Scale::Log
    } else {
        Scale::Linear
    };
    let series = vec![
        Series::new("p99", PERCENTILE_COLORS[2], Style::Line).with_points(times.clone(), p99),
        Series::new("max", PERCENTILE_COLORS[3], Style::Line).with_points(times, max),
    ];
    let mut chart = Chart::time_series("send-lag", "Generator: send lag", Unit::Duration, series)
        .with_scale(scale, true)
        .with_caption(
            "How late requests left against their schedule (actual minus intended send time), \
         per interval. Latency counts from the intended time, so this delay is inside it; \
         a p99 above 1ms means the generator could not keep up.",
        );
    reduce_rows(&mut chart, limit);
    chart
}

fn track_name(tracks: &[Track], track: &Track, what: &str) -> String {
    if tracks.len() > 1 {
        format!("{what} ({})", track.input)
    } else {
        what.to_owned()
    }
}

fn generator_cpu(tracks: &[Track], limit: usize) -> Chart {
    let series = tracks
        .iter()
        .enumerate()
        .map(|(i, track)| {
            Series::new(
                track_name(tracks, track, "CPU"),
                OK_COLORS[i % OK_COLORS.len()],
                Style::Line,
            )
            .with_points(track.t_s.clone(), track.cpu_percent.clone())
        })
        .collect();
    let mut chart = Chart::time_series("generator-cpu", "Generator: CPU", Unit::Percent, series)
        .with_caption(
            "CPU time of the load generator process (user + system) between its samples, in \
             % of one core: near 100% per worker thread, it is the bottleneck.",
        );
    reduce_each(&mut chart, limit);
    chart
}

fn generator_queue(tracks: &[Track], limit: usize) -> Chart {
    let mut series = Vec::new();
    for track in tracks {
        let parts: [(&str, &Vec<f64>, &'static str, Style); 3] = [
            ("in flight", &track.in_flight, BLUE, Style::Line),
            ("behind", &track.behind, ORANGE, Style::Line),
            ("connections", &track.connections, GRAY, Style::Dashed),
        ];
        for (what, values, color, style) in parts {
            series.push(
                Series::new(track_name(tracks, track, what), color, style)
                    .with_points(track.t_s.clone(), values.clone()),
            );
        }
    }
    let mut chart = Chart::time_series(
        "generator-queue",
        "Generator: requests in flight and behind",
        Unit::Count,
        series,
    )
    .with_caption(
        "Requests in flight (sent, not yet answered), behind (due by the schedule but not \
         yet sent) and open connections, as the generator sampled them.",
    );
    reduce_each(&mut chart, limit);
    chart
}

/// Connections held, messages a second each way and the message latency of each
/// stats interval (docs/STREAMING.md), one series per input and figure.
fn stream_charts(tracks: &[Track], limit: usize) -> [Chart; 3] {
    type Figure = fn(&report::StreamSecond) -> Option<f64>;
    let series_of = |parts: &[(&str, &'static str, Style, Figure)]| {
        let mut series = Vec::new();
        for track in tracks.iter().filter(|track| !track.streams.is_empty()) {
            for &(what, color, style, figure) in parts {
                let (t_s, values): (Vec<f64>, Vec<f64>) = track
                    .streams
                    .iter()
                    .map(|(t_s, second)| (*t_s, figure(second).unwrap_or(f64::NAN)))
                    .unzip();
                series.push(
                    Series::new(track_name(tracks, track, what), color, style)
                        .with_points(t_s, values),
                );
            }
        }
        series
    };
    let open = series_of(&[("open", BLUE, Style::Line, |s| Some(s.open as f64))]);
    let messages = series_of(&[
        ("in", BLUE, Style::Line, |s| Some(s.messages_in_per_sec)),
        ("out", ORANGE, Style::Dashed, |s| {
            Some(s.messages_out_per_sec)
        }),
    ]);
    let latency = series_of(&[
        ("p50", PERCENTILE_COLORS[0], Style::Line, |s| {
            s.latency.map(|q| q.p50_ns as f64)
        }),
        ("p99", PERCENTILE_COLORS[2], Style::Line, |s| {
            s.latency.map(|q| q.p99_ns as f64)
        }),
        ("max", PERCENTILE_COLORS[3], Style::Line, |s| {
            s.latency.map(|q| q.max_ns as f64)
        }),
    ]);
    let mut charts = [
        Chart::time_series("streams-open", "Connections held", Unit::Count, open).with_caption(
            "Stream connections (ws, sse steps) and streamed gRPC calls open at each \
             generator sample, about once a second.",
        ),
        Chart::time_series("streams-messages", "Messages", Unit::PerSecond, messages).with_caption(
            "Messages (events) received and sent a second over those connections, \
                 per sample interval.",
        ),
        Chart::time_series(
            "streams-latency",
            "Message latency",
            Unit::Duration,
            latency,
        )
        .with_caption(
            "Message latency per sample interval: a WebSocket's round trips, an event \
                 stream's gaps between events, a gRPC stream's gaps between messages \
                 (within 3%).",
        ),
    ];
    for chart in &mut charts {
        reduce_each(chart, limit);
    }
    charts
}

/// [`reduce_rows`] for charts whose series each have their own x (one per input).
fn reduce_each(chart: &mut Chart, limit: usize) {
    let series = std::mem::take(&mut chart.series);
    let caption = chart.caption.clone();
    for one in series {
        let mut single = Chart {
            series: vec![one],
            ..chart.clone()
        };
        reduce_rows(&mut single, limit);
        if single.caption != caption {
            chart.caption = single.caption;
        }
        chart.series.extend(single.series);
    }
}
