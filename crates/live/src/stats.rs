//! [`LiveStats`]: the [`engine::RunObserver`] that folds a run into a [`Snapshot`].
//!
//! Completions are binned by the second they completed in; a second is settled (its
//! percentiles taken) once no worker can still report a request that completed in it
//! (workers ship at least every 100 ms), as the engine's stop rules do. The run's
//! histograms are read at each settling, about once a second, never per batch.

use std::collections::BTreeMap;

use engine::{Clock, RunObserver};
use record::{ErrorEntry, ErrorKind, GeneratorStats, Record, SampleFrame, TargetInfo};
use report::Distribution;
use workload::{Plan, RuleWatch};

use crate::checks::{self, CheckTable};
use crate::latest::Latest;
use crate::resources::Headlines;
use crate::settle::{SECOND_NS, SETTLE_NS, SettlingSeconds};
use crate::snapshot::{ChecksState, Latency, RuleState, Snapshot, Window, WorstCheck};
use crate::started::{LoadCount, LoadUnit};

/// Where the display thread reads the latest [`Snapshot`].
pub type LiveHandle = Latest<Snapshot>;

impl Latest<Snapshot> {
    /// A copy of the latest snapshot.
    pub fn snapshot(&self) -> Snapshot {
        self.get()
    }
}

/// Latency and lag of a set of completions, in bounded memory: the report's own
/// [`Distribution`], so the run's figures at the end are the ones `report` prints.
struct Completions {
    completed: u64,
    successes: u64,
    latency: Distribution,
    lag: Distribution,
}

impl Completions {
    fn new() -> Completions {
        Completions {
            completed: 0,
            successes: 0,
            latency: Distribution::new(),
            lag: Distribution::new(),
        }
    }

    fn add(&mut self, record: &Record) {
        self.completed += 1;
        self.successes += u64::from(record.is_success());
        self.latency.add(record.latency_ns);
        self.lag.add(record.send_lag_ns);
    }

    /// Fills a window's completion figures.
    fn fill(&self, window: &mut Window) {
        window.completed = self.completed;
        window.successes = self.successes;
        window.latency = Latency {
            p50_ns: self.latency.quantile_so_far(0.50),
            p99_ns: self.latency.quantile_so_far(0.99),
            max_ns: self.latency.max(),
        };
        window.lag_p99_ns = self.lag.quantile_so_far(0.99);
    }
}

impl Default for Completions {
    fn default() -> Completions {
        Completions::new()
    }
}

/// Folds a run into a [`Snapshot`] on the collector thread; see the module docs.
pub struct LiveStats {
    plans: Vec<Plan>,
    start_unix_ns: u64,
    /// Completions by second, for seconds not settled yet (later completions in a
    /// settled one count only for the run).
    seconds: SettlingSeconds<Completions>,
    run: Completions,
    status_codes: BTreeMap<u16, u64>,
    /// Failures by error id - 1, and the kinds of the ids known so far.
    error_counts: Vec<u64>,
    error_kinds: Vec<ErrorKind>,
    /// The first failed connect's text (`connect: connection refused`).
    connect_error: Option<String>,
    /// Each distinct `host:port` of the run's targets, in order.
    addresses: Vec<String>,
    /// Which attacks are flows, whose load is their runs started.
    load: LoadCount,
    /// Records that started a unit of the load (all of it once the run is over).
    started_done: u64,
    /// The previous stats sample: when (from time zero), requests sent and the load
    /// started by then.
    previous_stats: (u64, u64, Option<u64>),
    /// The monitor's latest headline samples (`attack -monitor`).
    headlines: Headlines,
    /// The flows' checks.
    checks: CheckTable,
    /// The stream connections' figures, folded from every stats sample.
    streams: report::StreamsSoFar,
    snapshot: Snapshot,
    handle: LiveHandle,
}

impl LiveStats {
    /// Watches a run of these plans (one per attack, in order).
    pub fn new(plans: Vec<Plan>) -> LiveStats {
        let total_ns = plans
            .iter()
            .map(Plan::end_ns)
            .try_fold(0u64, |longest, end| end.map(|end| longest.max(end)));
        LiveStats {
            plans,
            start_unix_ns: 0,
            seconds: SettlingSeconds::new(),
            run: Completions::new(),
            status_codes: BTreeMap::new(),
            error_counts: Vec::new(),
            error_kinds: Vec::new(),
            connect_error: None,
            addresses: Vec::new(),
            load: LoadCount::default(),
            started_done: 0,
            previous_stats: (0, 0, None),
            headlines: Headlines::default(),
            checks: CheckTable::default(),
            streams: report::StreamsSoFar::default(),
            snapshot: Snapshot {
                total_ns,
                ..Snapshot::default()
            },
            handle: LiveHandle::default(),
        }
    }

    /// Tells which attacks (in order) are flows: their schedules ask for runs
    /// started, which their figures are then held to (requests beside them).
    pub fn with_flows(mut self, flows: Vec<bool>) -> LiveStats {
        self.load = LoadCount::new(flows);
        self.snapshot.unit = self.load.unit();
        self
    }

    /// Where the display reads the snapshots.
    pub fn handle(&self) -> LiveHandle {
        self.handle.clone()
    }

    /// The snapshot as it stands (what the handle would read).
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Requests the plans asked for by `at_ns`; `None` when every attack is closed.
    fn asked_by(&self, at_ns: u64) -> Option<u64> {
        self.plans
            .iter()
            .filter_map(|plan| plan.asked_by(at_ns))
            .reduce(|a, b| a + b)
    }

    /// The run's targets from id `first_index` on, as its target table grows: which
    /// are flow steps, and what their checks are called. Records of a target count
    /// toward its checks once it is announced, so the run's fixed targets come before
    /// the first record (the engine writes a target to the record file before any
    /// record that uses it, and announces it the same way).
    pub fn targets(&mut self, first_index: usize, new: &[TargetInfo]) {
        self.checks.targets(first_index, new);
        for target in new {
            let address = report::target_address(&target.url);
            if !self.addresses.contains(&address) {
                self.addresses.push(address);
            }
        }
    }

    /// Nothing listened: every request so far failed to connect. In the words of the
    /// report's diagnosis ([`analysis::diagnosis::Unreached`]).
    fn unreachable(&self) -> Option<String> {
        let run = &self.snapshot.run;
        let connects = (self.snapshot.errors.iter())
            .find(|(kind, _)| *kind == ErrorKind::Connect)
            .map_or(0, |(_, n)| *n);
        if run.completed == 0 || connects < run.completed {
            return None;
        }
        let error = self.connect_error.as_deref().unwrap_or_default();
        let unreached = analysis::diagnosis::Unreached {
            address: self.addresses.join(", "),
            error: error.strip_prefix("connect: ").unwrap_or(error).to_owned(),
            requests: run.completed,
        };
        Some(report::words::diagnosis::unreached(&unreached))
    }

    fn add(&mut self, record: &Record) {
        let end_ns = record.end_unix_ns().saturating_sub(self.start_unix_ns);
        if let Some(bin) = self.seconds.bin(end_ns) {
            bin.add(record);
        }
        self.run.add(record);
        self.started_done += u64::from(self.load.starts_load(record));
        self.checks.add(record);
        *self.status_codes.entry(record.status).or_default() += 1;
        if let Some(index) = (record.error as usize).checked_sub(1) {
            if self.error_counts.len() <= index {
                self.error_counts.resize(index + 1, 0);
            }
            self.error_counts[index] += 1;
        }
    }

    /// Settles the seconds that are over by `now_ns` (all of them at the end): the
    /// last settled one becomes the last second, and the run's percentiles are read
    /// anew (about once a second, not per batch).
    fn settle(&mut self, now_ns: u64) {
        let mut last = None;
        self.seconds.settle(now_ns, |_, bin| last = Some(bin));
        let Some(bin) = last else {
            return;
        };
        // A second without completions has an empty bin: its figures are zero.
        bin.fill(&mut self.snapshot.last_second);
        self.run.fill(&mut self.snapshot.run);
        // Once a second: a sentence is only written while nothing answers.
        self.snapshot.unreachable = self.unreachable();
    }

    /// Counts that change per batch: cheap to refresh each time.
    fn refresh(&mut self) {
        let now_ns = self.seconds.now_ns();
        let asked = self.asked_by(now_ns);
        let snapshot = &mut self.snapshot;
        snapshot.elapsed_ns = now_ns;
        snapshot.target_rate_per_sec = self
            .plans
            .iter()
            .filter_map(|plan| plan.rate_at(now_ns))
            .reduce(|a, b| a + b);
        let run = &mut snapshot.run;
        run.span_ns = now_ns;
        run.asked = asked;
        run.completed = self.run.completed;
        run.successes = self.run.successes;
        run.sent = run.sent.max(run.completed);
        // No stats sample follows the last requests: what completed was started.
        if self.load.unit() != LoadUnit::Requests {
            run.started = Some(run.started.unwrap_or(0).max(self.started_done));
        }
        snapshot.status_codes.clear();
        snapshot
            .status_codes
            .extend(self.status_codes.iter().map(|(code, n)| (*code, *n)));
        snapshot.errors = errors_by_kind(&self.error_counts, &self.error_kinds);
        fill_checks(&mut snapshot.checks, self.checks.checks());
    }

    fn publish(&mut self) {
        self.refresh();
        self.settle(self.seconds.now_ns());
        self.handle.publish(&self.snapshot);
    }
}

/// The checks' line: all runs together and the worst, its name written into the
/// snapshot's own string (refreshed per batch, so a steady run allocates nothing).
fn fill_checks(state: &mut Option<ChecksState>, checks: &[checks::Check]) {
    let Some((passed, runs, worst)) = checks::overall(checks) else {
        *state = None;
        return;
    };
    let state = state.get_or_insert_with(ChecksState::default);
    (state.passed, state.runs) = (passed, runs);
    match worst {
        Some(check) => {
            let worst = state.worst.get_or_insert_with(WorstCheck::default);
            check.write_full_name(&mut worst.name);
            (worst.passed, worst.failed) = (check.passed, check.failed);
        }
        None => state.worst = None,
    }
}

/// Failures by kind, most frequent first; ids whose entry has not arrived yet (it
/// follows within a flush) wait for it.
fn errors_by_kind(counts: &[u64], kinds: &[ErrorKind]) -> Vec<(ErrorKind, u64)> {
    let mut by_kind: BTreeMap<ErrorKind, u64> = BTreeMap::new();
    for (count, kind) in counts.iter().zip(kinds) {
        if *count > 0 {
            *by_kind.entry(*kind).or_default() += count;
        }
    }
    let mut errors: Vec<(ErrorKind, u64)> = by_kind.into_iter().collect();
    errors.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    errors
}

impl RunObserver for LiveStats {
    fn start(&mut self, clock: Clock) {
        self.start_unix_ns = clock.start_unix_ns();
        self.streams = report::StreamsSoFar::new(self.start_unix_ns);
    }

    fn targets(&mut self, first_index: usize, new: &[TargetInfo]) {
        LiveStats::targets(self, first_index, new);
    }

    fn records(&mut self, records: &[Record]) {
        for record in records {
            self.add(record);
        }
        self.publish();
    }

    fn behind_at_cap(&mut self, requests: u64) {
        self.snapshot.behind_at_cap = requests;
    }

    fn stats(&mut self, stats: &GeneratorStats) {
        let at_ns = stats.at_unix_ns.saturating_sub(self.start_unix_ns);
        let (previous_ns, previous_sent, previous_started) = self.previous_stats;
        let started = self.load.started(stats);
        let span_ns = at_ns.saturating_sub(previous_ns);
        if span_ns > 0 {
            // Per second, whatever the interval between samples was.
            let per_second = |count: u64| {
                u64::try_from(u128::from(count) * u128::from(SECOND_NS) / u128::from(span_ns))
                    .unwrap_or(u64::MAX)
            };
            let asked = self
                .asked_by(at_ns)
                .zip(self.asked_by(previous_ns))
                .map(|(now, before)| per_second(now.saturating_sub(before)));
            let last = &mut self.snapshot.last_second;
            last.span_ns = SECOND_NS;
            last.sent = per_second(stats.sent.saturating_sub(previous_sent));
            last.started =
                started.map(|now| per_second(now.saturating_sub(previous_started.unwrap_or(0))));
            last.asked = asked;
            self.previous_stats = (at_ns, stats.sent, started);
        }
        let snapshot = &mut self.snapshot;
        snapshot.run.sent = stats.sent;
        snapshot.run.started = started;
        snapshot.in_flight = stats.in_flight;
        snapshot.connections_open = stats.connections_open;
        snapshot.behind = stats.behind;
        if self.streams.add(stats) {
            snapshot.streams = Some(self.streams.clone());
        }
        self.seconds.advance(at_ns);
        self.publish();
    }

    fn errors(&mut self, first_index: usize, new: &[ErrorEntry]) {
        self.error_kinds.truncate(first_index);
        self.error_kinds.extend(new.iter().map(|entry| entry.kind));
        if let Some(entry) = new.iter().find(|e| e.kind == ErrorKind::Connect) {
            self.connect_error.get_or_insert_with(|| entry.text.clone());
        }
    }

    fn rules(&mut self, judged_ns: u64, watches: &[RuleWatch]) {
        self.snapshot.rules = watches
            .iter()
            .map(|watch| RuleState {
                rule: watch.rule.to_string(),
                held_ns: watch.held_ns(judged_ns),
                for_ns: watch.rule.for_ns(),
                value: watch.rule.format_value(watch.last_value()),
            })
            .collect();
        self.handle.publish(&self.snapshot);
    }

    fn samples(&mut self, frame: &SampleFrame) {
        self.headlines.add(frame);
        self.snapshot.resources = self.headlines.lines();
        self.handle.publish(&self.snapshot);
    }

    fn finish(&mut self) {
        self.snapshot.finished = true;
        self.refresh();
        // Every completion is in: settle the second the last one ended in.
        self.settle(self.seconds.now_ns().saturating_add(SECOND_NS + SETTLE_NS));
        self.handle.publish(&self.snapshot);
    }
}

/// The watch of `errors > 50% for 10s` after `seconds` seconds at 80% errors (tests).
#[cfg(test)]
pub(crate) fn failing_for(seconds: u64) -> RuleWatch {
    let rule = workload::StopRule::parse("errors > 50% for 10s").expect("a rule");
    let mut watch = RuleWatch::new(rule);
    let bad = workload::SecondStats {
        requests: 10,
        errors: 8,
        ..workload::SecondStats::default()
    };
    for second in 0..seconds {
        assert!(watch.observe(second * SECOND_NS, &bad).is_none());
    }
    watch
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use workload::{Pacing, Schedule};

    const MS: u64 = 1_000_000;

    /// A request that ended at `end_ms` after `latency_ms`.
    fn record(end_ms: u64, latency_ms: u64, status: u16, error: u32) -> Record {
        Record {
            intended_unix_ns: (end_ms - latency_ms) * MS,
            latency_ns: latency_ms * MS,
            send_lag_ns: MS / 10,
            status,
            error,
            ..Record::default()
        }
    }

    /// `per_second` requests in each of `seconds`, spread over the second.
    fn steady(seconds: &[u64], per_second: u64, status: u16, error: u32) -> Vec<Record> {
        let mut records = Vec::new();
        for &second in seconds {
            for i in 0..per_second {
                records.push(record(
                    second * 1000 + i * (1000 / per_second) + 20,
                    10,
                    status,
                    error,
                ));
            }
        }
        records
    }

    fn stats(at_ms: u64, sent: u64) -> GeneratorStats {
        GeneratorStats {
            at_unix_ns: at_ms * MS,
            cpu_ns: 0,
            sent,
            completed: sent,
            in_flight: 1,
            connections_open: 2,
            behind: 0,
            rss_bytes: 0,
            attacks: Vec::new(),
            streams: None,
            starts: 0,
        }
    }

    struct Row {
        name: &'static str,
        records: Vec<Record>,
        error_kinds: Vec<ErrorKind>,
        /// (at ms, sent by then)
        stats: Vec<(u64, u64)>,
        /// (completed, successes, p99 ms) of the last settled second
        last: (u64, u64, u64),
        /// completions and success ratio over the run
        run: (u64, Option<f64>),
        codes: Vec<(u16, u64)>,
        errors: Vec<(ErrorKind, u64)>,
        /// what the progress line holds
        line: &'static str,
    }

    fn ten_per_second_for_10s() -> Plan {
        Plan {
            pacing: Pacing::Open(Schedule::constant(10.0)),
            duration_ns: Some(10_000 * MS),
            max_requests: None,
            shard: workload::Shard::WHOLE,
        }
    }

    #[test]
    fn aggregation_table() {
        let rows = [
            Row {
                name: "no records yet",
                records: Vec::new(),
                error_kinds: Vec::new(),
                stats: Vec::new(),
                last: (0, 0, 0),
                run: (0, None),
                codes: Vec::new(),
                errors: Vec::new(),
                line: "0s/10s  sent 0.0/s  ok -  p99 -  lag p99 -  in flight 0",
            },
            Row {
                name: "steady and all fine",
                records: steady(&[0, 1, 2], 10, 200, 0),
                error_kinds: Vec::new(),
                stats: vec![(1000, 10), (2000, 20), (3000, 30), (3400, 34)],
                last: (10, 10, 10),
                run: (30, Some(1.0)),
                codes: vec![(200, 30)],
                errors: Vec::new(),
                line: "3s/10s  asked 10.0/s  sent 10.0/s  ok 100.0%  p99 10ms  lag p99 100µs  in flight 1",
            },
            Row {
                name: "all errors",
                records: steady(&[0, 1], 10, 0, 1),
                error_kinds: vec![ErrorKind::Timeout],
                stats: vec![(1000, 10), (2000, 20), (2400, 20)],
                last: (10, 0, 10),
                run: (20, Some(0.0)),
                codes: vec![(0, 20)],
                errors: vec![(ErrorKind::Timeout, 20)],
                line: "2s/10s  asked 10.0/s  sent 0.0/s  ok 0.0%  p99 10ms",
            },
            Row {
                name: "a second with no completions",
                records: steady(&[0, 2], 10, 200, 0),
                error_kinds: Vec::new(),
                stats: vec![(1000, 10), (2000, 10), (2400, 14)],
                last: (0, 0, 0),
                run: (20, Some(1.0)),
                codes: vec![(200, 20)],
                errors: Vec::new(),
                line: "3s/10s  asked 10.0/s  sent 10.0/s  ok -  p99 -  lag p99 -  in flight 1",
            },
        ];
        for row in rows {
            let mut live = LiveStats::new(vec![ten_per_second_for_10s()]);
            let handle = live.handle();
            live.start(Clock::start());
            live.start_unix_ns = 0;
            live.errors(0, &entries(&row.error_kinds));
            live.records(&row.records);
            for (at_ms, sent) in &row.stats {
                live.stats(&stats(*at_ms, *sent));
            }
            let snapshot = handle.snapshot();
            assert_eq!(&snapshot, live.snapshot(), "{}: published", row.name);
            let last = &snapshot.last_second;
            let p99_ms = (last.latency.p99_ns + MS / 2) / MS;
            assert_eq!(
                (last.completed, last.successes, p99_ms),
                row.last,
                "{}: last second",
                row.name
            );
            assert_eq!(
                (snapshot.run.completed, snapshot.run.success_ratio()),
                row.run,
                "{}: run",
                row.name
            );
            assert_eq!(snapshot.status_codes, row.codes, "{}", row.name);
            assert_eq!(snapshot.errors, row.errors, "{}", row.name);
            let line = snapshot.progress_line();
            assert!(line.starts_with(row.line), "{}: {line}", row.name);
        }
    }

    fn entries(kinds: &[ErrorKind]) -> Vec<ErrorEntry> {
        kinds
            .iter()
            .map(|kind| ErrorEntry {
                kind: *kind,
                text: kind.name().to_owned(),
            })
            .collect()
    }

    /// A run whose every request failed to connect names the address in the view, as
    /// the report's diagnosis does; one request answered and it is not said.
    #[test]
    fn nothing_listening_is_named() {
        let refused = ErrorEntry {
            kind: ErrorKind::Connect,
            text: "connect: connection refused".to_owned(),
        };
        let target = TargetInfo {
            method: "GET".to_owned(),
            url: "http://127.0.0.1:18199/x".to_owned(),
            ..TargetInfo::default()
        };
        // (case, records, what the view says)
        let rows = [
            (
                "every connect refused",
                steady(&[0, 1], 10, 0, 1),
                Some("nothing listened at 127.0.0.1:18199: connection refused, every request (20)"),
            ),
            (
                "one answered",
                [steady(&[0], 10, 0, 1), steady(&[1], 1, 200, 0)].concat(),
                None,
            ),
        ];
        for (case, records, want) in rows {
            let mut live = LiveStats::new(vec![ten_per_second_for_10s()]);
            live.start(Clock::start());
            live.start_unix_ns = 0;
            live.targets(0, std::slice::from_ref(&target));
            live.errors(0, std::slice::from_ref(&refused));
            live.records(&records);
            live.stats(&stats(2400, 20));
            let snapshot = live.snapshot();
            assert_eq!(snapshot.unreachable.as_deref(), want, "{case}");
            let view = snapshot.view_lines().join("\n");
            assert_eq!(
                view.contains("nothing listened"),
                want.is_some(),
                "{case}: {view}"
            );
        }
    }

    #[test]
    fn the_run_figures_at_the_end_are_the_reports() {
        // Both regimes: exact below the report's limit, its histogram beyond.
        for count in [1_000u64, 300_000] {
            let records: Vec<Record> = (0..count)
                .map(|k| Record {
                    intended_unix_ns: k * 50_000,
                    latency_ns: 1_000_000 + (k * 7919 % 100_003) * 97,
                    send_lag_ns: (k * 31 % 1009) * 1000,
                    status: 200,
                    ..Record::default()
                })
                .collect();
            let mut live = LiveStats::new(vec![ten_per_second_for_10s()]);
            live.start(Clock::start());
            live.records(&records);
            live.finish();
            let mut metrics = report::Metrics::new(None);
            metrics.add_all(&records);
            let report = metrics.close(&record::RunTables::default());
            let run = &live.snapshot().run;
            assert_eq!(
                (run.latency.p50_ns, run.latency.p99_ns, run.latency.max_ns),
                (
                    report.latencies.p50_ns,
                    report.latencies.p99_ns,
                    report.latencies.max_ns
                ),
                "{count} records: latency"
            );
            assert_eq!(run.lag_p99_ns, report.send_lag.p99_ns, "{count}: lag");
            assert_eq!(run.completed, report.requests, "{count}: requests");
            // The line left at the end writes them as `report` does.
            let as_report = |ns: u64| units::GoDuration::report_ns(ns);
            let line = live.snapshot().final_line();
            let want = format!(
                "done: {count} requests, ok 100.0%, latency p50 {} p99 {} max {}",
                as_report(report.latencies.p50_ns),
                as_report(report.latencies.p99_ns),
                as_report(report.latencies.max_ns),
            );
            assert!(line.starts_with(&want), "{line}\nwant {want}");
        }
    }

    #[test]
    fn errors_wait_for_their_entry_and_the_end_settles_everything() {
        let mut live = LiveStats::new(vec![ten_per_second_for_10s()]);
        live.records(&steady(&[0], 4, 0, 2));
        assert_eq!(live.snapshot().errors, [], "entry 2 not known yet");
        live.errors(0, &entries(&[ErrorKind::Connect, ErrorKind::Reset]));
        live.finish();
        let snapshot = live.snapshot();
        assert_eq!(snapshot.errors, [(ErrorKind::Reset, 4)]);
        assert_eq!(
            snapshot.last_second.completed, 4,
            "the last second settles at the end"
        );
        assert!(snapshot.finished);
        assert_eq!((snapshot.run.latency.max_ns + MS / 2) / MS, 10);
    }

    #[test]
    fn checks_show_their_pass_rate_and_the_worst_as_they_go() {
        let mut live = LiveStats::new(vec![ten_per_second_for_10s()]);
        let handle = live.handle();
        let step = |name: &str, checks: &[&str]| TargetInfo {
            method: "GET".to_owned(),
            url: "http://127.0.0.1/".to_owned(),
            step: Some(name.to_owned()),
            checks: checks.iter().map(|c| (*c).to_owned()).collect(),
        };
        live.targets(
            0,
            &[
                step("login", &["status 200", "has token"]),
                step("list", &["status 200"]),
            ],
        );
        let with = |target: u32, checks_failed: u32| Record {
            target,
            checks_failed,
            ..record(100, 10, 200, 0)
        };
        live.records(&[with(0, 0), with(1, 0)]);
        assert_eq!(
            handle.snapshot().checks,
            Some(ChecksState {
                passed: 3,
                runs: 3,
                worst: None
            })
        );
        // One token missing of two, one list of three failed.
        live.records(&[
            with(0, 0b10 | Record::FAILED_BY_FLOW),
            with(1, 1),
            with(1, 0),
        ]);
        let snapshot = handle.snapshot();
        assert_eq!(
            snapshot.checks,
            Some(ChecksState {
                passed: 5,
                runs: 7,
                worst: Some(WorstCheck {
                    name: "login: has token".to_owned(),
                    passed: 1,
                    failed: 1
                })
            })
        );
        assert!(
            snapshot.view_lines().contains(
                &"checks    71.42% passed (5 of 7)   worst: login: has token 50% (1 failed)"
                    .to_owned()
            ),
            "{:?}",
            snapshot.view_lines()
        );
        // A run without flows has no checks line.
        let mut plain = LiveStats::new(vec![ten_per_second_for_10s()]);
        plain.records(&steady(&[0], 10, 200, 0));
        assert_eq!(plain.snapshot().checks, None);
        assert!(
            !plain
                .snapshot()
                .view_lines()
                .iter()
                .any(|l| l.starts_with("checks"))
        );
    }

    #[test]
    fn stream_connections_get_their_line_once_one_opened() {
        let mut live = LiveStats::new(vec![ten_per_second_for_10s()]);
        live.stats(&stats(1000, 10));
        assert!(live.snapshot().streams.is_none());
        let view = live.snapshot().view_lines().join("\n");
        assert!(!view.contains("streams"), "{view}");
        let mut latency = record::MessageLatency::default();
        latency.add(2 * MS);
        latency.add(9 * MS);
        let streams = record::StreamStats {
            open: 812,
            opened: 10,
            closed: 2,
            messages_out: 200,
            messages_in: 400,
            latency,
            ..record::StreamStats::default()
        };
        live.stats(&GeneratorStats {
            streams: Some(streams),
            ..stats(1500, 20)
        });
        let lines = live.snapshot().view_lines();
        let line = lines.iter().find(|l| l.starts_with("streams")).unwrap();
        assert_eq!(
            line,
            "streams   open 812 (+20.0 -4.0 /s)   messages/s out 400 in 800   \
             latency 1s: p50 2.02ms  p99 9.04ms  max 9.04ms  run: p50 2.02ms  p99 9.04ms  max 9.04ms"
        );
        let progress = live.snapshot().progress_line();
        assert!(
            progress.ends_with("  streams open 812  messages/s out 400 in 800"),
            "{progress}"
        );
    }

    #[test]
    fn a_flow_is_held_to_its_runs_started_with_its_requests_beside() {
        // A flow of 3 steps at 10 runs/s: 30 requests a second. (the attacks that are
        // flows, the progress line's rates, the view's first line)
        let rows = [
            (
                vec![true],
                "1s/10s  runs started 10.0/s of 10.0/s asked  requests sent 30.0/s  ok",
                // By 1 s, the start due at 1 s was asked too.
                "runs/s    started 10.0 of 10.0 asked   run: started 10.0 of 11.0 asked",
            ),
            (
                vec![false],
                "1s/10s  asked 10.0/s  sent 30.0/s  ok",
                "rate/s    asked 10.0  sent 30.0  done 0.0   run: asked 11.0  sent 30.0  done 0.0",
            ),
        ];
        for (flows, progress, view) in rows {
            let mut live = LiveStats::new(vec![ten_per_second_for_10s()]).with_flows(flows);
            live.start(Clock::start());
            let sample = GeneratorStats {
                at_unix_ns: live.start_unix_ns + 1000 * MS,
                starts: 10,
                ..stats(0, 30)
            };
            live.stats(&sample);
            let snapshot = live.snapshot();
            assert!(
                snapshot.progress_line().starts_with(progress),
                "{}",
                snapshot.progress_line()
            );
            assert_eq!(snapshot.view_lines()[0], view);
        }
    }

    #[test]
    fn a_flow_s_runs_started_count_its_completed_starts_at_the_end() {
        let mut live = LiveStats::new(vec![ten_per_second_for_10s()]).with_flows(vec![true]);
        // 4 runs of 3 steps completed; the last sample had seen 2 runs started.
        let records: Vec<Record> = (0..12u64)
            .map(|i| Record {
                seq: ((i / 3) << 16) | (i % 3),
                ..record(100 + i, 10, 200, 0)
            })
            .collect();
        live.stats(&GeneratorStats {
            starts: 2,
            ..stats(50, 6)
        });
        live.records(&records);
        live.finish();
        let run = &live.snapshot().run;
        assert_eq!((run.started, run.sent, run.completed), (Some(4), 12, 12));
    }

    #[test]
    fn rules_show_their_streak() {
        let mut live = LiveStats::new(vec![ten_per_second_for_10s()]);
        live.rules(3 * SECOND_NS, &[failing_for(3)]);
        let lines = live.snapshot().view_lines();
        assert_eq!(
            lines.last().unwrap(),
            "stop rule 'errors > 50% for 10s': held 3s of 10s (now 80.0%)"
        );
    }
}
