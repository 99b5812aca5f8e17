//! [`RuleWatcher`]: stop rules checked once per second of completions. The collector
//! feeds it every record; a second is judged once no worker can still report a
//! request that completed in it (workers ship at least every 100 ms).

use std::collections::BTreeMap;

use record::Record;
use workload::{Fired, LatencyFigures, Plan, RuleWatch, SecondStats, StopRule, StreamFigures};

const SECOND_NS: u64 = 1_000_000_000;
/// A second is judged this long after it ends.
const SETTLE_NS: u64 = 300_000_000;

/// One second of completions, kept until it is judged.
#[derive(Default)]
struct Bin {
    requests: u64,
    errors: u64,
    successes: u64,
    latencies_ns: Vec<u64>,
    lags_ns: Vec<u64>,
}

pub(crate) struct RuleWatcher {
    watches: Vec<RuleWatch>,
    start_unix_ns: u64,
    bins: BTreeMap<u64, Bin>,
    /// Seconds before this one are judged; later records for them are ignored.
    next_second: u64,
    /// The stream connections' latest stats sample, for the stream rules.
    streams: Option<StreamFigures>,
}

impl RuleWatcher {
    pub(crate) fn new(rules: &[StopRule], start_unix_ns: u64) -> RuleWatcher {
        RuleWatcher {
            watches: rules.iter().cloned().map(RuleWatch::new).collect(),
            start_unix_ns,
            bins: BTreeMap::new(),
            next_second: 0,
            streams: None,
        }
    }

    /// The stream connections' figures of the stats sample just taken: a second is
    /// judged after the sample that covers it, so each judges on the latest.
    pub(crate) fn streams(&mut self, figures: StreamFigures) {
        self.streams = Some(figures);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.watches.is_empty()
    }

    /// Every rule's watch, for a live view.
    pub(crate) fn watches(&self) -> &[RuleWatch] {
        &self.watches
    }

    /// The end of the last judged second, from the start.
    pub(crate) fn judged_ns(&self) -> u64 {
        self.next_second * SECOND_NS
    }

    pub(crate) fn add(&mut self, records: &[Record]) {
        if self.watches.is_empty() {
            return;
        }
        for record in records {
            let second = record.end_unix_ns().saturating_sub(self.start_unix_ns) / SECOND_NS;
            if second < self.next_second {
                continue;
            }
            let bin = self.bins.entry(second).or_default();
            bin.requests += 1;
            bin.errors += u64::from(!record.is_success());
            bin.successes += u64::from(record.is_success());
            bin.latencies_ns.push(record.latency_ns);
            bin.lags_ns.push(record.send_lag_ns);
        }
    }

    /// Judges the seconds that have settled by `now_ns` (offset from the start);
    /// returns the first rule that fires.
    pub(crate) fn judge(&mut self, now_ns: u64, plans: &[&Plan]) -> Option<Fired> {
        while !self.watches.is_empty() && (self.next_second + 1) * SECOND_NS + SETTLE_NS <= now_ns {
            let second = self.next_second;
            self.next_second += 1;
            let mut stats = self
                .bins
                .remove(&second)
                .map(|bin| summarize(bin, second, plans))
                .unwrap_or_else(|| SecondStats {
                    asked_rate_per_sec: asked_rate(second, plans),
                    ..SecondStats::default()
                });
            stats.streams = self.streams;
            for watch in &mut self.watches {
                if let Some(fired) = watch.observe(second * SECOND_NS, &stats) {
                    return Some(fired);
                }
            }
        }
        None
    }
}

fn summarize(mut bin: Bin, second: u64, plans: &[&Plan]) -> SecondStats {
    let mean_ns = bin.latencies_ns.iter().sum::<u64>() / bin.requests.max(1);
    let latency = LatencyFigures {
        p50_ns: quantile(&mut bin.latencies_ns, 0.50),
        p90_ns: quantile(&mut bin.latencies_ns, 0.90),
        p95_ns: quantile(&mut bin.latencies_ns, 0.95),
        p99_ns: quantile(&mut bin.latencies_ns, 0.99),
        p999_ns: quantile(&mut bin.latencies_ns, 0.999),
        max_ns: bin.latencies_ns.iter().copied().max().unwrap_or(0),
        mean_ns,
    };
    SecondStats {
        requests: bin.requests,
        errors: bin.errors,
        successes: bin.successes,
        latency,
        lag_p99_ns: quantile(&mut bin.lags_ns, 0.99),
        asked_rate_per_sec: asked_rate(second, plans),
        streams: None,
    }
}

/// The open-model attacks' asked rate in the middle of `second`; `None` if all are closed.
fn asked_rate(second: u64, plans: &[&Plan]) -> Option<f64> {
    let middle_ns = second * SECOND_NS + SECOND_NS / 2;
    let rates: Vec<f64> = plans
        .iter()
        .filter_map(|plan| plan.rate_at(middle_ns))
        .collect();
    (!rates.is_empty()).then(|| rates.iter().sum())
}

/// The value at rank ceil(q·n) (the nearest-rank percentile), exact.
fn quantile(values: &mut [u64], q: f64) -> u64 {
    if values.is_empty() {
        return 0;
    }
    let rank = units::nearest_rank(q, values.len() as u64) as usize - 1;
    *values.select_nth_unstable(rank).1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(end_ms: u64, latency_ms: u64, status: u16) -> Record {
        Record {
            intended_unix_ns: (end_ms - latency_ms) * 1_000_000,
            latency_ns: latency_ms * 1_000_000,
            status,
            ..Record::default()
        }
    }

    #[test]
    fn judges_settled_seconds_and_fires_on_the_streak() {
        let plan = Plan::constant_rate(10.0);
        let rules = [StopRule::parse("errors > 50% for 2s").unwrap()];
        let mut watcher = RuleWatcher::new(&rules, 0);
        let mut records = Vec::new();
        for second in 0..4u64 {
            for i in 0..10 {
                let status = if second >= 1 && i < 6 { 503 } else { 200 };
                records.push(record(second * 1000 + i * 100 + 50, 10, status));
            }
        }
        watcher.add(&records);
        assert_eq!(
            watcher.judge(1_200_000_000, &[&plan]),
            None,
            "second 0 is not settled yet"
        );
        assert_eq!(
            watcher.judge(2_300_000_000, &[&plan]),
            None,
            "seconds 0 and 1 judged: one bad second"
        );
        let fired = watcher.judge(3_300_000_000, &[&plan]).unwrap();
        assert_eq!(fired.at_ns, 3_000_000_000);
        assert!((fired.value - 0.6).abs() < 1e-9);
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let mut values: Vec<u64> = (1..=100).collect();
        assert_eq!(
            (
                quantile(&mut values, 0.5),
                quantile(&mut values, 0.99),
                quantile(&mut values, 1.0)
            ),
            (50, 99, 100)
        );
        assert_eq!(quantile(&mut [], 0.5), 0);
    }
}
