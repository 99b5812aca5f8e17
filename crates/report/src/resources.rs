//! The system under test beside the load: [`Resources`] reads the inputs' resource
//! samples (`loadlab monitor`, `attack -monitor`) as they stream by, in bounded memory
//! (a few numbers per sampler), and closes into a [`ResourceSummary`]: peak and mean
//! CPU per process group and for the host, peak memory, peak established connections,
//! fds against their limit, database transactions per second, gaps, and plain warnings
//! ("nginx at 100% of one core from 12 s", "fds at 95% of limit").

use std::collections::BTreeMap;

use record::{ResourceSeries, SampleBatch, SampleTables, SamplerKind};

/// CPU at or above this (percent of one core for a group, of the host for the host)
/// for [`SUSTAINED_SAMPLES`] samples in a row is a saturation warning.
pub const CPU_BUSY_PERCENT: f64 = 95.0;
/// Samples in a row above a threshold that make a warning.
pub const SUSTAINED_SAMPLES: u32 = 3;
/// File descriptors at or above this share of their limit are a warning.
pub const FD_WARN_PERCENT: f64 = 90.0;

/// Running figures of one measure: count, mean, peak, and the first stretch of
/// [`SUSTAINED_SAMPLES`] samples at or above a threshold.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Stat {
    /// Samples counted.
    pub samples: u64,
    /// Their sum, in the series' unit.
    pub sum: f64,
    /// The largest value, in the series' unit.
    pub peak: f64,
    /// When the largest value was read, unix nanoseconds.
    pub peak_at_unix_ns: u64,
    /// When the value first reached the warning threshold.
    pub first_high_at_unix_ns: Option<u64>,
    /// The first sustained stretch: (start, mean over the stretch).
    pub sustained: Option<(u64, f64)>,
    run: (u64, u32, f64),
    sustained_open: bool,
}

impl Stat {
    pub(crate) fn add(&mut self, at_unix_ns: u64, value: f64, threshold: Option<f64>) {
        match threshold {
            Some(threshold) => self.add_sustained(at_unix_ns, value, threshold, SUSTAINED_SAMPLES),
            None => self.count(at_unix_ns, value),
        }
    }

    fn count(&mut self, at_unix_ns: u64, value: f64) {
        if self.samples == 0 || value > self.peak {
            (self.peak, self.peak_at_unix_ns) = (value, at_unix_ns);
        }
        self.samples += 1;
        self.sum += value;
    }

    /// Counts `value`, and tracks the first stretch of `sustain` samples in a row at or
    /// above `threshold`.
    pub(crate) fn add_sustained(
        &mut self,
        at_unix_ns: u64,
        value: f64,
        threshold: f64,
        sustain: u32,
    ) {
        self.count(at_unix_ns, value);
        if value < threshold {
            self.run = (0, 0, 0.0);
            self.sustained_open = false;
            return;
        }
        self.first_high_at_unix_ns.get_or_insert(at_unix_ns);
        let (start, len, sum) = self.run;
        let start = if len == 0 { at_unix_ns } else { start };
        self.run = (start, len + 1, sum + value);
        match &mut self.sustained {
            None if len + 1 >= sustain => {
                self.sustained = Some((start, (sum + value) / f64::from(len + 1)));
                self.sustained_open = true;
            }
            Some(stretch) if self.sustained_open => stretch.1 = (sum + value) / f64::from(len + 1),
            _ => {}
        }
    }

    /// Ends the stretch in progress: the samples that follow do not continue it (a
    /// clock jump, a silence).
    pub(crate) fn break_run(&mut self) {
        self.run = (0, 0, 0.0);
        self.sustained_open = false;
    }

    /// The first sustained stretch, else a stretch of at least `trailing` samples at
    /// the threshold that lasted to the last sample: a run cut short (a stop rule, a
    /// short step) that ended at its limit.
    pub(crate) fn crossing(&self, trailing: u32) -> Option<(u64, f64)> {
        let (start, len, sum) = self.run;
        self.sustained
            .or_else(|| (len >= trailing.max(1)).then(|| (start, sum / f64::from(len))))
    }

    /// The mean over the samples (0 without any).
    pub fn mean(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.sum / self.samples as f64
        }
    }
}

/// One sampler's figures, by measure name (`cpu`, `rss`, `tx`, ...).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SamplerFigures {
    /// The sampler's kind (`host`, `process`, `postgres`...).
    pub kind: SamplerKind,
    /// The sampler's name (the process group, the URL...).
    pub name: String,
    /// Figures by measure.
    pub stats: BTreeMap<&'static str, Stat>,
    /// Gaps the sampler recorded.
    pub gaps: u64,
    /// Distinct gap reasons, the first few.
    pub reasons: Vec<String>,
}

const MAX_REASONS: usize = 3;

impl SamplerFigures {
    /// The figures of one measure (`cpu`, `rss`, ...), if the sampler had any.
    pub fn stat(&self, measure: &str) -> Option<&Stat> {
        self.stats.get(measure).filter(|s| s.samples > 0)
    }
}

/// Aggregates sample batches; see the module documentation.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    samplers: Vec<SamplerFigures>,
    series: u64,
    values: u64,
    gaps: u64,
    first_at_unix_ns: Option<u64>,
}

/// Which measure a series feeds, and its warning threshold; `None` for series the
/// report has no row for (they are still counted, and charted by `plot`).
fn measure(
    kind: &SamplerKind,
    name: &str,
    labels: &BTreeMap<String, String>,
) -> Option<(&'static str, Option<f64>)> {
    use ResourceSeries as S;
    let label = |key: &str| labels.get(key).map(String::as_str);
    let series = ResourceSeries::from_name(name)?;
    // A series counts only from its own kind of sampler (an agent forwards samplers
    // with their kinds).
    let wanted_kind = series.name().split('.').next().unwrap_or_default();
    if kind.name() != wanted_kind {
        return None;
    }
    Some(match series {
        S::HostCpuPercent if label("cpu") == Some("all") => ("cpu", Some(CPU_BUSY_PERCENT)),
        S::HostMemoryUsedBytes => ("memory_used", None),
        S::HostMemoryTotalBytes => ("memory_total", None),
        S::HostTcpEstablished => ("established", None),
        S::HostTcpTimeWait => ("time_wait", None),
        S::HostFdsOpen => ("fds", None),
        S::HostFdsMax => ("fds_max", None),
        S::HostTcpListenOverflowsPerSec => ("listen_overflows", Some(f64::MIN_POSITIVE)),
        S::ProcessCpuPercent => ("cpu", Some(CPU_BUSY_PERCENT)),
        S::ProcessRssBytes => ("rss", None),
        S::ProcessFds => ("fds", None),
        S::ProcessFdLimit => ("fd_limit", None),
        S::ProcessFdUsePercent => ("fd_use", Some(FD_WARN_PERCENT)),
        S::PostgresTransactionsPerSec => ("tx", None),
        S::PostgresConnections => ("connections", None),
        // No row: per-core CPU, iowait and steal, swap, network, socket details, TCP
        // error rates other than listen overflows, load, process counts, rollbacks.
        S::HostCpuPercent
        | S::HostCpuIowaitPercent
        | S::HostCpuStealPercent
        | S::HostMemoryAvailableBytes
        | S::HostSwapUsedBytes
        | S::HostSwapOutBytesPerSec
        | S::HostNetSpeedBytesPerSec
        | S::HostTcpSegmentsSentPerSec
        | S::HostNetRxBytesPerSec
        | S::HostNetTxBytesPerSec
        | S::HostNetRxPacketsPerSec
        | S::HostNetTxPacketsPerSec
        | S::HostTcpSockets
        | S::HostSocketsUsed
        | S::HostTcpOrphans
        | S::HostUdpSockets
        | S::HostTcpMemoryBytes
        | S::HostTcpRetransmitsPerSec
        | S::HostTcpResetsSentPerSec
        | S::HostTcpConnectFailuresPerSec
        | S::HostTcpListenDropsPerSec
        | S::HostLoad1
        | S::HostEphemeralPorts
        | S::ProcessCount
        | S::ProcessThreads
        | S::ProcessSockets
        | S::ProcessCpuLimitPercent
        | S::ProcessMemoryLimitBytes
        | S::LogLinesPerSec
        | S::LogExample
        | S::PostgresMaxConnections
        | S::PostgresBusyConnections
        | S::PostgresRollbacksPerSec => return None,
    })
}

impl Resources {
    /// Adds batches whose ids index `tables` (the merged tables as read so far).
    pub fn add(&mut self, tables: &SampleTables, batches: &[SampleBatch]) {
        self.series = tables.series.len() as u64;
        while self.samplers.len() < tables.samplers.len() {
            let info = &tables.samplers[self.samplers.len()];
            self.samplers.push(SamplerFigures {
                kind: info.kind.clone(),
                name: info.name.clone(),
                ..SamplerFigures::default()
            });
        }
        for batch in batches {
            self.add_batch(tables, batch);
        }
    }

    fn add_batch(&mut self, tables: &SampleTables, batch: &SampleBatch) {
        let at = batch.at_unix_ns;
        self.first_at_unix_ns = Some(self.first_at_unix_ns.map_or(at, |first| first.min(at)));
        self.values += batch.values.len() as u64;
        self.gaps += batch.gaps.len() as u64;
        // Per sampler and measure, values of one batch are summed (databases of one
        // server, say) before they count as one sample.
        let mut sums: BTreeMap<(u32, &'static str), (f64, Option<f64>)> = BTreeMap::new();
        for value in &batch.values {
            let Some(info) = tables.series.get(value.series as usize) else {
                continue;
            };
            let Some(sampler) = tables.samplers.get(info.sampler as usize) else {
                continue;
            };
            if let Some((name, threshold)) = measure(&sampler.kind, &info.name, &info.labels) {
                sums.entry((info.sampler, name))
                    .or_insert((0.0, threshold))
                    .0 += value.value;
            }
        }
        for ((sampler, name), (value, threshold)) in sums {
            if let Some(figures) = self.samplers.get_mut(sampler as usize) {
                figures
                    .stats
                    .entry(name)
                    .or_default()
                    .add(at, value, threshold);
            }
        }
        for gap in &batch.gaps {
            if let Some(figures) = self.samplers.get_mut(gap.sampler as usize) {
                figures.gaps += 1;
                if figures.reasons.len() < MAX_REASONS && !figures.reasons.contains(&gap.reason) {
                    figures.reasons.push(gap.reason.clone());
                }
            }
        }
    }

    /// When the first sample was read, unix ns.
    pub fn first_at_unix_ns(&self) -> Option<u64> {
        self.first_at_unix_ns
    }

    /// The summary, with times in warnings relative to `start_unix_ns` (the run's first
    /// request, or the first sample when there are no requests); `None` without samples.
    pub fn close(self, start_unix_ns: Option<u64>) -> Option<ResourceSummary> {
        if self.samplers.is_empty() {
            return None;
        }
        let start = start_unix_ns.or(self.first_at_unix_ns).unwrap_or(0);
        let warnings = self
            .samplers
            .iter()
            .flat_map(|f| warnings(f, start))
            .collect();
        Some(ResourceSummary {
            samplers: self.samplers,
            series: self.series,
            values: self.values,
            gaps: self.gaps,
            warnings,
        })
    }
}

/// What the resource samples say about the run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResourceSummary {
    /// Figures per sampler.
    pub samplers: Vec<SamplerFigures>,
    /// Series declared.
    pub series: u64,
    /// Values read.
    pub values: u64,
    /// Gaps read.
    pub gaps: u64,
    /// Plain warnings ("nginx at 100% of one core from 12 s").
    pub warnings: Vec<String>,
}

impl ResourceSummary {
    /// The samplers of one kind, in the order first seen.
    pub fn of_kind<'a>(
        &'a self,
        kind: &'a SamplerKind,
    ) -> impl Iterator<Item = &'a SamplerFigures> + 'a {
        self.samplers.iter().filter(move |f| &f.kind == kind)
    }
}

/// Seconds from the start of the run, to the nearest.
fn seconds_from(start: u64, at: u64) -> u64 {
    (at.saturating_sub(start) + 500_000_000) / 1_000_000_000
}

fn warnings(figures: &SamplerFigures, start: u64) -> Vec<String> {
    let mut out = Vec::new();
    let host = figures.kind == SamplerKind::Host;
    let who = if host {
        "host CPU".to_owned()
    } else {
        figures.name.clone()
    };
    if let Some((at, mean)) = figures.stat("cpu").and_then(|s| s.sustained) {
        let share = if host { "of the host" } else { "of one core" };
        out.push(format!(
            "{who} at {mean:.0}% {share} from {} s",
            seconds_from(start, at)
        ));
    }
    if let Some(fd_use) = figures.stat("fd_use").filter(|s| s.peak >= FD_WARN_PERCENT) {
        let at = fd_use
            .first_high_at_unix_ns
            .unwrap_or(fd_use.peak_at_unix_ns);
        let limit = figures.stat("fd_limit").map_or(0.0, |s| s.peak);
        out.push(format!(
            "{} fds at {:.0}% of limit ({limit:.0}) from {} s; beyond it accept() fails with \"too many open files\"",
            figures.name,
            fd_use.peak,
            seconds_from(start, at)
        ));
    }
    if let Some(overflows) = figures
        .stat("listen_overflows")
        .and_then(|s| s.first_high_at_unix_ns.map(|at| (at, s.peak)))
    {
        out.push(format!(
            "listen queues overflowed from {} s (peak {:.0}/s): the server did not accept connections fast enough",
            seconds_from(start, overflows.0),
            overflows.1
        ));
    }
    if figures.gaps > 0 {
        let name = if host {
            "host".to_owned()
        } else {
            format!("{} {}", figures.kind, figures.name)
        };
        out.push(format!(
            "monitor: {name}: {} gaps ({})",
            figures.gaps,
            figures.reasons.join("; ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use record::{SampleValue, SamplerInfo, SeriesInfo, SeriesKind};

    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn stats_track_peaks_and_sustained_stretches() {
        // (values one a second, the sustained stretch's start in s and mean)
        type Stretch = Option<(u64, f64)>;
        let rows: &[(&[f64], Stretch)] = &[
            (
                &[10.0, 99.0, 100.0, 101.0, 50.0, 100.0, 100.0, 100.0],
                Some((1, 100.0)),
            ),
            (&[96.0, 96.0, 10.0, 96.0], None),
            (&[95.0, 95.0, 97.0, 100.0], Some((0, 96.75))),
            (&[], None),
        ];
        for (values, want) in rows {
            let mut stat = Stat::default();
            for (i, &v) in values.iter().enumerate() {
                stat.add(i as u64 * S, v, Some(CPU_BUSY_PERCENT));
            }
            let got = stat.sustained.map(|(at, mean)| (at / S, mean));
            assert_eq!(got, *want, "{values:?}");
        }
        let mut stat = Stat::default();
        for (i, v) in [3.0, 9.0, 1.0].into_iter().enumerate() {
            stat.add(i as u64, v, None);
        }
        assert_eq!(
            (stat.peak, stat.peak_at_unix_ns, stat.mean()),
            (9.0, 1, 13.0 / 3.0)
        );
        assert_eq!(stat.first_high_at_unix_ns, None);
    }

    fn tables() -> SampleTables {
        let sampler = |kind: &str, name: &str| SamplerInfo {
            kind: kind.into(),
            name: name.to_owned(),
        };
        let series = |sampler: u32, name: &str, labels: &[(&str, &str)]| SeriesInfo {
            sampler,
            name: name.to_owned(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            unit: String::new(),
            kind: SeriesKind::Gauge,
        };
        SampleTables {
            samplers: vec![
                sampler("process", "nginx"),
                sampler("postgres", "postgres://u:REDACTED@db/x"),
                sampler("prom", "http://x/metrics"),
            ],
            series: vec![
                series(0, "process.cpu_percent", &[("group", "nginx")]),
                series(0, "process.fd_use_percent", &[("group", "nginx")]),
                series(0, "process.fd_limit", &[("group", "nginx")]),
                series(1, "postgres.transactions_per_sec", &[("database", "a")]),
                series(1, "postgres.transactions_per_sec", &[("database", "b")]),
            ],
        }
    }

    #[test]
    fn batches_become_figures_and_warnings() {
        let tables = tables();
        let mut resources = Resources::default();
        let start = 1_000 * S;
        for second in 0..20u64 {
            let cpu = if second >= 12 { 100.0 } else { 20.0 };
            let fd_use = if second == 15 { 96.0 } else { 40.0 };
            let value = |series, value| SampleValue { series, value };
            let batches = vec![
                SampleBatch {
                    at_unix_ns: start + second * S,
                    values: vec![value(0, cpu), value(1, fd_use), value(2, 1024.0)],
                    gaps: Vec::new(),
                },
                SampleBatch {
                    at_unix_ns: start + second * S,
                    values: vec![value(3, 100.0), value(4, 50.0 + second as f64)],
                    gaps: Vec::new(),
                },
                SampleBatch {
                    at_unix_ns: start + second * S,
                    values: Vec::new(),
                    gaps: vec![record::SampleGap {
                        sampler: 2,
                        series: None,
                        reason: "connect: Connection refused (os error 111)".to_owned(),
                    }],
                },
            ];
            resources.add(&tables, &batches);
        }
        let summary = resources.close(Some(start)).unwrap();
        let nginx = &summary.samplers[0];
        assert_eq!(nginx.stat("cpu").unwrap().peak, 100.0);
        let db = &summary.samplers[1];
        assert_eq!(
            db.stat("tx").unwrap().peak,
            169.0,
            "databases of one server add up"
        );
        assert_eq!(
            summary.warnings,
            vec![
                "nginx at 100% of one core from 12 s",
                "nginx fds at 96% of limit (1024) from 15 s; beyond it accept() fails with \"too many open files\"",
                "monitor: prom http://x/metrics: 20 gaps (connect: Connection refused (os error 111))",
            ]
        );
        assert_eq!((summary.values, summary.gaps), (100, 20));
        assert!(Resources::default().close(None).is_none());
    }
}
