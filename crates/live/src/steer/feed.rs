//! [`SteerFeed`]: the shard side of steering (`attack -steer ADDR`). An
//! [`engine::RunObserver`] on the collector thread bins completions by the second they
//! ended in and settles each second as [`ShardSecond`] once no worker can still report
//! into it (as the stop rules do), keeping the last [`KEPT_SECONDS`]. The handler
//! [`SteerFeed::handler`] answers the coordinator:
//!
//! - `GET /seconds?from=N`: a [`ShardReport`] with the seconds from `N` on; each call
//!   tells the [`StopHandle`] the coordinator is in contact, so the local stop rules
//!   wait while it judges them on every shard's figures;
//! - `GET /stop?why=TEXT`: drains the run, which ends as stopped by a rule with `TEXT`
//!   as its reason;
//! - `GET /metrics`: the shard's Prometheus series ([`SteerFeed::with_metrics`]), which
//!   the coordinator adds up into one exposition for the run;
//! - `GET /records?from=BYTE`: the record file as written so far, from a byte offset,
//!   [`RECORDS_CHUNK`] at most per call ([`SteerFeed::with_records`]), which the
//!   coordinator's dashboard pulls and merges.
//!
//! The shard needs nothing from the coordinator: its records are its own file, and a
//! coordinator that goes silent leaves it judging its own rules.

use std::collections::{BTreeMap, VecDeque};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use engine::{Clock, RunConfig, RunObserver, StopHandle};
use record::{ErrorEntry, ErrorKind, GeneratorStats, Record};
use workload::Plan;

use super::buckets::Buckets;
use super::second::{FEED_VERSION, ShardReport, ShardSecond, ShardState};
use super::streams::ShardStreams;
use crate::settle::{SECOND_NS, SETTLE_NS, SettlingSeconds};
use crate::started::{LoadCount, LoadUnit};
use crate::{Handler, PrometheusHandle, Request, Response};

/// The most `/records` answers in one call.
pub const RECORDS_CHUNK: usize = 4 << 20;
/// Seconds kept for a coordinator that fell behind (ten minutes).
pub const KEPT_SECONDS: usize = 600;

/// One second of completions, until it settles.
#[derive(Default)]
struct Bin {
    successes: u64,
    latencies_ns: Vec<u64>,
    lags_ns: Vec<u64>,
    codes: BTreeMap<u16, u64>,
    error_ids: BTreeMap<u32, u64>,
    /// The stats samples' stream figures taken in the second.
    streams: Option<ShardStreams>,
}

/// What the handler reads: the report's head and the kept seconds.
#[derive(Default)]
struct Shared {
    head: ShardReport,
    seconds: VecDeque<ShardSecond>,
    /// A coordinator read the report that says the run finished.
    final_read: bool,
    /// A coordinator pulls the records, and has read them to their end.
    records_pulled: bool,
    records_read: bool,
}

/// Whether a coordinator has read that the run finished ([`SteerFeed::final_answer`]).
pub struct FinalAnswer(Arc<Mutex<Shared>>);

impl FinalAnswer {
    /// A coordinator read the final report.
    pub fn was_read(&self) -> bool {
        let shared = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        shared.final_read && (!shared.records_pulled || shared.records_read)
    }

    /// The record file is complete: `/records` has all of it from now on.
    pub fn records_written(&self) {
        let mut shared = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        shared.head.records_complete = true;
    }
}

/// The observer; see the module docs.
pub struct SteerFeed {
    plans: Vec<Plan>,
    start_unix_ns: u64,
    seconds: SettlingSeconds<Bin>,
    error_kinds: Vec<ErrorKind>,
    /// Records seen, all seconds.
    completed: u64,
    shared: Arc<Mutex<Shared>>,
    stop: StopHandle,
    metrics: Option<PrometheusHandle>,
    records: Option<PathBuf>,
    /// The last stats sample's time, unix ns: the next one's interval starts there.
    sampled_unix_ns: u64,
    /// Which attacks are flows, whose load is their runs started.
    load: LoadCount,
    /// Records that started a unit of the load, all seconds.
    started_done: u64,
}

impl SteerFeed {
    /// The feed of this run (this process's shard of it).
    pub fn new(config: &RunConfig, stop: &StopHandle) -> SteerFeed {
        let shard = config.shard();
        let load = LoadCount::new(config.attacks.iter().map(|a| a.flow.is_some()).collect());
        let head = ShardReport {
            feed_version: FEED_VERSION,
            index: shard.index(),
            count: shard.count(),
            fingerprint: format!("{:016x}", engine::plan_fingerprint(config)),
            rules: (config.settings.stop_rules.iter())
                .map(ToString::to_string)
                .collect(),
            unit: load.unit(),
            ..ShardReport::default()
        };
        SteerFeed {
            plans: (config.attacks.iter())
                .map(|attack| attack.settings.plan.clone())
                .collect(),
            start_unix_ns: 0,
            seconds: SettlingSeconds::new(),
            error_kinds: Vec::new(),
            completed: 0,
            shared: Arc::new(Mutex::new(Shared {
                head,
                seconds: VecDeque::new(),
                final_read: false,
                records_pulled: false,
                records_read: false,
            })),
            stop: stop.clone(),
            metrics: None,
            records: None,
            sampled_unix_ns: 0,
            load,
            started_done: 0,
        }
    }

    /// Serves the run's record file `path` on `/records` too.
    pub fn with_records(mut self, path: PathBuf) -> SteerFeed {
        self.records = Some(path);
        self
    }

    /// Serves these series on `/metrics` too.
    pub fn with_metrics(mut self, metrics: PrometheusHandle) -> SteerFeed {
        self.metrics = Some(metrics);
        self
    }

    /// What answers the coordinator (serve it with [`crate::Server`]).
    pub fn handler(&self) -> Handler {
        let answerer = Answerer {
            shared: Arc::clone(&self.shared),
            stop: self.stop.clone(),
            metrics: self.metrics.clone(),
            records: self.records.clone(),
        };
        Arc::new(move |request: &Request| answerer.answer(request))
    }

    /// Tells when a coordinator has read that the run finished, so the process can
    /// wait for that before its server goes.
    pub fn final_answer(&self) -> FinalAnswer {
        FinalAnswer(Arc::clone(&self.shared))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Settles the seconds over by `now_ns`, empty ones too: the coordinator must
    /// know a second with no completions is over.
    fn settle(&mut self, now_ns: u64) {
        let mut bins = Vec::new();
        self.seconds
            .settle(now_ns, |second, bin| bins.push((second, bin)));
        let settled: Vec<ShardSecond> = (bins.into_iter())
            .map(|(second, bin)| self.second_of(second, bin))
            .collect();
        if settled.is_empty() {
            return;
        }
        let mut shared = self.lock();
        shared.seconds.extend(settled);
        let excess = shared.seconds.len().saturating_sub(KEPT_SECONDS);
        shared.seconds.drain(..excess);
    }

    fn second_of(&self, second: u64, mut bin: Bin) -> ShardSecond {
        let middle_ns = second * SECOND_NS + SECOND_NS / 2;
        let mut errors: BTreeMap<ErrorKind, u64> = BTreeMap::new();
        for (id, count) in bin.error_ids {
            let kind = (id as usize)
                .checked_sub(1)
                .and_then(|index| self.error_kinds.get(index));
            *errors
                .entry(kind.copied().unwrap_or(ErrorKind::Other))
                .or_default() += count;
        }
        ShardSecond {
            second,
            requests: bin.latencies_ns.len() as u64,
            successes: bin.successes,
            asked_rate_per_sec: (self.plans.iter())
                .filter_map(|plan| plan.rate_at(middle_ns))
                .reduce(|a, b| a + b),
            latency_max_ns: bin.latencies_ns.iter().copied().max().unwrap_or(0),
            latency_sum_ns: bin.latencies_ns.iter().sum(),
            latency: Buckets::of(&mut bin.latencies_ns),
            lag: Buckets::of(&mut bin.lags_ns),
            codes: bin.codes.into_iter().collect(),
            errors: errors.into_iter().collect(),
            streams: bin.streams,
        }
    }

    /// Puts a stats sample's stream figures, taken `at_ns` after time zero, in the
    /// second it was taken in, or in a later one should a completion have ended after
    /// it: the latest moment seen is in a second still open, so none is lost.
    fn bin_streams(&mut self, at_ns: u64, sample: ShardStreams) {
        let Some(bin) = self.seconds.bin(at_ns.max(self.seconds.now_ns())) else {
            return;
        };
        match &mut bin.streams {
            Some(streams) => streams.absorb_later(sample),
            None => bin.streams = Some(sample),
        }
    }

    fn set_state(&self, state: ShardState) {
        let mut shared = self.lock();
        shared.head.state = state;
        shared.head.stop_detail = self.stop.detail().unwrap_or_default().to_owned();
    }
}

impl RunObserver for SteerFeed {
    fn start(&mut self, clock: Clock) {
        self.start_unix_ns = clock.start_unix_ns();
        self.sampled_unix_ns = self.start_unix_ns;
        self.lock().head.start_unix_ns = self.start_unix_ns;
        self.set_state(ShardState::Running);
    }

    fn records(&mut self, records: &[Record]) {
        self.completed += records.len() as u64;
        for record in records {
            self.started_done += u64::from(self.load.starts_load(record));
            let end_ns = record.end_unix_ns().saturating_sub(self.start_unix_ns);
            let Some(bin) = self.seconds.bin(end_ns) else {
                continue;
            };
            bin.successes += u64::from(record.is_success());
            bin.latencies_ns.push(record.latency_ns);
            bin.lags_ns.push(record.send_lag_ns);
            *bin.codes.entry(record.status).or_default() += 1;
            if record.error != 0 {
                *bin.error_ids.entry(record.error).or_default() += 1;
            }
        }
        // Records come every few hundred ms, stats once a second: settling here puts
        // a second in the coordinator's hands as soon as it is over.
        self.settle(self.seconds.now_ns());
    }

    fn stats(&mut self, stats: &GeneratorStats) {
        let at_ns = stats.at_unix_ns.saturating_sub(self.start_unix_ns);
        let span_ns = stats.at_unix_ns.saturating_sub(self.sampled_unix_ns);
        self.sampled_unix_ns = stats.at_unix_ns;
        if let Some(streams) = &stats.streams {
            let sample = ShardStreams {
                stats: streams.clone(),
                span_ns,
            };
            self.bin_streams(at_ns, sample);
        }
        self.seconds.advance(at_ns);
        self.settle(self.seconds.now_ns());
        let asked = (self.plans.iter())
            .filter_map(|plan| plan.asked_by(at_ns))
            .reduce(|a, b| a + b);
        let stopping = self.stop.is_stopping();
        let mut shared = self.lock();
        let head = &mut shared.head;
        (head.asked, head.sent) = (asked, stats.sent);
        head.started = self.load.started(stats);
        (head.in_flight, head.behind) = (stats.in_flight, stats.behind);
        if stopping && head.state == ShardState::Running {
            head.state = ShardState::Stopping;
            head.stop_detail = self.stop.detail().unwrap_or_default().to_owned();
        }
    }

    fn errors(&mut self, first_index: usize, new: &[ErrorEntry]) {
        self.error_kinds.truncate(first_index);
        self.error_kinds.extend(new.iter().map(|entry| entry.kind));
    }

    fn finish(&mut self) {
        // Every completion is in: the last second settles now.
        self.settle(self.seconds.now_ns() + SECOND_NS + SETTLE_NS);
        let stopping = self.stop.is_stopping();
        let completed = self.completed;
        self.set_state(ShardState::Finished);
        // No stats sample follows the last requests: what completed was sent, and
        // what was asked is what was sent plus what was due and never left (up to a
        // stop, or the schedule's end).
        let end_ns = self.plans.iter().filter_map(Plan::end_ns).max();
        let mut shared = self.lock();
        let head = &mut shared.head;
        head.sent = head.sent.max(completed);
        if head.unit != LoadUnit::Requests {
            head.started = Some(head.started.unwrap_or(0).max(self.started_done));
        }
        head.in_flight = 0;
        // A flow's behind counts runs due that did not start.
        let delivered = head.started.unwrap_or(head.sent);
        head.asked = match end_ns {
            Some(end_ns) if !stopping => (self.plans.iter())
                .filter_map(|plan| plan.asked_by(end_ns))
                .reduce(|a, b| a + b),
            _ => head.asked.map(|_| delivered + head.behind),
        };
        drop(shared);
        if !stopping {
            self.lock().head.stop_detail.clear();
        }
    }
}

/// What the feed's handler reads.
struct Answerer {
    shared: Arc<Mutex<Shared>>,
    stop: StopHandle,
    metrics: Option<PrometheusHandle>,
    records: Option<PathBuf>,
}

impl Answerer {
    fn answer(&self, request: &Request) -> Response {
        match request.path.as_str() {
            "/seconds" => match request.param("from").and_then(|from| from.parse().ok()) {
                Some(from) => self.seconds(from),
                None => Response::bad_request("/seconds needs ?from=SECOND (a whole number)"),
            },
            "/stop" => {
                let why = request.param("why");
                (self.stop)
                    .drain_because(why.unwrap_or_else(|| "stopped by the coordinator".into()));
                Response::ok("text/plain", "stopping\n")
            }
            "/metrics" => match &self.metrics {
                Some(metrics) => {
                    Response::ok(crate::PROMETHEUS_CONTENT_TYPE, metrics.render_text())
                }
                None => Response::not_found("/metrics"),
            },
            "/records" => match records_answer(request, self.records.as_deref()) {
                Ok(bytes) => {
                    let mut shared = self.lock();
                    shared.records_pulled = true;
                    shared.records_read |= bytes.is_empty() && shared.head.records_complete;
                    Response::ok("application/octet-stream", bytes)
                }
                Err(why) => Response::bad_request(&why),
            },
            path => Response::not_found(path),
        }
    }

    /// The report with the seconds from `from` on; the coordinator is in contact.
    fn seconds(&self, from: u64) -> Response {
        self.stop.steered();
        let mut shared = self.lock();
        shared.final_read |=
            shared.head.state == ShardState::Finished && shared.head.records_complete;
        let mut report = shared.head.clone();
        report.now_unix_ns = engine::unix_now_ns();
        report.seconds = (shared.seconds.iter())
            .filter(|second| second.second >= from)
            .cloned()
            .collect();
        drop(shared);
        Response::ok(
            "application/json",
            serde_json::to_vec(&report).unwrap_or_default(),
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `/records?from=BYTE`: the file from that offset, [`RECORDS_CHUNK`] at most.
pub fn records_answer(request: &Request, path: Option<&Path>) -> Result<Vec<u8>, String> {
    let from: u64 = (request.param("from"))
        .and_then(|from| from.parse().ok())
        .ok_or("/records needs ?from=BYTE (a whole number)")?;
    let path = path.ok_or("this shard writes its records to stdout: there is no file to pull")?;
    let mut file = std::fs::File::open(path).map_err(|err| format!("{}: {err}", path.display()))?;
    file.seek(SeekFrom::Start(from))
        .map_err(|err| format!("{}: {err}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(RECORDS_CHUNK as u64)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("{}: {err}", path.display()))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use record::StreamStats;

    use super::*;

    const MS: u64 = 1_000_000;
    const START_UNIX_NS: u64 = 1_000 * SECOND_NS;

    fn config() -> RunConfig {
        let target = workload::Target::get("GET", url::Url::parse("http://h/").unwrap());
        let plan = Plan {
            pacing: workload::Pacing::Open(workload::Schedule::constant(10.0)),
            duration_ns: Some(10 * SECOND_NS),
            max_requests: None,
            shard: workload::Shard::WHOLE,
        };
        RunConfig::single(engine::AttackConfig::new("a", vec![target], plan))
    }

    /// A stats sample `at_ms` after time zero with `open` connections and
    /// `messages_in` received since the sample before.
    fn sample(at_ms: u64, open: u64, messages_in: u64) -> GeneratorStats {
        GeneratorStats {
            at_unix_ns: START_UNIX_NS + at_ms * MS,
            streams: Some(StreamStats {
                open,
                messages_in,
                ..StreamStats::default()
            }),
            ..GeneratorStats::default()
        }
    }

    #[test]
    fn each_sample_s_stream_figures_go_to_the_second_it_was_taken_in_once() {
        let mut feed = SteerFeed::new(&config(), &StopHandle::new());
        feed.start(Clock::at(Instant::now(), START_UNIX_NS));
        // The samples drift through the seconds: none in second 2, two in second 3
        // (the last one at the run's end).
        for stats in [
            sample(300, 5, 50),
            sample(1350, 6, 100),
            sample(3010, 6, 160),
            sample(3400, 0, 40),
        ] {
            feed.stats(&stats);
        }
        feed.finish();
        let shared = feed.lock();
        let streams: Vec<Option<(u64, u64, u64)>> = (shared.seconds.iter())
            .map(|second| {
                (second.streams.as_ref())
                    .map(|s| (s.stats.open, s.stats.messages_in, s.span_ns / MS))
            })
            .collect();
        assert_eq!(
            streams,
            [
                Some((5, 50, 300)),
                Some((6, 100, 1050)),
                None,
                Some((0, 200, 2050)),
            ]
        );
    }
}
