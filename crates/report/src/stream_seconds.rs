//! [`StreamsSoFar`]: the connections of stream steps and streamed gRPC calls second by
//! second, folded once from the stats samples' `streams` (format version 8 on), so
//! the live view, Prometheus and OTLP (and `plot`) word the same figures and none
//! computes them again.

use record::{GeneratorStats, MessageLatency, StreamStats};

const SECOND_NS: f64 = 1e9;

/// One stats interval's stream figures, as rates and quantiles.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StreamSecond {
    /// The sample's time, unix nanoseconds.
    pub at_unix_ns: u64,
    /// Connections (and calls) open at the sample's time.
    pub open: u64,
    /// Opened and closed per second over the interval.
    pub opened_per_sec: f64,
    /// Closed per second over the interval.
    pub closed_per_sec: f64,
    /// Messages sent per second over the interval.
    pub messages_out_per_sec: f64,
    /// Messages (events) received per second over the interval.
    pub messages_in_per_sec: f64,
    /// Payload bytes sent per second.
    pub bytes_out_per_sec: f64,
    /// Payload bytes received per second.
    pub bytes_in_per_sec: f64,
    /// The interval's message latencies; `None` when none was timed.
    pub latency: Option<MessageQuantiles>,
}

/// Message latency quantiles (bucket middles, within 3%), nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessageQuantiles {
    /// How many were timed.
    pub count: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 95th percentile.
    pub p95_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// The slowest (its bucket's middle).
    pub max_ns: u64,
}

impl MessageQuantiles {
    /// The quantiles of `latency`; `None` when it is empty.
    pub fn of(latency: &MessageLatency) -> Option<MessageQuantiles> {
        let q = |q: f64| latency.quantile(q);
        Some(MessageQuantiles {
            count: latency.count(),
            p50_ns: q(0.5)?,
            p90_ns: q(0.9)?,
            p95_ns: q(0.95)?,
            p99_ns: q(0.99)?,
            p999_ns: q(0.999)?,
            max_ns: q(1.0)?,
        })
    }
}

/// The run's stream figures so far: the last interval's and the totals.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamsSoFar {
    /// The last interval's figures.
    pub last: StreamSecond,
    /// Connections (and calls) opened so far.
    pub opened: u64,
    /// Closed so far.
    pub closed: u64,
    /// Messages sent so far.
    pub messages_out: u64,
    /// Messages (events) received so far.
    pub messages_in: u64,
    /// Payload bytes sent so far.
    pub bytes_out: u64,
    /// Payload bytes received so far.
    pub bytes_in: u64,
    /// Every message latency so far, merged.
    pub latency: MessageLatency,
    /// The previous sample's time (the start of the next interval), unix ns.
    previous_unix_ns: u64,
}

impl StreamsSoFar {
    /// Starts at the run's time zero (the first interval's start).
    pub fn new(start_unix_ns: u64) -> StreamsSoFar {
        StreamsSoFar {
            previous_unix_ns: start_unix_ns,
            ..StreamsSoFar::default()
        }
    }

    /// Folds one stats sample (every one: each interval starts at the sample before);
    /// `false` when it has no `streams` (none opened yet).
    pub fn add(&mut self, stats: &GeneratorStats) -> bool {
        let span_ns = stats.at_unix_ns.saturating_sub(self.previous_unix_ns);
        self.previous_unix_ns = stats.at_unix_ns;
        let Some(streams) = &stats.streams else {
            return false;
        };
        self.last = StreamSecond::of(stats.at_unix_ns, streams, span_ns);
        self.count(streams);
        true
    }

    /// Adds one interval's counts and latencies to the totals, leaving `last` as it is
    /// (a steered run's coordinator sums its shards' intervals, and words `last` from
    /// each shard's latest).
    pub fn count(&mut self, streams: &StreamStats) {
        self.opened += streams.opened;
        self.closed += streams.closed;
        self.messages_out += streams.messages_out;
        self.messages_in += streams.messages_in;
        self.bytes_out += streams.bytes_out;
        self.bytes_in += streams.bytes_in;
        self.latency.merge(&streams.latency);
    }
}

impl StreamSecond {
    /// `streams` over an interval of `span_ns` ending at `at_unix_ns` (a zero span
    /// reads as a second).
    pub fn of(at_unix_ns: u64, streams: &StreamStats, span_ns: u64) -> StreamSecond {
        let seconds = if span_ns == 0 {
            1.0
        } else {
            span_ns as f64 / SECOND_NS
        };
        let rate = |count: u64| count as f64 / seconds;
        StreamSecond {
            at_unix_ns,
            open: streams.open,
            opened_per_sec: rate(streams.opened),
            closed_per_sec: rate(streams.closed),
            messages_out_per_sec: rate(streams.messages_out),
            messages_in_per_sec: rate(streams.messages_in),
            bytes_out_per_sec: rate(streams.bytes_out),
            bytes_in_per_sec: rate(streams.bytes_in),
            latency: MessageQuantiles::of(&streams.latency),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_ms: u64, streams: Option<StreamStats>) -> GeneratorStats {
        GeneratorStats {
            at_unix_ns: at_ms * 1_000_000,
            streams,
            ..GeneratorStats::default()
        }
    }

    #[test]
    fn each_interval_reads_as_rates_over_its_own_span_and_totals_add_up() {
        let mut so_far = StreamsSoFar::new(0);
        assert!(!so_far.add(&sample(1000, None)), "a sample without streams");
        let mut latency = MessageLatency::default();
        (1..=100).for_each(|ms| latency.add(ms * 1_000_000));
        let first = StreamStats {
            open: 40,
            opened: 50,
            closed: 10,
            messages_out: 1000,
            messages_in: 2000,
            bytes_out: 10_000,
            bytes_in: 20_000,
            latency,
        };
        assert!(so_far.add(&sample(2000, Some(first))));
        let last = so_far.last;
        assert_eq!(last.open, 40);
        // Over the second since the sample before (which had no streams).
        assert_eq!(
            (last.opened_per_sec, last.messages_in_per_sec),
            (50.0, 2000.0)
        );
        let p99_ms = last.latency.unwrap().p99_ns as f64 / 1e6;
        assert!((p99_ms - 99.0).abs() <= 99.0 * 0.03, "{p99_ms}");
        let second = StreamStats {
            open: 30,
            closed: 10,
            messages_in: 500,
            ..StreamStats::default()
        };
        so_far.add(&sample(2500, Some(second)));
        assert_eq!(
            so_far.last.messages_in_per_sec, 1000.0,
            "500 in half a second"
        );
        assert_eq!(so_far.last.latency, None, "nothing timed in it");
        assert_eq!(
            (so_far.opened, so_far.closed, so_far.messages_in),
            (50, 20, 2500)
        );
        assert_eq!(so_far.latency.count(), 100);
    }
}
