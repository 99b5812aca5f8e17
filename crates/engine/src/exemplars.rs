//! [`ExemplarKeeper`]: under `-trace`, the collector keeps the traced requests worth
//! looking at as it writes them, bounded: the slowest few successful ones of each
//! second and target, a typical one of each second and target (the median of its
//! first few, what the slow ones are compared with), and the first few of each error. The collector already sees
//! every record on its own thread, so the workers do nothing more per request and no
//! lock is taken; the ids are the sampler's pure function of (attack, seq), so they
//! are computed here again rather than carried.

use std::collections::HashMap;

use record::{Exemplar, ExemplarKind, Record};
use workload::{TraceIds, TraceSampler};

/// The slowest successful requests kept per second and target.
pub(crate) const SLOWEST_PER_SECOND: usize = 2;
/// The first traced successful requests of each second and target whose median is kept
/// as its typical one: the first ones are a fair draw, whatever their latency.
pub(crate) const TYPICAL_DRAWN: usize = 5;
/// The first failed requests kept per error.
pub(crate) const FIRST_PER_ERROR: usize = 3;
/// Distinct errors whose first requests are kept (a run with thousands of distinct
/// error texts keeps the first errors' only).
pub(crate) const MAX_ERRORS: usize = 64;

pub(crate) struct ExemplarKeeper {
    sampler: TraceSampler,
    /// Record ids of the targets that set their own `traceparent`: their requests
    /// carried the user's ids, not ours, so none of them is kept.
    own_traceparent: Vec<u32>,
    /// By (target, second of the intended send): the slowest, slowest first.
    slowest: HashMap<(u32, u64), Vec<Record>>,
    /// By (target, second of the intended send): the first ones, in the order they came.
    first: HashMap<(u32, u64), Vec<Record>>,
    /// By error id: the first ones, in the order they came.
    failed: HashMap<u32, Vec<Record>>,
}

impl ExemplarKeeper {
    pub(crate) fn new(sampler: TraceSampler, own_traceparent: Vec<u32>) -> ExemplarKeeper {
        ExemplarKeeper {
            sampler,
            own_traceparent,
            slowest: HashMap::new(),
            first: HashMap::new(),
            failed: HashMap::new(),
        }
    }

    /// Looks at each record; keeps the traced ones that are among the slowest or first.
    pub(crate) fn add(&mut self, records: &[Record]) {
        for record in records {
            if self.own_traceparent.contains(&record.target) {
                continue;
            }
            if record.error != 0 || !record.is_success() {
                self.add_failed(record);
            } else {
                self.add_slow(record);
            }
        }
    }

    fn add_slow(&mut self, record: &Record) {
        let second = record.intended_unix_ns / 1_000_000_000;
        let first = self.first.entry((record.target, second)).or_default();
        if first.len() < TYPICAL_DRAWN && self.sampler.ids(record.attack, record.seq).is_some() {
            first.push(*record);
        }
        let kept = self.slowest.entry((record.target, second)).or_default();
        let at = kept.partition_point(|k| k.latency_ns >= record.latency_ns);
        if at < SLOWEST_PER_SECOND && self.sampler.ids(record.attack, record.seq).is_some() {
            kept.insert(at, *record);
            kept.truncate(SLOWEST_PER_SECOND);
        }
    }

    fn add_failed(&mut self, record: &Record) {
        let known = self.failed.len();
        if let Some(kept) = self.failed.get_mut(&record.error) {
            if kept.len() < FIRST_PER_ERROR && self.sampler.ids(record.attack, record.seq).is_some()
            {
                kept.push(*record);
            }
        } else if known < MAX_ERRORS && self.sampler.ids(record.attack, record.seq).is_some() {
            self.failed.insert(record.error, vec![*record]);
        }
    }

    /// What was kept, slow ones by send time, then failures by error and send time,
    /// then typical ones by send time.
    pub(crate) fn finish(self) -> Vec<Exemplar> {
        let mut slow: Vec<Record> = self.slowest.into_values().flatten().collect();
        slow.sort_by_key(|r| (r.intended_unix_ns, r.attack, r.seq));
        let mut typical: Vec<Record> = self.first.into_values().filter_map(median).collect();
        typical.sort_by_key(|r| (r.intended_unix_ns, r.attack, r.seq));
        let mut failed: Vec<Record> = self.failed.into_values().flatten().collect();
        failed.sort_by_key(|r| (r.error, r.intended_unix_ns, r.attack, r.seq));
        let sampler = self.sampler;
        let exemplar = |kind: ExemplarKind| {
            move |record: Record| {
                let ids = sampler.ids(record.attack, record.seq)?;
                Some(exemplar_of(&record, ids, kind))
            }
        };
        (slow.into_iter().filter_map(exemplar(ExemplarKind::Slow)))
            .chain(
                failed
                    .into_iter()
                    .filter_map(exemplar(ExemplarKind::Failed)),
            )
            .chain(
                typical
                    .into_iter()
                    .filter_map(exemplar(ExemplarKind::Typical)),
            )
            .collect()
    }
}

/// The middle one by latency (the lower of two middles).
fn median(mut drawn: Vec<Record>) -> Option<Record> {
    drawn.sort_by_key(|r| r.latency_ns);
    drawn.get(drawn.len().saturating_sub(1) / 2).copied()
}

fn exemplar_of(record: &Record, ids: TraceIds, kind: ExemplarKind) -> Exemplar {
    Exemplar {
        kind,
        attack: record.attack,
        target: record.target,
        seq: record.seq,
        trace_id: ids.trace_hex(),
        span_id: ids.span_hex(),
        intended_unix_ns: record.intended_unix_ns,
        latency_ns: record.latency_ns,
        status: record.status,
        error: record.error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::TraceSettings;

    fn record(seq: u64, second: u64, latency_ms: u64, error: u32) -> Record {
        Record {
            seq,
            target: (seq % 2) as u32,
            intended_unix_ns: 1_700_000_000_000_000_000 + second * 1_000_000_000 + seq,
            latency_ns: latency_ms * 1_000_000,
            status: if error == 0 { 200 } else { 500 },
            error,
            ..Record::default()
        }
    }

    #[test]
    fn keeps_the_slowest_per_second_and_target_and_the_first_per_error() {
        let sampler = TraceSampler::new(TraceSettings { sample: 1.0 }, 3);
        // Target 2 sets its own traceparent: none of its requests is kept.
        let mut keeper = ExemplarKeeper::new(sampler, vec![2]);
        let mut records = Vec::new();
        for second in 0..3 {
            for n in 0..100 {
                let seq = second * 1000 + n;
                // Latency rises with n, so n = 99 and 98 are each target's slowest.
                records.push(record(seq, second, n, u32::from(n % 25 == 7)));
            }
        }
        records.push(Record {
            target: 2,
            latency_ns: u64::MAX,
            ..record(5, 0, 0, 0)
        });
        // In batches, as the collector gets them.
        for batch in records.chunks(37) {
            keeper.add(batch);
        }
        let kept = keeper.finish();
        let slow: Vec<_> = kept
            .iter()
            .filter(|e| e.kind == ExemplarKind::Slow)
            .collect();
        assert_eq!(slow.len(), 3 * 2 * SLOWEST_PER_SECOND, "{slow:?}");
        let mut slow_n: Vec<u64> = slow.iter().map(|e| e.seq % 1000).collect();
        slow_n.sort_unstable();
        slow_n.dedup();
        assert_eq!(slow_n, [96, 97, 98, 99]);
        let failed: Vec<u64> = kept
            .iter()
            .filter(|e| e.kind == ExemplarKind::Failed)
            .map(|e| e.seq)
            .collect();
        assert_eq!(failed, [7, 32, 57]);
        // Each second's and target's first five successes (target 0: n = 0, 2, 4, 6, 8;
        // target 1: 1, 3, 5, 9, 11, as 7 failed) give their median.
        let mut typical: Vec<(u64, u64)> = (kept.iter())
            .filter(|e| e.kind == ExemplarKind::Typical)
            .map(|e| (e.seq / 1000, e.latency_ns / 1_000_000))
            .collect();
        typical.sort_unstable();
        assert_eq!(typical, [(0, 4), (0, 5), (1, 4), (1, 5), (2, 4), (2, 5)]);
        let ids = sampler.ids(0, 7).unwrap();
        let first = kept.iter().find(|e| e.seq == 7).unwrap();
        assert_eq!(first.trace_id, ids.trace_hex());
        assert_eq!(first.span_id, ids.span_hex());
    }

    #[test]
    fn keeps_only_traced_requests_and_stays_bounded() {
        let sampler = TraceSampler::new(TraceSettings { sample: 0.01 }, 9);
        let mut keeper = ExemplarKeeper::new(sampler, Vec::new());
        // 10 minutes at 1,000 requests a second, every 100th failing with its own error.
        for second in 0..600u64 {
            let batch: Vec<Record> = (0..1000)
                .map(|n| {
                    let seq = second * 1000 + n;
                    let error = if n % 100 == 0 {
                        (seq / 100 % 500) as u32 + 1
                    } else {
                        0
                    };
                    record(seq, second, n % 50, error)
                })
                .collect();
            keeper.add(&batch);
        }
        let kept = keeper.finish();
        assert!(kept.iter().all(|e| sampler.ids(e.attack, e.seq).is_some()));
        let failed = kept
            .iter()
            .filter(|e| e.kind == ExemplarKind::Failed)
            .count();
        assert!(failed <= MAX_ERRORS * FIRST_PER_ERROR, "{failed}");
        let typical = (kept.iter())
            .filter(|e| e.kind == ExemplarKind::Typical)
            .count();
        assert!(typical <= 600 * 2, "{typical}");
        assert!(kept.len() <= 600 * 2 * SLOWEST_PER_SECOND + failed + typical);
        assert!(kept.len() > 600, "{}", kept.len());
    }
}
