//! What a steered shard tells its coordinator, as JSON: [`ShardReport`] (the answer
//! to `/seconds?from=N`) carrying [`ShardSecond`]s, each one settled second of the
//! shard's completions in mergeable form; and [`MergedSecond`], the coordinator's sum
//! of one second over every shard, read as the engine's stop rules read a second.

use record::ErrorKind;
use serde::{Deserialize, Serialize};
use workload::{LatencyFigures, SecondStats, StreamFigures};

use super::buckets::Buckets;
use super::streams::ShardStreams;
use crate::started::LoadUnit;

/// What a shard's feed says, by version ([`ShardReport::feed_version`]): 1 adds each
/// second's stream figures ([`ShardSecond::streams`]), 2 the load its flows started
/// ([`ShardReport::unit`], [`ShardReport::started`]: a flow asks for runs). An answer
/// without the field is an older shard's (0): a coordinator merges its seconds and
/// names it, and the run's stream figures stay unknown (a sum without it would read
/// as connections lost); a flow's delivered load without every shard's runs is
/// counted in requests, as before; an older coordinator ignores the fields it does
/// not know.
pub const FEED_VERSION: u32 = 2;
/// The first feed version with stream figures.
pub(super) const STREAMS_SINCE_VERSION: u32 = 1;
/// The first feed version with the load started ([`ShardReport::started`]).
pub(super) const STARTED_SINCE_VERSION: u32 = 2;

/// One settled second of a shard's completions (by the second they ended in, from
/// the run's time zero, which `-start-at` makes the same on every shard).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardSecond {
    /// Seconds since time zero.
    pub second: u64,
    /// Completions (answered or failed).
    pub requests: u64,
    /// Of those, with a 2xx or 3xx status.
    pub successes: u64,
    /// The shard's share of the asked rate in the middle of the second (open model).
    pub asked_rate_per_sec: Option<f64>,
    /// Latencies, from the intended send time.
    pub latency: Buckets,
    /// The largest latency, exact.
    pub latency_max_ns: u64,
    /// The latencies' sum, for the mean.
    pub latency_sum_ns: u64,
    /// Send lags.
    pub lag: Buckets,
    /// Completions by status code (0: transport error), ascending.
    pub codes: Vec<(u16, u64)>,
    /// Failures by error kind.
    pub errors: Vec<(ErrorKind, u64)>,
    /// The stream connections of the stats samples taken in the second; none when it
    /// had none (a shard samples about once a second, not on the second) or before a
    /// connection opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<ShardStreams>,
}

/// Where a shard's run is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShardState {
    /// Not at time zero yet (warming up, waiting for `-start-at`).
    #[default]
    Starting,
    /// Sending.
    Running,
    /// Asked to stop; requests in flight are finishing.
    Stopping,
    /// Over; its record file is complete.
    Finished,
}

/// A shard's answer to `/seconds?from=N`: who it is, its totals now, and its settled
/// seconds from `N` on (as many as it still keeps).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardReport {
    /// What its feed says ([`FEED_VERSION`]; 0: an older shard's).
    #[serde(default)]
    pub feed_version: u32,
    /// Its shard index.
    pub index: u64,
    /// The shard count it was started with.
    pub count: u64,
    /// Its plan fingerprint (hex): shards of one run share it.
    pub fingerprint: String,
    /// Its stop rules, as written: the coordinator judges them on merged seconds.
    pub rules: Vec<String>,
    /// Its time zero, unix ns.
    pub start_unix_ns: u64,
    /// Its clock at the answer, unix ns (for the clock skew between machines).
    pub now_unix_ns: u64,
    /// Requests its schedule asked for by now (open model).
    pub asked: Option<u64>,
    /// Requests sent so far.
    pub sent: u64,
    /// What its asked load is counted in (version 2 on; requests before).
    #[serde(default)]
    pub unit: LoadUnit,
    /// The load started so far in [`ShardReport::unit`]s, when they are not requests
    /// (a flow's runs started; version 2 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<u64>,
    /// Requests sent and not yet completed.
    pub in_flight: u64,
    /// Due requests that have not left.
    pub behind: u64,
    /// Where its run is.
    pub state: ShardState,
    /// Why it stopped, when it did.
    pub stop_detail: String,
    /// Its record file is complete (`/records` has all of it).
    #[serde(default)]
    pub records_complete: bool,
    /// Settled seconds from the one asked, in order.
    pub seconds: Vec<ShardSecond>,
}

/// One second summed over every shard that reported it.
#[derive(Debug, Clone, Default)]
pub struct MergedSecond {
    /// Seconds since time zero.
    pub second: u64,
    /// Completions.
    pub requests: u64,
    /// Successful completions.
    pub successes: u64,
    /// The shards' asked rates together.
    pub asked_rate_per_sec: Option<f64>,
    latency: Buckets,
    latency_max_ns: u64,
    latency_sum_ns: u64,
    lag: Buckets,
    /// Shards whose figures are in.
    pub shards: u32,
    /// The stream connections as the stop rules read them (the coordinator sums
    /// every shard's latest); `None` before one opened.
    pub streams: Option<StreamFigures>,
}

impl MergedSecond {
    /// An empty second.
    pub fn new(second: u64) -> MergedSecond {
        MergedSecond {
            second,
            ..MergedSecond::default()
        }
    }

    /// Adds one shard's figures for this second.
    pub fn add(&mut self, shard: &ShardSecond) {
        self.requests += shard.requests;
        self.successes += shard.successes;
        self.asked_rate_per_sec = match (self.asked_rate_per_sec, shard.asked_rate_per_sec) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.latency.merge(&shard.latency);
        self.latency_max_ns = self.latency_max_ns.max(shard.latency_max_ns);
        self.latency_sum_ns = self.latency_sum_ns.saturating_add(shard.latency_sum_ns);
        self.lag.merge(&shard.lag);
        self.shards += 1;
    }

    /// The second as the stop rules read it.
    pub fn stats(&self) -> SecondStats {
        let quantile = |q| self.latency.quantile(q).min(self.latency_max_ns);
        SecondStats {
            requests: self.requests,
            errors: self.requests - self.successes.min(self.requests),
            successes: self.successes,
            latency: LatencyFigures {
                p50_ns: quantile(0.50),
                p90_ns: quantile(0.90),
                p95_ns: quantile(0.95),
                p99_ns: quantile(0.99),
                p999_ns: quantile(0.999),
                max_ns: self.latency_max_ns,
                mean_ns: self.latency_sum_ns / self.requests.max(1),
            },
            lag_p99_ns: self.lag.quantile(0.99),
            asked_rate_per_sec: self.asked_rate_per_sec,
            streams: self.streams,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(latencies_ms: &[u64], successes: u64, asked: f64) -> ShardSecond {
        let mut values: Vec<u64> = latencies_ms.iter().map(|ms| ms * 1_000_000).collect();
        ShardSecond {
            second: 3,
            requests: values.len() as u64,
            successes,
            asked_rate_per_sec: Some(asked),
            latency_max_ns: values.iter().copied().max().unwrap_or(0),
            latency_sum_ns: values.iter().sum(),
            latency: Buckets::of(&mut values),
            ..ShardSecond::default()
        }
    }

    #[test]
    fn shards_add_up_to_the_whole_second() {
        let mut merged = MergedSecond::new(3);
        merged.add(&second(&[10, 10, 10, 10], 4, 2.0));
        merged.add(&second(&[10, 10, 10, 400], 1, 2.0));
        let stats = merged.stats();
        assert_eq!((stats.requests, stats.errors, stats.successes), (8, 3, 5));
        assert_eq!(stats.asked_rate_per_sec, Some(4.0));
        assert_eq!(stats.latency.max_ns, 400_000_000);
        assert_eq!(stats.latency.p99_ns, 400_000_000, "capped at the exact max");
        assert_eq!(stats.latency.mean_ns, 58_750_000);
        assert!((10_000_000..10_100_000).contains(&stats.latency.p50_ns));
        assert_eq!(merged.shards, 2);
    }

    #[test]
    fn a_report_round_trips_through_json() {
        let report = ShardReport {
            index: 1,
            count: 4,
            fingerprint: "3f9a".into(),
            rules: vec!["p99 > 1s for 2s".into()],
            state: ShardState::Running,
            seconds: vec![ShardSecond {
                codes: vec![(200, 3), (0, 1)],
                errors: vec![(ErrorKind::Timeout, 1)],
                streams: Some(ShardStreams {
                    stats: record::StreamStats {
                        open: 8,
                        messages_in: 40,
                        ..record::StreamStats::default()
                    },
                    span_ns: 1_000_000_000,
                }),
                ..second(&[1, 2, 3, 4], 3, 1.0)
            }],
            ..ShardReport::default()
        };
        let text = serde_json::to_string(&report).unwrap_or_default();
        assert!(text.contains(r#""state":"running""#), "{text}");
        assert!(text.contains(r#""errors":[["timeout",1]]"#), "{text}");
        let back: ShardReport = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(back, report);
    }

    #[test]
    fn an_older_shard_s_answer_reads_as_feed_version_0_without_streams() {
        // As a shard before stream figures answered.
        let older = r#"{"index":0,"count":2,"fingerprint":"f","rules":[],"start_unix_ns":1,
            "now_unix_ns":2,"asked":null,"sent":5,"in_flight":0,"behind":0,"state":"running",
            "stop_detail":"","seconds":[{"second":0,"requests":5,"successes":5,
            "asked_rate_per_sec":null,"latency":[],"latency_max_ns":0,"latency_sum_ns":0,
            "lag":[],"codes":[],"errors":[]}]}"#;
        let report: ShardReport = serde_json::from_str(older).unwrap();
        assert_eq!(report.feed_version, 0);
        assert_eq!(report.seconds[0].streams, None);
        let current = ShardReport {
            feed_version: FEED_VERSION,
            ..ShardReport::default()
        };
        let text = serde_json::to_string(&current).unwrap_or_default();
        assert!(text.contains(r#""feed_version":2"#), "{text}");
        assert_eq!((report.unit, report.started), (LoadUnit::Requests, None));
    }
}
