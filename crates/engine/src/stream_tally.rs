//! [`StreamTally`]: what the connections of stream steps (`ws`, `sse`) and streamed
//! gRPC calls did, counted as it happens, for the per-second figures of the stats
//! samples (`record::StreamStats`). One per worker, bumped by its session loop and its
//! h2 path alike with relaxed atomic adds (no lock, no allocation per message: the
//! latency histogram is a fixed array of counts by bucket); the collector reads every
//! worker's once a second ([`StreamSeconds`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use record::{MessageLatency, StreamStats};
use workload::{LatencyFigures, StreamFigures};

/// One worker's running counts; see the module documentation.
pub(crate) struct StreamTally {
    opened: AtomicU64,
    closed: AtomicU64,
    messages_out: AtomicU64,
    bytes_out: AtomicU64,
    messages_in: AtomicU64,
    bytes_in: AtomicU64,
    /// Message latencies by bucket since the collector last took them.
    latency: Box<[AtomicU64]>,
}

impl Default for StreamTally {
    fn default() -> StreamTally {
        StreamTally {
            opened: AtomicU64::new(0),
            closed: AtomicU64::new(0),
            messages_out: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
            messages_in: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            latency: (0..MessageLatency::BUCKETS)
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }
}

impl std::fmt::Debug for StreamTally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamTally")
            .field("opened", &self.opened)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl StreamTally {
    /// A connection (a call) opened.
    pub(crate) fn opened(&self) {
        self.opened.fetch_add(1, Ordering::Relaxed);
    }

    /// A connection (a call) closed, whoever closed it.
    pub(crate) fn closed(&self) {
        self.closed.fetch_add(1, Ordering::Relaxed);
    }

    /// `messages` messages of `bytes` payload bytes went out.
    pub(crate) fn sent(&self, messages: u64, bytes: u64) {
        self.messages_out.fetch_add(messages, Ordering::Relaxed);
        self.bytes_out.fetch_add(bytes, Ordering::Relaxed);
    }

    /// `messages` messages (events) of `bytes` payload bytes came in.
    pub(crate) fn received(&self, messages: u64, bytes: u64) {
        self.messages_in.fetch_add(messages, Ordering::Relaxed);
        self.bytes_in.fetch_add(bytes, Ordering::Relaxed);
    }

    /// A message latency was timed (a round trip, a gap between events).
    pub(crate) fn timed(&self, latency_ns: u64) {
        self.latency[MessageLatency::bucket_of(latency_ns)].fetch_add(1, Ordering::Relaxed);
    }

    /// The running totals (opened, closed, out, bytes out, in, bytes in).
    fn totals(&self) -> [u64; 6] {
        [
            &self.opened,
            &self.closed,
            &self.messages_out,
            &self.bytes_out,
            &self.messages_in,
            &self.bytes_in,
        ]
        .map(|counter| counter.load(Ordering::Relaxed))
    }

    /// Moves the latencies counted since the last take into `into`.
    fn take_latency(&self, into: &mut MessageLatency) {
        for (bucket, count) in self.latency.iter().enumerate() {
            // A load first: most buckets are empty, and a swap would write each.
            if count.load(Ordering::Relaxed) != 0 {
                into.add_to_bucket(bucket, count.swap(0, Ordering::Relaxed));
            }
        }
    }
}

/// The collector's side: every worker's tally, and the totals of the last sample, so
/// each sample holds its own interval's figures.
pub(crate) struct StreamSeconds {
    tallies: Vec<Arc<StreamTally>>,
    before: [u64; 6],
}

impl StreamSeconds {
    pub(crate) fn new(tallies: Vec<Arc<StreamTally>>) -> StreamSeconds {
        StreamSeconds {
            tallies,
            before: [0; 6],
        }
    }

    /// Whether a connection has opened (read only once one had, at a sample).
    pub(crate) fn seen(&self) -> bool {
        self.before[0] > 0 || self.tallies.iter().any(|t| t.totals()[0] > 0)
    }

    /// The figures since the last call; `None` until a connection has opened, so a
    /// run without streams writes its samples as before.
    pub(crate) fn sample(&mut self) -> Option<StreamStats> {
        let mut now = [0u64; 6];
        let mut latency = MessageLatency::default();
        for tally in &self.tallies {
            for (sum, value) in now.iter_mut().zip(tally.totals()) {
                *sum += value;
            }
            tally.take_latency(&mut latency);
        }
        if now[0] == 0 {
            return None;
        }
        let before = std::mem::replace(&mut self.before, now);
        let delta = |i: usize| now[i].saturating_sub(before[i]);
        Some(StreamStats {
            // A close counted before its open (another worker read first) is not
            // a negative count.
            open: now[0].saturating_sub(now[1]),
            opened: delta(0),
            closed: delta(1),
            messages_out: delta(2),
            bytes_out: delta(3),
            messages_in: delta(4),
            bytes_in: delta(5),
            latency,
        })
    }
}

/// What the stop rules read of a sample taken `span_ns` after the one before.
pub(crate) fn rule_figures(streams: &StreamStats, span_ns: u64) -> StreamFigures {
    let seconds = (span_ns.max(1) as f64 / 1e9).max(1e-3);
    let latency = &streams.latency;
    let q = |q: f64| latency.quantile(q).unwrap_or(0);
    StreamFigures {
        open: streams.open,
        messages_in_per_sec: streams.messages_in as f64 / seconds,
        messages_out_per_sec: streams.messages_out as f64 / seconds,
        latency: (!latency.is_empty()).then(|| LatencyFigures {
            p50_ns: q(0.5),
            p90_ns: q(0.9),
            p95_ns: q(0.95),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            max_ns: q(1.0),
            mean_ns: 0,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_sample_holds_its_own_interval_and_the_count_open_at_its_end() {
        let tallies: Vec<Arc<StreamTally>> = (0..2).map(|_| Arc::default()).collect();
        let mut seconds = StreamSeconds::new(tallies.clone());
        assert_eq!(seconds.sample(), None, "nothing opened yet");
        for tally in &tallies {
            tally.opened();
            tally.opened();
            tally.sent(3, 30);
            tally.received(2, 20);
            tally.timed(1_000_000);
        }
        tallies[1].closed();
        let first = seconds.sample().unwrap();
        assert_eq!(
            (first.open, first.opened, first.closed),
            (3, 4, 1),
            "{first:?}"
        );
        assert_eq!(
            (
                first.messages_out,
                first.bytes_out,
                first.messages_in,
                first.bytes_in
            ),
            (6, 60, 4, 40)
        );
        assert_eq!(first.latency.count(), 2);
        tallies[0].closed();
        tallies[0].timed(5_000_000);
        let second = seconds.sample().unwrap();
        assert_eq!((second.open, second.opened, second.closed), (2, 0, 1));
        assert_eq!((second.messages_out, second.messages_in), (0, 0));
        assert_eq!(second.latency.count(), 1);
        let p50_ns = second.latency.quantile(0.5).unwrap();
        assert!((4_850_000..=5_150_000).contains(&p50_ns), "{p50_ns}");
    }
}
