//! [`PrometheusStats`]: the [`engine::RunObserver`] behind `-prometheus-addr` and
//! `-prometheus-remote-write`. It keeps vegeta's series (`request_seconds`,
//! `request_bytes_in`, `request_bytes_out`, `request_fail_count`, labelled by method,
//! url and status) and loadlab's own (`loadlab_*`: asked, sent and completed
//! requests, the schedule's rate, send lag, in flight, connections, stop rules, run
//! time, and for flows `loadlab_checks_total` by scenario, step, check and result) in
//! bounded memory, and publishes a copy a few times a second for the scrape handler
//! and the remote-write thread ([`PrometheusHandle`]).
//!
//! Per record, on the collector thread: an index into a table of (target, status)
//! cells built as statuses first appear, a bucket search and a few additions; no
//! string is formatted and nothing is allocated once a cell exists. Label values are
//! formatted when a scrape or a push reads the copy.

use std::time::{Duration, Instant};

use engine::{Clock, RunConfig, RunObserver, Targets};
use record::{ErrorEntry, ErrorKind, GeneratorStats, Record, TargetInfo};
use workload::{Plan, RuleWatch};

use crate::checks::{self, Check, CheckTable};
use crate::exemplar::{BucketExemplar, Tracing};
use crate::latest::Latest;
use crate::sink::{Kind, Sink};

/// At most this many distinct (method, url) pairs keep their own labels; the rest
/// count under url="other", so a targets file of thousands of URLs cannot make
/// thousands of series.
pub const MAX_URL_SERIES: usize = 100;

/// vegeta's `request_seconds` buckets (Prometheus' default buckets), in ns and as
/// the `le` label says them.
const LATENCY_BOUNDS_NS: [u64; 11] = [
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];
const LATENCY_LE: [&str; 11] = [
    "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10",
];
/// Send lag is small when the generator keeps up: finer buckets at the low end.
const LAG_BOUNDS_NS: [u64; 10] = [
    100_000,
    500_000,
    1_000_000,
    5_000_000,
    10_000_000,
    50_000_000,
    100_000_000,
    500_000_000,
    1_000_000_000,
    5_000_000_000,
];
const LAG_LE: [&str; 10] = [
    "0.0001", "0.0005", "0.001", "0.005", "0.01", "0.05", "0.1", "0.5", "1", "5",
];
/// The most buckets a histogram here has, plus one for +Inf.
const SLOTS: usize = 12;
/// The collector publishes its copy at most this often between stats samples.
const PUBLISH_EVERY: Duration = Duration::from_millis(200);

/// A classic histogram: counts per bucket (not cumulative; the last is +Inf), sum.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Histogram {
    counts: [u64; SLOTS],
    count: u64,
    sum_ns: u128,
}

impl Histogram {
    /// Counts `value_ns`; its bucket's slot.
    fn observe(&mut self, bounds_ns: &[u64], value_ns: u64) -> usize {
        // The first bucket whose bound is >= the value (Prometheus' `le`).
        let slot = bounds_ns.partition_point(|&bound| bound < value_ns);
        self.counts[slot] += 1;
        self.count += 1;
        self.sum_ns += u128::from(value_ns);
        slot
    }

    /// Its series; `exemplars` by slot (none for a histogram without them).
    fn visit(
        &self,
        sink: &mut dyn Sink,
        name: &str,
        labels: &mut Vec<(&str, String)>,
        (le, exemplars): (&[&str], &[Option<BucketExemplar>]),
    ) {
        let mut cumulative = 0;
        let bounds = le.iter().copied().chain(["+Inf"]);
        for (slot, (bound, count)) in bounds.zip(&self.counts).enumerate() {
            cumulative += count;
            labels.push(("le", bound.to_owned()));
            sink.sample(name, "_bucket", labels, cumulative as f64);
            labels.pop();
            if let Some(Some(exemplar)) = exemplars.get(slot) {
                sink.exemplar(exemplar);
            }
        }
        sink.sample(name, "_sum", labels, self.sum_ns as f64 / 1e9);
        sink.sample(name, "_count", labels, self.count as f64);
    }
}

/// One (method, url, status): vegeta's four series.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cell {
    key: u32,
    status: u16,
    latency: Histogram,
    bytes_in: u64,
    bytes_out: u64,
    /// Failures by [`ErrorKind`] (in [`ErrorKind::ALL`] order).
    fails: [u64; ErrorKind::ALL.len()],
    /// Per latency slot, the latest traced request in it (`-trace`).
    exemplars: [Option<BucketExemplar>; SLOTS],
}

/// One stop rule's streak.
#[derive(Debug, Clone, Default, PartialEq)]
struct Rule {
    text: String,
    held_ns: u64,
    needed_ns: u64,
}

/// The numbers a scrape or a push reads: the collector's copy, published.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    /// (method, url) label values by key.
    keys: Vec<(String, String)>,
    cells: Vec<Cell>,
    lag: Histogram,
    asked: Option<u64>,
    sent: u64,
    completed: u64,
    rate_per_sec: Option<f64>,
    in_flight: u64,
    connections_open: u64,
    /// The stream steps' connections and streamed calls, once one opened.
    streams: Option<report::StreamsSoFar>,
    behind: u64,
    rules: Vec<Rule>,
    /// The scenario label of each attack id.
    scenarios: Vec<String>,
    /// Each flow check's passes and failures, as the check table counts them.
    checks: Vec<Check>,
    start_unix_ns: u64,
    elapsed_ns: u64,
    finished: bool,
}

/// Where the scrape handler and the remote-write thread read the latest [`Metrics`].
pub type PrometheusHandle = Latest<Metrics>;

impl Latest<Metrics> {
    /// A copy of the latest metrics (the lock is held for the copy only).
    pub fn metrics(&self) -> Metrics {
        self.get()
    }
}

/// Folds a run into [`Metrics`] on the collector thread; see the module docs.
pub struct PrometheusStats {
    plans: Vec<Plan>,
    /// Target id -> key; ids beyond it (lazily read targets) count as "other".
    target_keys: Vec<u32>,
    /// The key of targets the table does not know, made when first needed.
    unknown_key: Option<u32>,
    /// Per key, its cells: (status, index into `metrics.cells`).
    cells_by_key: Vec<Vec<(u16, u32)>>,
    /// Error id - 1 -> kind index, as the error table grows.
    error_kinds: Vec<u8>,
    /// Failures whose error entry has not arrived yet: (cell, error id, count).
    pending_fails: Vec<(u32, u32, u64)>,
    /// The flows' checks, copied into the metrics when they are published.
    checks: CheckTable,
    /// The stream connections' figures, folded from every stats sample.
    streams: report::StreamsSoFar,
    /// Under `-trace`: which records carried our trace ids (the buckets' exemplars).
    tracing: Option<Tracing>,
    folded_targets: usize,
    last_publish: Instant,
    metrics: Metrics,
    handle: PrometheusHandle,
}

impl PrometheusStats {
    /// Watches a run of `config`: its plans, and its fixed targets (in record id
    /// order, as the engine numbers them: each attack's list in turn).
    pub fn new(config: &RunConfig) -> PrometheusStats {
        let targets = config
            .attacks
            .iter()
            .flat_map(|attack| match &attack.targets {
                Targets::List(list) => list.as_slice(),
                Targets::Stream(_) | Targets::Replay(_) => &[],
            });
        let mut stats = PrometheusStats {
            plans: config
                .attacks
                .iter()
                .map(|a| a.settings.plan.clone())
                .collect(),
            target_keys: Vec::new(),
            unknown_key: None,
            cells_by_key: Vec::new(),
            error_kinds: Vec::new(),
            pending_fails: Vec::new(),
            checks: CheckTable::default(),
            streams: report::StreamsSoFar::default(),
            tracing: Tracing::of(config),
            folded_targets: 0,
            last_publish: Instant::now(),
            metrics: Metrics {
                scenarios: config
                    .attacks
                    .iter()
                    .map(|a| a.settings.name.clone())
                    .collect(),
                ..Metrics::default()
            },
            handle: PrometheusHandle::default(),
        };
        for target in targets {
            let key = stats.key_for(&target.method, &target.display_url());
            stats.target_keys.push(key);
        }
        stats
    }

    /// Where scrapes and pushes read the metrics.
    pub fn handle(&self) -> PrometheusHandle {
        self.handle.clone()
    }

    /// Targets counted under url="other" because there were more than
    /// [`MAX_URL_SERIES`] distinct ones (for the caller's warning).
    pub fn folded_targets(&self) -> usize {
        self.folded_targets
    }

    /// The metrics as they stand (what the handle reads after the next publish).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The run's targets from id `first_index` on, as its target table grows: which
    /// are flow steps, and what their checks are called (see
    /// [`crate::LiveStats::targets`]). Labels of vegeta's series still come from the
    /// run's configuration.
    pub fn targets(&mut self, first_index: usize, new: &[TargetInfo]) {
        self.checks.targets(first_index, new);
    }

    /// The key of (method, url), made if new; beyond the cap, (method, "other").
    fn key_for(&mut self, method: &str, url: &str) -> u32 {
        let keys = &self.metrics.keys;
        let known = |url: &str| keys.iter().position(|(m, u)| m == method && u == url);
        let url = if known(url).is_some() || keys.len() < MAX_URL_SERIES {
            url
        } else {
            self.folded_targets += 1;
            "other"
        };
        let index = match known(url) {
            Some(index) => index,
            None => {
                self.metrics.keys.push((method.to_owned(), url.to_owned()));
                self.cells_by_key.push(Vec::new());
                self.metrics.keys.len() - 1
            }
        };
        u32::try_from(index).unwrap_or(u32::MAX)
    }

    /// The cell of `key` and `status`, made when that status first appears.
    fn cell(&mut self, key: u32, status: u16) -> usize {
        let slots = &mut self.cells_by_key[key as usize];
        if let Some((_, index)) = slots.iter().find(|(s, _)| *s == status) {
            return *index as usize;
        }
        let index = self.metrics.cells.len();
        slots.push((status, u32::try_from(index).unwrap_or(u32::MAX)));
        self.metrics.cells.push(Cell {
            key,
            status,
            latency: Histogram::default(),
            bytes_in: 0,
            bytes_out: 0,
            fails: [0; ErrorKind::ALL.len()],
            exemplars: [None; SLOTS],
        });
        index
    }

    fn add(&mut self, record: &Record) {
        let key = match self.target_keys.get(record.target as usize) {
            Some(key) => *key,
            None => match self.unknown_key {
                Some(key) => key,
                None => {
                    let key = self.key_for("other", "other");
                    self.unknown_key = Some(key);
                    key
                }
            },
        };
        let index = self.cell(key, record.status);
        let cell = &mut self.metrics.cells[index];
        let slot = cell.latency.observe(&LATENCY_BOUNDS_NS, record.latency_ns);
        if let Some(exemplar) = self.tracing.as_ref().and_then(|t| t.exemplar(record)) {
            cell.exemplars[slot] = Some(exemplar);
        }
        cell.bytes_in += record.bytes_in;
        cell.bytes_out += record.bytes_out;
        if let Some(id) = (record.error as usize).checked_sub(1) {
            match self.error_kinds.get(id) {
                Some(kind) => cell.fails[usize::from(*kind)] += 1,
                None => self.pend_fail(index, record.error),
            }
        }
        self.checks.add(record);
        self.metrics.lag.observe(&LAG_BOUNDS_NS, record.send_lag_ns);
        self.metrics.completed += 1;
        let end_ns = record
            .end_unix_ns()
            .saturating_sub(self.metrics.start_unix_ns);
        self.metrics.elapsed_ns = self.metrics.elapsed_ns.max(end_ns);
    }

    fn pend_fail(&mut self, cell: usize, error: u32) {
        let cell = u32::try_from(cell).unwrap_or(u32::MAX);
        match self
            .pending_fails
            .iter_mut()
            .find(|(c, e, _)| *c == cell && *e == error)
        {
            Some((_, _, count)) => *count += 1,
            None => self.pending_fails.push((cell, error, 1)),
        }
    }

    /// Counts the pending failures whose error entry is now known.
    fn settle_fails(&mut self) {
        let (kinds, cells) = (&self.error_kinds, &mut self.metrics.cells);
        self.pending_fails.retain(|(cell, error, count)| {
            let kind = kinds.get(*error as usize - 1);
            if let Some(kind) = kind {
                cells[*cell as usize].fails[usize::from(*kind)] += count;
            }
            kind.is_none()
        });
    }

    fn publish(&mut self) {
        let now_ns = self.metrics.elapsed_ns;
        self.metrics.asked = self
            .plans
            .iter()
            .filter_map(|plan| plan.asked_by(now_ns))
            .reduce(|a, b| a + b);
        self.metrics.rate_per_sec = self
            .plans
            .iter()
            .filter_map(|plan| plan.rate_at(now_ns))
            .reduce(|a, b| a + b);
        self.metrics.sent = self.metrics.sent.max(self.metrics.completed);
        checks::copy_counts(&mut self.metrics.checks, self.checks.checks());
        self.handle.publish(&self.metrics);
        self.last_publish = Instant::now();
    }
}

impl RunObserver for PrometheusStats {
    fn start(&mut self, clock: Clock) {
        self.metrics.start_unix_ns = clock.start_unix_ns();
        self.streams = report::StreamsSoFar::new(clock.start_unix_ns());
        self.publish();
    }

    fn targets(&mut self, first_index: usize, new: &[TargetInfo]) {
        PrometheusStats::targets(self, first_index, new);
    }

    fn records(&mut self, records: &[Record]) {
        for record in records {
            self.add(record);
        }
        if self.last_publish.elapsed() >= PUBLISH_EVERY {
            self.publish();
        }
    }

    fn stats(&mut self, stats: &GeneratorStats) {
        let metrics = &mut self.metrics;
        metrics.sent = stats.sent;
        metrics.in_flight = stats.in_flight;
        metrics.connections_open = stats.connections_open;
        metrics.behind = stats.behind;
        if self.streams.add(stats) {
            metrics.streams = Some(self.streams.clone());
        }
        let at_ns = stats.at_unix_ns.saturating_sub(metrics.start_unix_ns);
        metrics.elapsed_ns = metrics.elapsed_ns.max(at_ns);
        self.publish();
    }

    fn errors(&mut self, first_index: usize, new: &[ErrorEntry]) {
        self.error_kinds.truncate(first_index);
        self.error_kinds
            .extend(new.iter().map(|entry| kind_index(entry.kind)));
        self.settle_fails();
    }

    fn rules(&mut self, judged_ns: u64, watches: &[RuleWatch]) {
        let rules = &mut self.metrics.rules;
        rules.resize_with(watches.len(), Rule::default);
        for (rule, watch) in rules.iter_mut().zip(watches) {
            if rule.text.is_empty() {
                rule.text = watch.rule.to_string();
            }
            rule.held_ns = watch.held_ns(judged_ns);
            rule.needed_ns = watch.rule.for_ns();
        }
        self.publish();
    }

    fn finish(&mut self) {
        self.metrics.finished = true;
        self.metrics.in_flight = 0;
        self.publish();
    }
}

/// A family of one figure per item: name, help, and how to read the figure.
type Figure<T> = (&'static str, &'static str, fn(&T) -> u64);

/// `loadlab_stream_*`: the stream steps' connections and streamed gRPC calls
/// (docs/PROMETHEUS.md), one process's or a steered run's merged ones.
pub(crate) fn visit_streams(streams: &report::StreamsSoFar, sink: &mut dyn Sink) {
    let name = "loadlab_stream_connections_open";
    sink.family(
        name,
        Kind::Gauge,
        "Stream connections (ws, sse) and streamed gRPC calls open",
    );
    sink.sample(name, "", &[], streams.last.open as f64);
    let counters = [
        (
            "loadlab_stream_connections_opened_total",
            "Stream connections and streamed calls opened",
            None,
            streams.opened,
        ),
        (
            "loadlab_stream_connections_closed_total",
            "Stream connections and streamed calls closed",
            None,
            streams.closed,
        ),
        (
            "loadlab_stream_messages_total",
            "Messages (events) of stream connections and streamed calls",
            Some("out"),
            streams.messages_out,
        ),
        (
            "loadlab_stream_messages_total",
            "",
            Some("in"),
            streams.messages_in,
        ),
        (
            "loadlab_stream_message_bytes_total",
            "Payload bytes of those messages",
            Some("out"),
            streams.bytes_out,
        ),
        (
            "loadlab_stream_message_bytes_total",
            "",
            Some("in"),
            streams.bytes_in,
        ),
    ];
    for (name, help, direction, value) in counters {
        if !help.is_empty() {
            sink.family(name, Kind::Counter, help);
        }
        let labels: Vec<(&str, String)> = direction
            .map(|d| ("direction", d.to_owned()))
            .into_iter()
            .collect();
        sink.sample(name, "", &labels, value as f64);
    }
    let Some(latency) = streams.last.latency else {
        return;
    };
    let name = "loadlab_stream_message_latency_seconds";
    sink.family(
        name,
        Kind::Gauge,
        "Message latency over the last second (round trips, gaps between events)",
    );
    for (quantile, ns) in [
        ("0.5", latency.p50_ns),
        ("0.99", latency.p99_ns),
        ("1", latency.max_ns),
    ] {
        sink.sample(
            name,
            "",
            &[("quantile", quantile.to_owned())],
            ns as f64 / 1e9,
        );
    }
}

fn kind_index(kind: ErrorKind) -> u8 {
    let index = ErrorKind::ALL.iter().position(|k| *k == kind);
    u8::try_from(index.unwrap_or(ErrorKind::ALL.len() - 1)).unwrap_or(0)
}

impl Metrics {
    /// Requests completed so far (the sum of every `request_seconds_count`).
    pub fn completed(&self) -> u64 {
        self.completed
    }

    /// When the run started, unix nanoseconds (0 before it starts).
    pub(crate) fn start_unix_ns(&self) -> u64 {
        self.start_unix_ns
    }

    /// Every series, family by family, to `sink` (the text renderer or a push).
    pub(crate) fn visit(&self, sink: &mut dyn Sink) {
        self.visit_vegeta(sink);
        self.visit_ours(sink);
    }

    /// Cells in label order (url, method, status), for a stable exposition.
    fn sorted_cells(&self) -> Vec<&Cell> {
        let mut cells: Vec<&Cell> = self.cells.iter().collect();
        cells.sort_by(|a, b| {
            let (ka, kb) = (&self.keys[a.key as usize], &self.keys[b.key as usize]);
            (&ka.1, &ka.0, a.status).cmp(&(&kb.1, &kb.0, b.status))
        });
        cells
    }

    fn cell_labels(&self, cell: &Cell) -> Vec<(&'static str, String)> {
        let (method, url) = &self.keys[cell.key as usize];
        vec![
            ("method", method.clone()),
            ("url", url.clone()),
            ("status", cell.status.to_string()),
        ]
    }

    fn visit_vegeta(&self, sink: &mut dyn Sink) {
        let cells = self.sorted_cells();
        sink.family("request_seconds", Kind::Histogram, "Request latency");
        for cell in &cells {
            let mut labels = self.cell_labels(cell);
            let buckets = (LATENCY_LE.as_slice(), cell.exemplars.as_slice());
            cell.latency
                .visit(sink, "request_seconds", &mut labels, buckets);
        }
        let counters: [Figure<Cell>; 2] = [
            (
                "request_bytes_in",
                "Bytes received from servers as response to requests",
                |cell| cell.bytes_in,
            ),
            (
                "request_bytes_out",
                "Bytes sent to servers during requests",
                |cell| cell.bytes_out,
            ),
        ];
        for (name, help, value) in counters {
            sink.family(name, Kind::Counter, help);
            for cell in &cells {
                sink.sample(name, "", &self.cell_labels(cell), value(cell) as f64);
            }
        }
        sink.family(
            "request_fail_count",
            Kind::Counter,
            "Count of failed requests",
        );
        for cell in &cells {
            for (kind, count) in ErrorKind::ALL.iter().zip(cell.fails) {
                if count > 0 {
                    let mut labels = self.cell_labels(cell);
                    labels.push(("message", kind.name().to_owned()));
                    sink.sample("request_fail_count", "", &labels, count as f64);
                }
            }
        }
    }

    fn visit_ours(&self, sink: &mut dyn Sink) {
        let counters = [
            (
                "loadlab_requests_asked_total",
                "Requests the schedule asked for so far (open model)",
                self.asked,
            ),
            (
                "loadlab_requests_sent_total",
                "Requests sent so far",
                Some(self.sent),
            ),
            (
                "loadlab_requests_completed_total",
                "Requests completed (answered or failed) so far",
                Some(self.completed),
            ),
        ];
        for (name, help, value) in counters {
            if let Some(value) = value {
                sink.family(name, Kind::Counter, help);
                sink.sample(name, "", &[], value as f64);
            }
        }
        if let Some(rate) = self.rate_per_sec {
            let name = "loadlab_schedule_rate_per_second";
            sink.family(name, Kind::Gauge, "The rate the schedule asks for now");
            sink.sample(name, "", &[], rate);
        }
        sink.family(
            "loadlab_send_lag_seconds",
            Kind::Histogram,
            "How late requests left after their intended send time",
        );
        let buckets = (LAG_LE.as_slice(), [].as_slice());
        self.lag
            .visit(sink, "loadlab_send_lag_seconds", &mut Vec::new(), buckets);
        let gauges = [
            (
                "loadlab_in_flight_requests",
                "Requests sent and not yet answered",
                self.in_flight as f64,
            ),
            (
                "loadlab_open_connections",
                "Connections open",
                self.connections_open as f64,
            ),
            (
                "loadlab_behind_requests",
                "Requests due that have not left yet (the generator is behind)",
                self.behind as f64,
            ),
            (
                "loadlab_run_start_time_seconds",
                "When the run started, unix seconds",
                self.start_unix_ns as f64 / 1e9,
            ),
            (
                "loadlab_run_elapsed_seconds",
                "Time since the run started",
                self.elapsed_ns as f64 / 1e9,
            ),
            (
                "loadlab_run_finished",
                "1 once the run is over",
                f64::from(u8::from(self.finished)),
            ),
        ];
        for (name, help, value) in gauges {
            sink.family(name, Kind::Gauge, help);
            sink.sample(name, "", &[], value);
        }
        self.visit_rules(sink);
        self.visit_checks(sink);
        if let Some(streams) = &self.streams {
            visit_streams(streams, sink);
        }
    }

    /// `loadlab_checks_total{scenario,step,check,result}`: each flow check's runs that
    /// passed and failed, in label order. None for a run without flows.
    fn visit_checks(&self, sink: &mut dyn Sink) {
        if self.checks.is_empty() {
            return;
        }
        let name = "loadlab_checks_total";
        sink.family(
            name,
            Kind::Counter,
            "Flow checks run so far, by scenario, step, check and result (pass or fail)",
        );
        let scenario = |check: &Check| {
            (self.scenarios.get(usize::from(check.attack))).map_or("", String::as_str)
        };
        let mut checks: Vec<&Check> = self.checks.iter().collect();
        checks
            .sort_by(|a, b| (scenario(a), &a.step, &a.name).cmp(&(scenario(b), &b.step, &b.name)));
        for check in checks {
            for (result, count) in [("pass", check.passed), ("fail", check.failed)] {
                let labels = [
                    ("scenario", scenario(check).to_owned()),
                    ("step", check.step.clone()),
                    ("check", check.name.clone()),
                    ("result", result.to_owned()),
                ];
                sink.sample(name, "", &labels, count as f64);
            }
        }
    }

    fn visit_rules(&self, sink: &mut dyn Sink) {
        if self.rules.is_empty() {
            return;
        }
        let figures: [Figure<Rule>; 2] = [
            (
                "loadlab_stop_rule_held_seconds",
                "How long each stop rule has held so far",
                |rule| rule.held_ns,
            ),
            (
                "loadlab_stop_rule_needed_seconds",
                "How long each stop rule must hold to stop the run",
                |rule| rule.needed_ns,
            ),
        ];
        for (name, help, value) in figures {
            sink.family(name, Kind::Gauge, help);
            for rule in &self.rules {
                let labels = [("rule", rule.text.clone())];
                sink.sample(name, "", &labels, value(rule) as f64 / 1e9);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn buckets_hold_values_up_to_their_bound() {
        let rows: [(u64, usize); 6] = [
            (0, 0),
            (5_000_000, 0),
            (5_000_001, 1),
            (999_999_999, 7),
            (10_000_000_000, 10),
            (10_000_000_001, 11),
        ];
        for (value_ns, slot) in rows {
            let mut histogram = Histogram::default();
            histogram.observe(&LATENCY_BOUNDS_NS, value_ns);
            assert_eq!(histogram.counts[slot], 1, "{value_ns} ns");
            assert_eq!(histogram.count, 1);
        }
        for (bound_ns, le) in LATENCY_BOUNDS_NS.iter().zip(LATENCY_LE) {
            assert_eq!(*bound_ns as f64 / 1e9, le.parse::<f64>().unwrap());
        }
        for (bound_ns, le) in LAG_BOUNDS_NS.iter().zip(LAG_LE) {
            assert_eq!(*bound_ns as f64 / 1e9, le.parse::<f64>().unwrap());
        }
    }

    const MS: u64 = 1_000_000;

    fn config(urls: &[&str]) -> RunConfig {
        let targets = urls
            .iter()
            .map(|url| workload::Target::get("GET", url::Url::parse(url).unwrap()))
            .collect();
        let plan = Plan {
            pacing: workload::Pacing::Open(workload::Schedule::constant(10.0)),
            duration_ns: Some(10_000 * MS),
            max_requests: None,
            shard: workload::Shard::WHOLE,
        };
        RunConfig::single(engine::AttackConfig::new("a", targets, plan))
    }

    fn record(target: u32, status: u16, error: u32, latency_ms: u64) -> Record {
        Record {
            target,
            status,
            error,
            intended_unix_ns: 1_000 * MS,
            latency_ns: latency_ms * MS,
            send_lag_ns: MS / 5,
            bytes_in: 100,
            bytes_out: 40,
            ..Record::default()
        }
    }

    fn entry(kind: ErrorKind) -> ErrorEntry {
        ErrorEntry {
            kind,
            text: kind.name().to_owned(),
        }
    }

    /// A run with two targets, a status error whose entry comes late, a target the
    /// table does not know (a lazily read one), a stats sample and a stop rule.
    fn sample_run() -> PrometheusStats {
        let mut stats = PrometheusStats::new(&config(&[
            "http://127.0.0.1:8080/a",
            "http://127.0.0.1:8080/b?q=1",
        ]));
        stats.records(&[
            record(0, 200, 0, 3),
            record(0, 200, 0, 30),
            record(0, 200, 0, 3000),
            record(1, 500, 1, 7),
            record(7, 0, 2, 2_500),
        ]);
        stats.errors(0, &[entry(ErrorKind::Status), entry(ErrorKind::Timeout)]);
        stats.stats(&GeneratorStats {
            at_unix_ns: 2_000 * MS,
            sent: 6,
            in_flight: 1,
            connections_open: 2,
            behind: 0,
            ..GeneratorStats::default()
        });
        stats.rules(2_000 * MS, &[crate::stats::failing_for(2)]);
        stats
    }

    /// Under `-trace` (every request, seed 7) an OpenMetrics scrape gets each latency
    /// bucket's latest traced request; the text format is the same as without.
    #[test]
    fn an_openmetrics_scrape_carries_the_buckets_traced_requests() {
        let mut config = config(&["http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b"]);
        // The second target sets its own traceparent: its requests carry the user's ids.
        if let Targets::List(targets) = &mut config.attacks[0].targets {
            targets[1].headers.push(workload::Header {
                name: workload::TRACEPARENT.to_owned(),
                value: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_owned(),
            });
        }
        config.settings.trace = Some(workload::TraceSettings { sample: 1.0 });
        config.settings.seed = 7;
        let mut stats = PrometheusStats::new(&config);
        // (target, seq, latency ms): two in the 5 ms bucket (the later one is kept), one
        // in the 0.5 s bucket, one of the target with its own traceparent.
        let rows = [(0, 1, 3), (0, 2, 4), (0, 3, 400), (1, 4, 30)];
        stats.records(&rows.map(|(target, seq, latency_ms)| Record {
            seq,
            ..record(target, 200, 0, latency_ms)
        }));
        stats.finish();
        let handle = stats.handle();
        let (content_type, text) = handle.render_for(Some("application/openmetrics-text"));
        assert_eq!(content_type, crate::OPENMETRICS_CONTENT_TYPE);
        let sampler = workload::TraceSampler::new(workload::TraceSettings { sample: 1.0 }, 7);
        let id = |seq| sampler.ids(0, seq).unwrap().trace_hex();
        let exemplars: Vec<&str> = text.lines().filter(|l| l.contains(" # {")).collect();
        assert_eq!(
            exemplars,
            [
                format!(
                    "request_seconds_bucket{{method=\"GET\",url=\"http://127.0.0.1:8080/a\",status=\"200\",le=\"0.005\"}} 2 # {{trace_id=\"{}\"}} 0.004 1.004",
                    id(2)
                ),
                format!(
                    "request_seconds_bucket{{method=\"GET\",url=\"http://127.0.0.1:8080/a\",status=\"200\",le=\"0.5\"}} 3 # {{trace_id=\"{}\"}} 0.4 1.400",
                    id(3)
                ),
            ]
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
        let (content_type, plain) = handle.render_for(Some("text/plain"));
        assert_eq!(content_type, crate::PROMETHEUS_CONTENT_TYPE);
        assert_eq!(plain, handle.render_text());
        assert!(!plain.contains(" # {") && !plain.contains("# EOF"));
    }

    #[test]
    fn the_exposition_matches_the_golden_file() {
        let stats = sample_run();
        let got = stats.handle().render_text();
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/prometheus.txt");
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &got).unwrap();
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|_| panic!("{} is missing: run with UPDATE_GOLDEN=1", path.display()));
        assert!(
            got == want,
            "differs from {} (UPDATE_GOLDEN=1 to accept):\n--- got\n{got}\n--- want\n{want}",
            path.display()
        );
    }

    #[test]
    fn counts_by_target_status_and_error_kind() {
        let metrics = sample_run().handle().metrics();
        // (method, url, status, count, bytes in, failures by kind)
        type Row<'a> = (&'a str, &'a str, u16, u64, u64, Vec<(&'a str, u64)>);
        let want: Vec<Row<'_>> = vec![
            ("GET", "http://127.0.0.1:8080/a", 200, 3, 300, vec![]),
            (
                "GET",
                "http://127.0.0.1:8080/b?q=1",
                500,
                1,
                100,
                vec![("status", 1)],
            ),
            ("other", "other", 0, 1, 100, vec![("timeout", 1)]),
        ];
        let got: Vec<_> = metrics
            .cells
            .iter()
            .map(|cell| {
                let (method, url) = &metrics.keys[cell.key as usize];
                let fails = ErrorKind::ALL
                    .iter()
                    .zip(cell.fails)
                    .filter(|(_, n)| *n > 0)
                    .map(|(kind, n)| (kind.name(), n))
                    .collect();
                (
                    method.as_str(),
                    url.as_str(),
                    cell.status,
                    cell.latency.count,
                    cell.bytes_in,
                    fails,
                )
            })
            .collect();
        assert_eq!(got, want);
        assert_eq!(metrics.completed(), 5);
        assert_eq!(
            (metrics.sent, metrics.asked),
            (6, Some(41)),
            "10/s from 0 s to 4 s, both ends"
        );
        assert_eq!(metrics.lag.count, 5);
    }

    /// A flow `shop` (login, then list) and a plain attack `ping`: each check's passes
    /// and failures, and the flows' error kinds as `message` labels.
    pub(crate) fn flow_run() -> PrometheusStats {
        let plan = || Plan {
            pacing: workload::Pacing::Open(workload::Schedule::constant(10.0)),
            duration_ns: Some(10_000 * MS),
            max_requests: None,
            shard: workload::Shard::WHOLE,
        };
        let get = |url: &str| workload::Target::get("GET", url::Url::parse(url).unwrap());
        let config = RunConfig {
            attacks: vec![
                engine::AttackConfig::new(
                    "shop",
                    vec![get("http://127.0.0.1/login"), get("http://127.0.0.1/items")],
                    plan(),
                ),
                engine::AttackConfig::new("ping", vec![get("http://127.0.0.1/ping")], plan()),
            ],
            ..config(&[])
        };
        let mut stats = PrometheusStats::new(&config);
        let step = |name: &str, url: &str, checks: &[&str]| TargetInfo {
            method: "GET".to_owned(),
            url: url.to_owned(),
            step: Some(name.to_owned()),
            checks: checks.iter().map(|c| (*c).to_owned()).collect(),
        };
        stats.targets(
            0,
            &[
                step(
                    "login",
                    "http://127.0.0.1/login",
                    &["status 200", "json $.token exists"],
                ),
                step(
                    "list",
                    "http://127.0.0.1/items",
                    &["status 200", "body contains \"id\""],
                ),
                TargetInfo {
                    method: "GET".to_owned(),
                    url: "http://127.0.0.1/ping".to_owned(),
                    ..TargetInfo::default()
                },
            ],
        );
        let with = |attack: u16, target: u32, checks_failed: u32, error: u32| Record {
            attack,
            checks_failed,
            ..record(target, 200, error, 5)
        };
        const FLOW: u32 = Record::FAILED_BY_FLOW;
        stats.errors(
            0,
            &[
                entry(ErrorKind::Check),
                entry(ErrorKind::Extract),
                entry(ErrorKind::Cookie),
            ],
        );
        stats.records(&[
            with(0, 0, 0, 0),
            with(0, 0, 0b10 | FLOW, 2),
            with(0, 0, 0, 3),
            with(0, 1, 0, 0),
            with(0, 1, 0b10 | FLOW, 1),
            with(0, 1, 0b11 | FLOW, 1),
            with(1, 2, 0, 0),
        ]);
        stats.finish();
        stats
    }

    #[test]
    fn stream_series_appear_once_a_connection_opened() {
        let mut stats = sample_run();
        let text = stats.handle().render_text();
        assert!(!text.contains("loadlab_stream_"), "{text}");
        let mut latency = record::MessageLatency::default();
        (1..=100).for_each(|ms| latency.add(ms * MS));
        stats.stats(&GeneratorStats {
            at_unix_ns: 3_000 * MS,
            streams: Some(record::StreamStats {
                open: 7,
                opened: 9,
                closed: 2,
                messages_out: 30,
                bytes_out: 300,
                messages_in: 60,
                bytes_in: 900,
                latency,
            }),
            ..GeneratorStats::default()
        });
        let text = stats.handle().render_text();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("loadlab_stream_"))
            .collect();
        assert_eq!(
            lines,
            [
                "loadlab_stream_connections_open 7",
                "loadlab_stream_connections_opened_total 9",
                "loadlab_stream_connections_closed_total 2",
                "loadlab_stream_messages_total{direction=\"out\"} 30",
                "loadlab_stream_messages_total{direction=\"in\"} 60",
                "loadlab_stream_message_bytes_total{direction=\"out\"} 300",
                "loadlab_stream_message_bytes_total{direction=\"in\"} 900",
                "loadlab_stream_message_latency_seconds{quantile=\"0.5\"} 0.04980736",
                "loadlab_stream_message_latency_seconds{quantile=\"0.99\"} 0.09961472",
                "loadlab_stream_message_latency_seconds{quantile=\"1\"} 0.09961472",
            ]
        );
    }

    #[test]
    fn flow_checks_are_counted_by_scenario_step_check_and_result() {
        let text = flow_run().handle().render_text();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("loadlab_checks_total"))
            .collect();
        assert_eq!(
            lines,
            [
                "# HELP loadlab_checks_total Flow checks run so far, by scenario, step, check \
                 and result (pass or fail)",
                "# TYPE loadlab_checks_total counter",
                "loadlab_checks_total{scenario=\"shop\",step=\"list\",check=\"body contains \\\"id\\\"\",result=\"pass\"} 1",
                "loadlab_checks_total{scenario=\"shop\",step=\"list\",check=\"body contains \\\"id\\\"\",result=\"fail\"} 2",
                "loadlab_checks_total{scenario=\"shop\",step=\"list\",check=\"status 200\",result=\"pass\"} 2",
                "loadlab_checks_total{scenario=\"shop\",step=\"list\",check=\"status 200\",result=\"fail\"} 1",
                "loadlab_checks_total{scenario=\"shop\",step=\"login\",check=\"json $.token exists\",result=\"pass\"} 2",
                "loadlab_checks_total{scenario=\"shop\",step=\"login\",check=\"json $.token exists\",result=\"fail\"} 1",
                "loadlab_checks_total{scenario=\"shop\",step=\"login\",check=\"status 200\",result=\"pass\"} 3",
                "loadlab_checks_total{scenario=\"shop\",step=\"login\",check=\"status 200\",result=\"fail\"} 0",
            ]
        );
        // The flows' error kinds are `message`s like any other.
        for (url, kind, count) in [
            ("/login", "extract", 1),
            ("/login", "cookie", 1),
            ("/items", "check", 2),
        ] {
            let line = format!(
                "request_fail_count{{method=\"GET\",url=\"http://127.0.0.1{url}\",status=\"200\",message=\"{kind}\"}} {count}"
            );
            assert!(text.lines().any(|l| l == line), "no {line} in\n{text}");
        }
        // A run without flows has no such family (the golden file holds it whole).
        assert!(
            !sample_run()
                .handle()
                .render_text()
                .contains("loadlab_checks")
        );
    }

    #[test]
    fn checks_are_published_without_copying_their_names_again() {
        let mut stats = flow_run();
        let names: Vec<*const u8> = (stats.metrics.checks.iter())
            .map(|c| c.name.as_ptr())
            .collect();
        stats.records(&[Record {
            checks_failed: 1,
            ..record(1, 200, 0, 5)
        }]);
        stats.publish();
        let again: Vec<*const u8> = (stats.metrics.checks.iter())
            .map(|c| c.name.as_ptr())
            .collect();
        assert_eq!(names, again);
        let list = &stats.metrics.checks[2];
        assert_eq!(
            (list.name.as_str(), list.passed, list.failed),
            ("status 200", 2, 2)
        );
    }

    #[test]
    fn urls_beyond_the_cap_count_as_other() {
        let rows: [(usize, usize, usize); 4] = [
            // (distinct urls, keys, folded)
            (1, 1, 0),
            (MAX_URL_SERIES, MAX_URL_SERIES, 0),
            (MAX_URL_SERIES + 1, MAX_URL_SERIES + 1, 1),
            (5_000, MAX_URL_SERIES + 1, 5_000 - MAX_URL_SERIES),
        ];
        for (urls, keys, folded) in rows {
            let urls: Vec<String> = (0..urls).map(|i| format!("http://h/{i}")).collect();
            let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
            let mut stats = PrometheusStats::new(&config(&urls));
            assert_eq!(stats.metrics().keys.len(), keys, "{} urls", urls.len());
            assert_eq!(stats.folded_targets(), folded, "{} urls", urls.len());
            let last = u32::try_from(urls.len() - 1).unwrap();
            stats.records(&[record(last, 200, 0, 1), record(0, 200, 0, 1)]);
            let (_, url) = &stats.metrics().keys[stats.metrics().cells[0].key as usize];
            let want = if folded > 0 {
                "other"
            } else {
                urls[urls.len() - 1]
            };
            assert_eq!(url, want, "{} urls", urls.len());
        }
    }

    #[test]
    fn per_record_work_allocates_no_new_cell_for_a_known_status() {
        let mut stats = PrometheusStats::new(&config(&["http://h/a"]));
        stats.records(&[record(0, 200, 0, 1)]);
        let capacity = stats.metrics.cells.capacity();
        for _ in 0..1000 {
            stats.records(&[record(0, 200, 0, 1)]);
        }
        assert_eq!(stats.metrics.cells.len(), 1);
        assert_eq!(stats.metrics.cells.capacity(), capacity);
        assert_eq!(stats.metrics.cells[0].latency.count, 1001);
    }
}
