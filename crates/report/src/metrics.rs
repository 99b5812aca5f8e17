//! [`Metrics`]: vegeta's metrics aggregated record by record in bounded memory, and
//! [`Report`], the closed result every layout prints.
//!
//! Semantics follow vegeta: `earliest`/`latest` are the first and last *send* times,
//! `end` the last completion; duration (attack) = latest - earliest, wait = end -
//! latest; rate = requests / attack seconds (requests when the attack took no time);
//! throughput = successes / (attack + wait) seconds; success is a status in 200..400.
//! Our latency counts from the *intended* send time, so it includes the send lag.

use record::{GrpcStatus, Protocol, Record, RunTables};
use units::go_seconds;

use crate::checks::{CheckCounts, CheckFigures, CheckedTarget};
use crate::distribution::{Distribution, EXACT_LIMIT, Quantiles};
use crate::extra_rows::{Extras, LagStats};
use crate::hist::{BucketCounts, Buckets};

/// Aggregates records; [`Metrics::close`] turns them into a [`Report`].
#[derive(Debug, Clone)]
pub struct Metrics {
    latency: Distribution,
    send_lag: Distribution,
    bytes_in: u64,
    bytes_out: u64,
    earliest_unix_ns: u64,
    latest_unix_ns: u64,
    end_unix_ns: u64,
    successes: u64,
    /// (status, count), in order of first sight; few distinct codes, so a scan is fast.
    /// A gRPC call counts its gRPC status ([`status_key`]).
    status_counts: Vec<(u32, u64)>,
    /// Requests per [`Protocol::id`].
    protocol_counts: [u64; Protocol::ALL.len()],
    /// Per error id - 1: the (send time, arrival) of its first record.
    first_errors: Vec<Option<(u64, u64)>>,
    /// Requests and send span per attack id.
    attacks: Vec<AttackActivity>,
    buckets: Option<BucketCounts>,
    /// Flow checks' passes and failures ([`Metrics::add_checks`]).
    checks: CheckCounts,
    /// Failed requests by what failed them, in order of first sight (few keys).
    failures: Vec<(FailureKey, u64)>,
}

/// What failed a request: the status it was answered with (outside 200..400, or a
/// gRPC status other than OK), else its error (a failed check, a connect, a timeout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FailureKey {
    Status(u32),
    Error(u32),
}

impl Metrics {
    /// Empty metrics; with `buckets`, latencies are also counted per bucket.
    pub fn new(buckets: Option<Buckets>) -> Metrics {
        Metrics::with_exact_limit(buckets, EXACT_LIMIT)
    }

    /// Like [`Metrics::new`], with percentiles exact up to `exact_limit` requests
    /// (then 3 significant digits): lower for the many groups of a `-by` report.
    pub fn with_exact_limit(buckets: Option<Buckets>, exact_limit: usize) -> Metrics {
        Metrics {
            latency: Distribution::with_exact_limit(exact_limit),
            send_lag: Distribution::with_exact_limit(exact_limit),
            bytes_in: 0,
            bytes_out: 0,
            earliest_unix_ns: u64::MAX,
            latest_unix_ns: 0,
            end_unix_ns: 0,
            successes: 0,
            status_counts: Vec::new(),
            protocol_counts: [0; Protocol::ALL.len()],
            first_errors: Vec::new(),
            attacks: Vec::new(),
            buckets: buckets.map(BucketCounts::new),
            checks: CheckCounts::default(),
            failures: Vec::new(),
        }
    }

    /// Records added.
    pub fn requests(&self) -> u64 {
        self.latency.count()
    }

    /// The earliest send time added; `u64::MAX` while there is none.
    pub(crate) fn earliest_unix_ns(&self) -> u64 {
        self.earliest_unix_ns
    }

    /// Adds a batch of records.
    pub fn add_all(&mut self, records: &[Record]) {
        for record in records {
            self.add(record);
        }
    }

    #[inline]
    /// Adds one record.
    pub fn add(&mut self, record: &Record) {
        let sent = record.sent_unix_ns();
        // Records added before this one: breaks ties between first errors sent at once.
        let arrival = self.latency.count();
        self.latency.add(record.latency_ns);
        self.send_lag.add(record.send_lag_ns);
        self.bytes_in = self.bytes_in.saturating_add(record.bytes_in);
        self.bytes_out = self.bytes_out.saturating_add(record.bytes_out);
        self.earliest_unix_ns = self.earliest_unix_ns.min(sent);
        self.latest_unix_ns = self.latest_unix_ns.max(sent);
        self.end_unix_ns = self.end_unix_ns.max(record.end_unix_ns());
        let success = record.is_success();
        self.successes += u64::from(success);
        let status = status_key(record);
        self.count_status(status);
        if !success {
            self.count_failure(record, status);
        }
        // Ids are 0.. in `Protocol::ALL` order, so the id is the index.
        self.protocol_counts[usize::from(record.protocol.id())] += 1;
        self.count_attack(record.attack, record.starts_a_run(), sent);
        if record.error != 0 {
            self.note_error(record.error, sent, arrival);
        }
        if let Some(buckets) = &mut self.buckets {
            buckets.add(record.latency_ns);
        }
    }

    /// Counts the checks of a record already [added](Metrics::add) whose target has
    /// some ([`crate::CheckedTargets::get`] says which).
    #[inline]
    pub fn add_checks(&mut self, record: &Record, target: CheckedTarget) {
        self.checks.add(record, target);
    }

    #[inline]
    fn count_status(&mut self, status: u32) {
        match self
            .status_counts
            .iter_mut()
            .find(|(code, _)| *code == status)
        {
            Some((_, count)) => *count += 1,
            None => self.status_counts.push((status, 1)),
        }
    }

    /// Counts a failed request under its [`FailureKey`].
    fn count_failure(&mut self, record: &Record, status: u32) {
        let answered = match record.grpc_status {
            Some(code) => code != GrpcStatus::OK,
            None => record.status != 0 && !(200..400).contains(&record.status),
        };
        let key = if answered {
            FailureKey::Status(status)
        } else {
            FailureKey::Error(record.error)
        };
        match self.failures.iter_mut().find(|(k, _)| *k == key) {
            Some((_, count)) => *count += 1,
            None => self.failures.push((key, 1)),
        }
    }

    #[inline]
    fn count_attack(&mut self, attack: u16, starts_a_run: bool, sent_unix_ns: u64) {
        let index = usize::from(attack);
        if index >= self.attacks.len() {
            self.attacks.resize(index + 1, AttackActivity::default());
        }
        let activity = &mut self.attacks[index];
        if activity.requests == 0 {
            activity.earliest_unix_ns = sent_unix_ns;
        }
        activity.requests += 1;
        if starts_a_run {
            if activity.flow_starts == 0 {
                activity.earliest_start_unix_ns = sent_unix_ns;
            }
            activity.flow_starts += 1;
            activity.earliest_start_unix_ns = activity.earliest_start_unix_ns.min(sent_unix_ns);
            activity.latest_start_unix_ns = activity.latest_start_unix_ns.max(sent_unix_ns);
        }
        activity.earliest_unix_ns = activity.earliest_unix_ns.min(sent_unix_ns);
        activity.latest_unix_ns = activity.latest_unix_ns.max(sent_unix_ns);
    }

    fn note_error(&mut self, error: u32, sent_unix_ns: u64, arrival: u64) {
        let index = error as usize - 1;
        if index >= self.first_errors.len() {
            self.first_errors.resize(index + 1, None);
        }
        let seen = (sent_unix_ns, arrival);
        let slot = &mut self.first_errors[index];
        if slot.is_none_or(|first| seen < first) {
            *slot = Some(seen);
        }
    }

    /// Computes the report. Error texts and check names come from `tables`; extras are
    /// left empty for [`Extras::build`].
    pub fn close(self, tables: &RunTables) -> Report {
        let requests = self.requests();
        let duration_ns = self.latest_unix_ns.saturating_sub(self.earliest_unix_ns);
        let wait_ns = self.end_unix_ns.saturating_sub(self.latest_unix_ns);
        let (mut rate, mut throughput) = (requests as f64, self.successes as f64);
        if go_seconds(duration_ns) > 0.0 {
            rate /= go_seconds(duration_ns);
            throughput /= go_seconds(duration_ns.saturating_add(wait_ns));
        }
        let per_request = |total: u64| total as f64 / requests.max(1) as f64;
        let send_lag = LagStats::from_distribution(self.send_lag);
        let latency_exact = self.latency.is_exact();
        let latencies = LatencyStats::from_distribution(self.latency);
        Report {
            requests,
            successes: self.successes,
            bytes_in: ByteStats {
                total: self.bytes_in,
                mean: per_request(self.bytes_in),
            },
            bytes_out: ByteStats {
                total: self.bytes_out,
                mean: per_request(self.bytes_out),
            },
            earliest_unix_ns: if requests == 0 {
                0
            } else {
                self.earliest_unix_ns
            },
            latest_unix_ns: self.latest_unix_ns,
            end_unix_ns: self.end_unix_ns,
            duration_ns,
            wait_ns,
            rate_per_sec: rate,
            throughput_per_sec: throughput,
            success_ratio: self.successes as f64 / requests.max(1) as f64,
            status_codes: status_codes_as_strings(self.status_counts),
            failures: failures_by_name(&self.failures, tables),
            protocols: protocols_by_name(&self.protocol_counts),
            errors: errors_in_first_order(&self.first_errors, tables),
            latencies,
            latencies_exact: latency_exact,
            send_lag,
            attacks: self.attacks,
            buckets: self.buckets,
            checks: self.checks.close(tables),
            extras: Extras::default(),
        }
    }
}

/// Where a gRPC status is counted among HTTP statuses (above every u16).
const GRPC_KEYS: u32 = 1 << 16;

/// The status a record is counted under: its gRPC status when it has one (a gRPC
/// call's HTTP status is 200 whatever happened), else its HTTP status.
fn status_key(record: &Record) -> u32 {
    match record.grpc_status {
        Some(code) => GRPC_KEYS + u32::from(code.0),
        None => u32::from(record.status),
    }
}

/// A status key's name: the HTTP code, or the gRPC status's name.
fn status_name(key: u32) -> String {
    match key.checked_sub(GRPC_KEYS) {
        Some(code) => GrpcStatus(code as u8).to_string(),
        None => key.to_string(),
    }
}

/// Status codes sorted as strings (`"200" < "404" < "50" < "OK" < "UNAVAILABLE"`),
/// as vegeta prints them; gRPC statuses by name.
fn status_codes_as_strings(counts: Vec<(u32, u64)>) -> Vec<(String, u64)> {
    let mut codes: Vec<(String, u64)> = counts
        .into_iter()
        .map(|(code, count)| (status_name(code), count))
        .collect();
    codes.sort();
    codes
}

/// Failed requests by status (its code or gRPC name) or error kind (`connect`,
/// `check`; `other` without an error), in name order.
fn failures_by_name(failures: &[(FailureKey, u64)], tables: &RunTables) -> Vec<(String, u64)> {
    let mut by_name = std::collections::BTreeMap::<String, u64>::new();
    for &(key, count) in failures {
        let name = match key {
            FailureKey::Status(status) => status_name(status),
            FailureKey::Error(error) => tables
                .error(error)
                .map_or("other", |entry| entry.kind.name())
                .to_owned(),
        };
        *by_name.entry(name).or_default() += count;
    }
    by_name.into_iter().collect()
}

/// The protocols with requests and their counts, in name order (`h2` before
/// `http/1.1`), as status codes are.
fn protocols_by_name(counts: &[u64; Protocol::ALL.len()]) -> Vec<(Protocol, u64)> {
    let mut protocols: Vec<(Protocol, u64)> = Protocol::ALL
        .into_iter()
        .zip(counts.iter().copied())
        .filter(|&(_, count)| count > 0)
        .collect();
    protocols.sort_by_key(|(protocol, _)| protocol.name());
    protocols
}

/// Error texts in order of first appearance by send time.
fn errors_in_first_order(first: &[Option<(u64, u64)>], tables: &RunTables) -> Vec<String> {
    let mut seen: Vec<((u64, u64), usize)> = first
        .iter()
        .enumerate()
        .filter_map(|(index, at)| at.map(|at| (at, index)))
        .collect();
    seen.sort_unstable();
    seen.into_iter()
        .map(|(_, index)| {
            tables
                .error(index as u32 + 1)
                .map_or_else(|| format!("error #{}", index + 1), |e| e.text.clone())
        })
        .collect()
}

/// vegeta's latency block, in nanoseconds.
#[derive(Debug, Clone)]
pub struct LatencyStats {
    /// Sum of all latencies, nanoseconds.
    pub total_ns: u128,
    /// Mean latency, nanoseconds.
    pub mean_ns: u64,
    /// Median latency, nanoseconds.
    pub p50_ns: u64,
    /// 90th percentile latency, nanoseconds.
    pub p90_ns: u64,
    /// 95th percentile latency, nanoseconds.
    pub p95_ns: u64,
    /// 99th percentile latency, nanoseconds.
    pub p99_ns: u64,
    /// Largest latency, nanoseconds.
    pub max_ns: u64,
    /// Smallest latency, nanoseconds.
    pub min_ns: u64,
    /// For other percentiles (`hdrplot`).
    pub quantiles: Quantiles,
}

impl LatencyStats {
    fn from_distribution(distribution: Distribution) -> LatencyStats {
        let (total_ns, mean_ns) = (distribution.sum(), distribution.mean());
        let (min_ns, max_ns) = (distribution.min(), distribution.max());
        let quantiles = distribution.into_quantiles();
        LatencyStats {
            total_ns,
            mean_ns,
            p50_ns: quantiles.quantile(0.50),
            p90_ns: quantiles.quantile(0.90),
            p95_ns: quantiles.quantile(0.95),
            p99_ns: quantiles.quantile(0.99),
            max_ns,
            min_ns,
            quantiles,
        }
    }
}

/// One attack's share of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AttackActivity {
    /// The attack's requests.
    pub requests: u64,
    /// Its earliest send time, unix nanoseconds.
    pub earliest_unix_ns: u64,
    /// Its latest send time, unix nanoseconds.
    pub latest_unix_ns: u64,
    /// Its requests that started a run of a flow (`seq & 0xffff == 0`; in a plain
    /// attack, every 65536th request: read only for flows).
    pub flow_starts: u64,
    /// The earliest send time of those, unix nanoseconds.
    pub earliest_start_unix_ns: u64,
    /// The latest send time of those, unix nanoseconds.
    pub latest_start_unix_ns: u64,
}

impl AttackActivity {
    /// vegeta's rate for this attack alone: requests over its send span (the request
    /// count when the span is zero).
    pub fn rate_per_sec(&self) -> f64 {
        per_span(self.requests, self.earliest_unix_ns, self.latest_unix_ns)
    }

    /// A flow's runs started per second, over the span of their starts: the steps
    /// after a run's first (a held connection, a stream of events) may go on long
    /// after the last run started, and are no part of the arrival rate asked.
    pub fn flow_starts_per_sec(&self) -> f64 {
        per_span(
            self.flow_starts,
            self.earliest_start_unix_ns,
            self.latest_start_unix_ns,
        )
    }
}

/// `count` over the span from `earliest_unix_ns` to `latest_unix_ns`, as vegeta's rate
/// (the count itself when the span is zero).
fn per_span(count: u64, earliest_unix_ns: u64, latest_unix_ns: u64) -> f64 {
    let seconds = go_seconds(latest_unix_ns.saturating_sub(earliest_unix_ns));
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        count as f64
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
/// Bytes in or out: vegeta's total and mean per request.
pub struct ByteStats {
    /// Bytes over all requests.
    pub total: u64,
    /// Bytes per request.
    pub mean: f64,
}

/// vegeta's metrics for a set of records, plus what our extra rows need.
#[derive(Debug, Clone)]
pub struct Report {
    /// Requests counted.
    pub requests: u64,
    /// Requests with a 2xx or 3xx status and no error.
    pub successes: u64,
    /// Latency figures, as vegeta prints them.
    pub latencies: LatencyStats,
    /// False when the percentiles come from the histogram (3 significant digits).
    pub latencies_exact: bool,
    /// Response body bytes.
    pub bytes_in: ByteStats,
    /// Request body bytes.
    pub bytes_out: ByteStats,
    /// The earliest send time, unix nanoseconds.
    pub earliest_unix_ns: u64,
    /// The latest send time, unix nanoseconds.
    pub latest_unix_ns: u64,
    /// The latest completion (send time plus latency), unix nanoseconds.
    pub end_unix_ns: u64,
    /// The send span (latest minus earliest send), nanoseconds.
    pub duration_ns: u64,
    /// The wait after the last send until its response, nanoseconds.
    pub wait_ns: u64,
    /// Requests over the send span, per second.
    pub rate_per_sec: f64,
    /// Successes over the span including the wait, per second.
    pub throughput_per_sec: f64,
    /// 0..=1.
    pub success_ratio: f64,
    /// Sorted as strings, as vegeta does.
    pub status_codes: Vec<(String, u64)>,
    /// Failed requests by what failed them, in name order: the status they were
    /// answered with (`503`, a gRPC status's name), else their error's kind
    /// (`connect`, `check`, `timeout`; `other`). A plan step's verdict reads these.
    pub failures: Vec<(String, u64)>,
    /// Requests per protocol, those with any, in name order.
    pub protocols: Vec<(Protocol, u64)>,
    /// In order of first appearance (by send time).
    pub errors: Vec<String>,
    /// Send lag of these records, whether or not the input recorded it.
    pub send_lag: LagStats,
    /// Requests and send span per attack id.
    pub attacks: Vec<AttackActivity>,
    /// Latency histogram counts, for `hist` and `json` with buckets.
    pub buckets: Option<BucketCounts>,
    /// Each flow check's passes and failures, by attack, step, then check; empty when
    /// no target of these records has checks.
    pub checks: Vec<CheckFigures>,
    /// Our extra rows and warnings.
    pub extras: Extras,
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{ErrorEntry, ErrorKind};

    const T0: u64 = 1_700_000_000_000_000_000;

    fn record(offset_ms: u64, latency_ms: u64, status: u16, error: u32) -> Record {
        Record {
            intended_unix_ns: T0 + offset_ms * 1_000_000,
            send_lag_ns: 1_000,
            latency_ns: latency_ms * 1_000_000,
            status,
            error,
            bytes_in: 100,
            bytes_out: 10,
            ..Record::default()
        }
    }

    fn tables() -> RunTables {
        let entry = |text: &str| ErrorEntry {
            kind: ErrorKind::Status,
            text: text.to_owned(),
        };
        RunTables {
            errors: vec![entry("500 Internal Server Error"), entry("timeout")],
            ..RunTables::default()
        }
    }

    /// A flow's runs start 10 a second for 8 s; each holds its second step 1.95 s more.
    /// The starts' rate is the arrival rate, whatever the later steps' span.
    #[test]
    fn a_flows_starts_are_counted_over_their_own_span() {
        let mut metrics = Metrics::new(None);
        for run in 0..80u64 {
            for (step, after_ms) in [(0, 0), (1, 1_950)] {
                metrics.add(&Record {
                    seq: (run << 16) | step,
                    ..record(run * 100 + after_ms, 1, 200, 0)
                });
            }
        }
        let activity = metrics.close(&tables()).attacks[0];
        // (what, figure, want)
        let rows = [
            (
                "requests over every send",
                activity.rate_per_sec(),
                160.0 / 9.85,
            ),
            (
                "runs over their starts",
                activity.flow_starts_per_sec(),
                80.0 / 7.9,
            ),
        ];
        for (what, figure, want) in rows {
            assert!(
                (figure - want).abs() < 1e-9,
                "{what}: {figure} against {want}"
            );
        }
    }

    #[test]
    fn follows_vegeta_semantics() {
        let mut metrics = Metrics::new(None);
        // Out of order on purpose: results do not depend on arrival order.
        metrics.add_all(&[
            record(1000, 5, 500, 1),
            record(0, 1, 200, 0),
            record(500, 100, 0, 2),
            record(999, 2, 200, 0),
        ]);
        let report = metrics.close(&tables());
        assert_eq!(report.requests, 4);
        assert_eq!(report.earliest_unix_ns, T0 + 1_000);
        assert_eq!(report.latest_unix_ns, T0 + 1_000_000_000 + 1_000);
        // The last completion is the 5 ms request sent at 1 s.
        assert_eq!(report.end_unix_ns, T0 + 1_005_000_000);
        assert_eq!(report.duration_ns, 1_000_000_000);
        assert_eq!(report.wait_ns, 5_000_000 - 1_000);
        assert_eq!(report.rate_per_sec, 4.0);
        assert_eq!(report.throughput_per_sec, 2.0 / 1.004_999);
        assert_eq!(report.success_ratio, 0.5);
        assert_eq!(report.bytes_in.total, 400);
        assert_eq!(report.bytes_out.mean, 10.0);
        let codes: Vec<(&str, u64)> = report
            .status_codes
            .iter()
            .map(|(c, n)| (c.as_str(), *n))
            .collect();
        assert_eq!(codes, [("0", 1), ("200", 2), ("500", 1)]);
        // The timeout was sent first (at 0.5 s), so it leads the error set.
        assert_eq!(report.errors, ["timeout", "500 Internal Server Error"]);
        assert_eq!(report.latencies.min_ns, 1_000_000);
        assert_eq!(report.latencies.max_ns, 100_000_000);
        assert_eq!(report.latencies.mean_ns, 27_000_000);
        assert_eq!(report.latencies.p50_ns, 2_000_000);
        assert_eq!(report.latencies.p99_ns, 100_000_000);
    }

    #[test]
    fn failures_are_named_by_their_answer_else_their_error() {
        let entry = |kind: ErrorKind| ErrorEntry {
            kind,
            text: kind.name().to_owned(),
        };
        let tables = RunTables {
            errors: [ErrorKind::Status, ErrorKind::Connect, ErrorKind::Check]
                .map(entry)
                .to_vec(),
            ..RunTables::default()
        };
        let failed_check = Record {
            checks_failed: 1 | Record::FAILED_BY_FLOW,
            ..record(0, 1, 200, 3)
        };
        let unavailable = Record {
            grpc_status: Some(GrpcStatus(14)),
            ..record(0, 1, 200, 0)
        };
        /// (records, the failures they are counted as)
        type Row = (Vec<Record>, &'static [(&'static str, u64)]);
        let rows: [Row; 6] = [
            (vec![record(0, 1, 200, 0)], &[]),
            // A check's failure is the check's, not its answer's 200.
            (vec![failed_check], &[("check", 1)]),
            // An answer outside 200..400 is its status, whatever its error says.
            (
                vec![record(0, 1, 503, 1), record(0, 1, 503, 0)],
                &[("503", 2)],
            ),
            (
                vec![record(0, 1, 0, 2), record(0, 1, 0, 2)],
                &[("connect", 2)],
            ),
            (vec![unavailable], &[("UNAVAILABLE", 1)]),
            // No status and no error: said as such, never lost.
            (vec![record(0, 1, 0, 0)], &[("other", 1)]),
        ];
        for (records, want) in rows {
            let mut metrics = Metrics::new(None);
            metrics.add_all(&records);
            let report = metrics.close(&tables);
            let got: Vec<(&str, u64)> = (report.failures.iter())
                .map(|(name, n)| (name.as_str(), *n))
                .collect();
            assert_eq!(got, want, "{records:?}");
            let failed: u64 = want.iter().map(|(_, n)| n).sum();
            assert_eq!(report.successes + failed, report.requests);
        }
    }

    #[test]
    fn a_single_instant_keeps_vegeta_rates() {
        let mut metrics = Metrics::new(None);
        metrics.add_all(&[record(0, 1, 200, 0), record(0, 3, 404, 0)]);
        let report = metrics.close(&RunTables::default());
        // No attack time: rate = requests and throughput = successes, as vegeta.
        assert_eq!((report.rate_per_sec, report.throughput_per_sec), (2.0, 1.0));
        assert_eq!(report.duration_ns, 0);
    }

    #[test]
    fn status_codes_sort_as_strings_and_grpc_calls_count_their_grpc_status() {
        let grpc = |code| Some(GrpcStatus(code));
        /// Records' (HTTP status, gRPC status), and the status row's names.
        type Row<'a> = (&'a [(u16, Option<GrpcStatus>)], &'a [&'a str]);
        let rows: &[Row<'_>] = &[
            (
                &[(500, None), (200, None), (50, None)],
                &["200", "50", "500"],
            ),
            (&[(0, None), (1000, None), (99, None)], &["0", "1000", "99"]),
            (
                &[(200, grpc(14)), (200, grpc(0)), (503, None), (200, grpc(4))],
                &["503", "DEADLINE_EXCEEDED", "OK", "UNAVAILABLE"],
            ),
            (&[(200, grpc(40)), (0, None)], &["0", "code 40"]),
        ];
        for (records, want) in rows {
            let mut metrics = Metrics::new(None);
            for &(status, grpc_status) in *records {
                metrics.add(&Record {
                    status,
                    grpc_status,
                    ..Record::default()
                });
            }
            let got: Vec<String> = status_codes_as_strings(metrics.status_counts)
                .into_iter()
                .map(|(code, _)| code)
                .collect();
            assert_eq!(&got, want);
        }
    }

    #[test]
    fn counts_requests_per_protocol_in_name_order() {
        let with = |protocol: Protocol| Record {
            protocol,
            ..record(0, 1, 200, 0)
        };
        let (h1, h2) = (with(Protocol::Http1), with(Protocol::Http2));
        /// Records added, and the counts the report gives.
        type Row<'a> = (&'a [Record], &'a [(Protocol, u64)]);
        let rows: &[Row<'_>] = &[
            (&[], &[]),
            (&[h1, h1], &[(Protocol::Http1, 2)]),
            (&[h2], &[(Protocol::Http2, 1)]),
            (
                &[h1, h2, h2, h1, h2],
                &[(Protocol::Http2, 3), (Protocol::Http1, 2)],
            ),
        ];
        for (records, want) in rows {
            let mut metrics = Metrics::new(None);
            metrics.add_all(records);
            let report = metrics.close(&RunTables::default());
            assert_eq!(&report.protocols, want);
        }
    }
}
