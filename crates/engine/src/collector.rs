//! The collector: the one thread that writes. It takes worker batches, adds new
//! dictionary entries before the records that use them, flushes a block about four
//! times a second with the run's watermark, and samples the generator's own health.

use std::io::Write;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::time::Duration;

use record::{AttackStats, Connection, GeneratorStats, Logged, Record, RecordWriter, SampleFrame};
use workload::{Fired, Plan};

use crate::EngineError;
use crate::clock::Clock;
use crate::errors::ErrorRegistry;
use crate::exemplars::ExemplarKeeper;
use crate::observer::RunObserver;
use crate::replay_feed::ReplayOutput;
use crate::sample_feed::SampleFeed;
use crate::stop_handle::StopHandle;
use crate::stop_rules::RuleWatcher;
use crate::stream_tally::{StreamSeconds, rule_figures};
use crate::target_registry::TargetRegistry;
use crate::worker_report::{Counters, WorkerReport};

const FLUSH_INTERVAL_NS: u64 = 250_000_000;
const FLUSH_RECORDS: usize = 32_768;
const STATS_INTERVAL_NS: u64 = 1_000_000_000;

/// The tables the collector writes into dictionary blocks.
#[derive(Clone, Copy)]
pub(crate) struct Registries<'a> {
    pub errors: &'a ErrorRegistry,
    pub targets: &'a TargetRegistry,
    /// What replays' logs said about the requests dealt out.
    pub replays: &'a ReplayOutput,
}

pub(crate) struct Collector<W: Write> {
    pub writer: RecordWriter<W>,
    pub clock: Clock,
    pub errors_written: usize,
    pub targets_written: usize,
    pub watermarks: Vec<u64>,
    pub counters: Vec<Counters>,
    /// Per worker, per attack.
    pub attack_counters: Vec<Vec<AttackStats>>,
    pub watcher: RuleWatcher,
    pub plans: Vec<Plan>,
    /// The stop rule that fired, if one did.
    pub fired: Option<Fired>,
    pub recycle: Vec<SyncSender<Vec<Record>>>,
    pub stop: StopHandle,
    /// Replayed requests' logged figures not yet due (their `intended_unix_ns` is
    /// still an offset from time zero).
    pub logged: Vec<Logged>,
    /// Stream steps' connection figures taken since the last flush.
    pub connections: Vec<Connection>,
    /// Every worker's stream figures, read into each stats sample.
    pub streams: StreamSeconds,
    /// When the last stats sample was taken, unix ns (the run's start before one).
    pub last_stats_unix_ns: u64,
    /// Under `-trace`: the traced requests worth looking at, for the end block.
    pub exemplars: Option<ExemplarKeeper>,
}

impl<W: Write> Collector<W> {
    /// Drains worker reports until every worker has said it is done, writing samples
    /// as they come; the feed's last frames follow the last records.
    pub(crate) fn run(
        &mut self,
        reports: &Receiver<WorkerReport>,
        registries: Registries<'_>,
        samples: &mut dyn SampleFeed,
        observer: &mut dyn RunObserver,
    ) -> Result<(), EngineError> {
        let mut running = self.watermarks.len();
        let (mut last_flush, mut last_stats) = (0u64, 0u64);
        let mut frames = Vec::new();
        while running > 0 {
            match reports.recv_timeout(Duration::from_millis(50)) {
                Ok(report) => {
                    running -= usize::from(report.done);
                    observer.records(&report.records);
                    self.take(report);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            samples.ready(&mut frames);
            self.write_samples(&mut frames, observer)
                .inspect_err(|_| self.stop.abort())?;
            let now = self.clock.now_ns();
            if now >= last_flush + FLUSH_INTERVAL_NS || self.writer.pending() >= FLUSH_RECORDS {
                self.flush(registries, observer)
                    .inspect_err(|_| self.stop.abort())?;
                last_flush = now;
            }
            self.judge_rules(now, observer);
            if now >= last_stats + STATS_INTERVAL_NS {
                self.write_stats(now, observer)
                    .inspect_err(|_| self.stop.abort())?;
                last_stats = now;
            }
        }
        self.flush(registries, observer)?;
        // The last part-second of a run with streams: their sums then match the
        // connections' entries (a run without streams ends as before).
        if self.streams.seen() {
            self.write_stats(self.clock.now_ns(), observer)?;
        }
        samples.finish(&mut frames);
        self.write_samples(&mut frames, observer)
    }

    fn write_samples(
        &mut self,
        frames: &mut Vec<SampleFrame>,
        observer: &mut dyn RunObserver,
    ) -> Result<(), EngineError> {
        for frame in frames.drain(..) {
            self.writer
                .write_samples(&frame)
                .map_err(EngineError::Record)?;
            observer.samples(&frame);
        }
        Ok(())
    }

    /// A stop rule that fires drains the run, like Ctrl-C, and is remembered. Once
    /// stopping, nothing is asked any more, so no rule is judged against it.
    fn judge_rules(&mut self, now: u64, observer: &mut dyn RunObserver) {
        if self.fired.is_some() || self.watcher.is_empty() || self.stop.is_stopping() {
            return;
        }
        let plans: Vec<&Plan> = self.plans.iter().collect();
        let judged_before = self.watcher.judged_ns();
        // While a coordinator steers, it judges the rules on every shard's figures;
        // the streaks go on here, so a silent coordinator leaves them judged at once.
        if let Some(fired) = self.watcher.judge(now, &plans)
            && !self.stop.is_steered()
        {
            self.fired = Some(fired);
            self.stop.drain();
        }
        if self.watcher.judged_ns() != judged_before {
            observer.rules(self.watcher.judged_ns(), self.watcher.watches());
        }
    }

    fn take(&mut self, mut report: WorkerReport) {
        self.writer.extend(&report.records);
        self.connections.append(&mut report.connections);
        self.watcher.add(&report.records);
        if let Some(exemplars) = &mut self.exemplars {
            exemplars.add(&report.records);
        }
        self.attack_counters[report.worker] = std::mem::take(&mut report.attacks);
        self.watermarks[report.worker] = if report.done {
            u64::MAX
        } else {
            report.watermark_ns
        };
        self.counters[report.worker] = report.counters;
        report.records.clear();
        // The worker may have exited; then the vector is simply dropped.
        let _ = self.recycle[report.worker].try_send(report.records);
    }

    /// Writes new dictionary entries, then the buffered records with the watermark,
    /// then what replays' logs said about requests due by now.
    fn flush(
        &mut self,
        registries: Registries<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<(), EngineError> {
        // Taken before the dictionary is written: their targets are in it then.
        registries.replays.take_logged(&mut self.logged);
        let new_targets = registries.targets.since(self.targets_written);
        if !new_targets.is_empty() {
            self.writer
                .add_targets(self.targets_written, &new_targets)
                .map_err(EngineError::Record)?;
            observer.targets(self.targets_written, &new_targets);
            self.targets_written += new_targets.len();
        }
        let new_errors = registries.errors.since(self.errors_written);
        if !new_errors.is_empty() {
            self.writer
                .add_errors(self.errors_written, &new_errors)
                .map_err(EngineError::Record)?;
            observer.errors(self.errors_written, &new_errors);
            self.errors_written += new_errors.len();
        }
        let watermark = self.watermarks.iter().copied().min().unwrap_or(u64::MAX);
        let watermark = (watermark != u64::MAX).then(|| self.clock.unix_ns(watermark));
        self.writer
            .flush_records(watermark)
            .map_err(EngineError::Record)?;
        if !self.connections.is_empty() {
            // Their records went out with this flush or an earlier one.
            self.writer
                .write_connections(&self.connections)
                .map_err(EngineError::Record)?;
            self.connections.clear();
        }
        self.write_logged()
    }

    /// Writes the logged figures of requests due by now (the rest wait: a run cut
    /// short never sends them).
    fn write_logged(&mut self) -> Result<(), EngineError> {
        if self.logged.is_empty() {
            return Ok(());
        }
        let now = self.clock.now_ns();
        let (mut due, later): (Vec<Logged>, Vec<Logged>) = std::mem::take(&mut self.logged)
            .into_iter()
            .partition(|logged| logged.intended_unix_ns <= now);
        self.logged = later;
        if due.is_empty() {
            return Ok(());
        }
        for logged in &mut due {
            logged.intended_unix_ns = self.clock.unix_ns(logged.intended_unix_ns);
        }
        self.writer.write_logged(&due).map_err(EngineError::Record)
    }

    fn write_stats(&mut self, now: u64, observer: &mut dyn RunObserver) -> Result<(), EngineError> {
        let total = self.totals();
        let stats = GeneratorStats {
            at_unix_ns: self.clock.unix_ns(now),
            cpu_ns: process_cpu_ns(),
            sent: total.sent,
            starts: total.starts,
            completed: total.completed,
            in_flight: total.in_flight,
            connections_open: total.connections_open,
            behind: total.behind,
            rss_bytes: resident_bytes(),
            attacks: self.attack_totals(),
            streams: self.streams.sample(),
        };
        if let Some(streams) = &stats.streams {
            let span_ns = stats.at_unix_ns.saturating_sub(self.last_stats_unix_ns);
            self.watcher.streams(rule_figures(streams, span_ns));
        }
        self.last_stats_unix_ns = stats.at_unix_ns;
        self.writer
            .write_stats(&stats)
            .map_err(EngineError::Record)?;
        observer.behind_at_cap(total.behind_at_cap);
        observer.stats(&stats);
        Ok(())
    }

    /// Per attack, summed over workers; empty for a single attack without users, to
    /// keep such files as they were.
    fn attack_totals(&self) -> Vec<AttackStats> {
        let attacks = self.plans.len();
        let closed = self
            .plans
            .iter()
            .any(|p| matches!(p.pacing, workload::Pacing::Closed { .. }));
        if attacks < 2 && !closed {
            return Vec::new();
        }
        (0..attacks)
            .map(|a| {
                self.attack_counters.iter().filter_map(|w| w.get(a)).fold(
                    AttackStats::default(),
                    |mut sum, c| {
                        sum.sent += c.sent;
                        sum.completed += c.completed;
                        sum.in_flight += c.in_flight;
                        sum.users += c.users;
                        sum.starts += c.starts;
                        sum
                    },
                )
            })
            .collect()
    }

    pub(crate) fn totals(&self) -> Counters {
        self.counters
            .iter()
            .fold(Counters::default(), |mut sum, c| {
                sum.sent += c.sent;
                sum.starts += c.starts;
                sum.completed += c.completed;
                sum.in_flight += c.in_flight;
                sum.connections_open += c.connections_open;
                sum.behind += c.behind;
                sum.behind_at_cap += c.behind_at_cap;
                sum.wakeups += c.wakeups;
                sum.cap_waits += c.cap_waits;
                sum
            })
    }
}

/// CPU time (user + system) the whole process has used.
pub(crate) fn process_cpu_ns() -> u64 {
    let time = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    time.tv_sec as u64 * 1_000_000_000 + time.tv_nsec as u64
}

/// Resident set size now, from /proc (0 where unavailable).
pub(crate) fn resident_bytes() -> u64 {
    proc_status_kib("VmRSS:")
}

/// Peak resident set size, from /proc (0 where unavailable).
pub(crate) fn peak_resident_bytes() -> u64 {
    proc_status_kib("VmHWM:")
}

fn proc_status_kib(field: &str) -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}
