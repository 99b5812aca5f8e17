//! The stream connections of a steered run (`ws`, `sse` steps, streamed gRPC calls):
//! [`ShardStreams`], what a shard's settled second carries of its stats samples'
//! `streams`, and [`RunStreams`], the coordinator's merge of them for its live view,
//! its Prometheus series and its stop rules.
//!
//! A shard samples about once a second, not on the second, so a second may hold no
//! sample of a shard (or, at its end, two). Counts are summed once each, so the run's
//! totals equal the shards' records; what a second shows is each shard's latest
//! sample summed (connections open, messages a second each way) with their latency
//! histograms merged, as one process's rules read its latest sample.

use record::{MessageLatency, StreamStats};
use report::{MessageQuantiles, StreamSecond, StreamsSoFar};
use serde::{Deserialize, Serialize};
use workload::{LatencyFigures, StreamFigures};

/// The stats samples a shard took in one second, absorbed into one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardStreams {
    /// Their intervals' counts and latencies; connections open at the last.
    pub stats: StreamStats,
    /// The time their intervals cover (each from the sample before), ns.
    pub span_ns: u64,
}

impl ShardStreams {
    /// Takes in a later sample's figures.
    pub fn absorb_later(&mut self, later: ShardStreams) {
        let earlier = std::mem::replace(&mut self.stats, later.stats);
        self.stats.absorb_earlier(&earlier);
        self.span_ns += later.span_ns;
    }

    /// Its latencies read back in order and in range.
    pub fn is_well_formed(&self) -> bool {
        self.stats.latency.check().is_ok()
    }
}

/// The run's stream figures, as the coordinator merges them; see the module docs.
#[derive(Debug, Default)]
pub(super) struct RunStreams {
    /// `None` until a shard reported a connection.
    so_far: Option<StreamsSoFar>,
}

impl RunStreams {
    /// Counts one shard's second into the run's totals (each once).
    pub(super) fn count(&mut self, streams: &ShardStreams) {
        self.so_far
            .get_or_insert_with(StreamsSoFar::default)
            .count(&streams.stats);
    }

    /// Words the merged second ending at `at_unix_ns` from each shard's latest
    /// figures; what the stop rules read of it (`None` before any connection).
    pub(super) fn second<'a>(
        &mut self,
        at_unix_ns: u64,
        latest: impl Iterator<Item = &'a ShardStreams>,
    ) -> Option<StreamFigures> {
        let so_far = self.so_far.as_mut()?;
        so_far.last = summed(at_unix_ns, latest);
        Some(rule_figures(&so_far.last))
    }

    /// The figures so far, for the live view and the series.
    pub(super) fn so_far(&self) -> Option<&StreamsSoFar> {
        self.so_far.as_ref()
    }

    /// `streams: 8 connections opened, 8 closed; messages 160 out, 160 in; bytes ...`.
    pub(super) fn verdict(&self) -> Option<String> {
        let so_far = self.so_far.as_ref()?;
        let show = units::GoDuration::report_ns;
        let latency = MessageQuantiles::of(&so_far.latency).map_or_else(String::new, |q| {
            format!(
                "; message latency p50 {}, p99 {}, max {} ({} timed)",
                show(q.p50_ns),
                show(q.p99_ns),
                show(q.max_ns),
                q.count
            )
        });
        Some(format!(
            "streams: {} connections opened, {} closed; messages {} out, {} in; bytes {} out, {} in{latency}",
            so_far.opened,
            so_far.closed,
            so_far.messages_out,
            so_far.messages_in,
            so_far.bytes_out,
            so_far.bytes_in
        ))
    }
}

/// The shards' latest figures as one second: open and rates summed, latencies merged.
fn summed<'a>(at_unix_ns: u64, latest: impl Iterator<Item = &'a ShardStreams>) -> StreamSecond {
    let mut sum = StreamSecond {
        at_unix_ns,
        ..StreamSecond::default()
    };
    let mut latency = MessageLatency::default();
    for streams in latest {
        let one = StreamSecond::of(at_unix_ns, &streams.stats, streams.span_ns);
        sum.open += one.open;
        sum.opened_per_sec += one.opened_per_sec;
        sum.closed_per_sec += one.closed_per_sec;
        sum.messages_out_per_sec += one.messages_out_per_sec;
        sum.messages_in_per_sec += one.messages_in_per_sec;
        sum.bytes_out_per_sec += one.bytes_out_per_sec;
        sum.bytes_in_per_sec += one.bytes_in_per_sec;
        latency.merge(&streams.stats.latency);
    }
    sum.latency = MessageQuantiles::of(&latency);
    sum
}

/// What the stop rules read of a merged second.
fn rule_figures(second: &StreamSecond) -> StreamFigures {
    StreamFigures {
        open: second.open,
        messages_in_per_sec: second.messages_in_per_sec,
        messages_out_per_sec: second.messages_out_per_sec,
        latency: second.latency.map(|q| LatencyFigures {
            p50_ns: q.p50_ns,
            p90_ns: q.p90_ns,
            p95_ns: q.p95_ns,
            p99_ns: q.p99_ns,
            p999_ns: q.p999_ns,
            max_ns: q.max_ns,
            mean_ns: 0,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(open: u64, messages_in: u64, span_ms: u64, latencies_ms: &[u64]) -> ShardStreams {
        let mut latency = MessageLatency::default();
        latencies_ms
            .iter()
            .for_each(|ms| latency.add(ms * 1_000_000));
        ShardStreams {
            stats: StreamStats {
                open,
                opened: open,
                messages_in,
                bytes_in: messages_in * 10,
                latency,
                ..StreamStats::default()
            },
            span_ns: span_ms * 1_000_000,
        }
    }

    #[test]
    fn a_second_sums_each_shard_s_latest_and_the_totals_count_each_once() {
        let mut run = RunStreams::default();
        assert_eq!(run.second(0, std::iter::empty()), None, "no connection yet");
        let (a, b) = (
            shard(30, 1000, 1000, &[1, 2, 3]),
            shard(20, 1000, 500, &[100]),
        );
        run.count(&a);
        run.count(&b);
        let figures = run.second(7, [&a, &b].into_iter()).unwrap();
        assert_eq!(figures.open, 50);
        // 1000 over a second and 1000 over half a second.
        assert_eq!(figures.messages_in_per_sec, 3000.0);
        let max_ms = figures.latency.unwrap().max_ns as f64 / 1e6;
        assert!((max_ms - 100.0).abs() <= 3.0, "{max_ms}");
        // Shard b took no sample in the next second: its latest still counts open,
        // but nothing of it is counted twice.
        let a2 = shard(31, 500, 1000, &[]);
        run.count(&a2);
        let figures = run.second(8, [&a2, &b].into_iter()).unwrap();
        assert_eq!(figures.open, 51);
        let so_far = run.so_far().unwrap();
        assert_eq!((so_far.opened, so_far.messages_in), (81, 2500));
        assert_eq!(so_far.latency.count(), 4);
        let verdict = run.verdict().unwrap();
        assert!(
            verdict.starts_with("streams: 81 connections opened, 0 closed; messages 0 out, 2500 in; bytes 0 out, 25000 in; message latency p50 "),
            "{verdict}"
        );
    }

    #[test]
    fn samples_of_one_second_absorb_in_order() {
        let mut first = shard(10, 100, 600, &[1]);
        first.absorb_later(shard(4, 50, 500, &[2]));
        assert_eq!(first.stats.open, 4, "the later sample's count open");
        assert_eq!((first.stats.opened, first.stats.messages_in), (14, 150));
        assert_eq!(
            (first.span_ns, first.stats.latency.count()),
            (1_100_000_000, 2)
        );
    }
}
