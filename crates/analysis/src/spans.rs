//! Where the slow requests' time went: the traces of the slowest traced requests
//! against those of typical ones, read back from a trace store (docs/TRACES.md). Per
//! (service, operation), each span's *self* time (its duration less the time its
//! children cover) summed per trace; the operation whose median self time grew most
//! from the typical traces to the slow ones is named, with figures. The part of a
//! request's latency no span covers (a queue before the server's first span, the
//! network) is an operation of its own, [`OUTSIDE`], so time the traces cannot see is
//! said rather than spread over the spans. Traces the store never had are counted,
//! not guessed.

use std::collections::BTreeMap;

/// One span of a trace, as the store gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Its id, unique within its trace.
    pub span_id: String,
    /// Its parent's id; `None` (or a span not in the trace, like the load
    /// generator's) makes it a root.
    pub parent_id: Option<String>,
    /// The service that reported it.
    pub service: String,
    /// Its operation (`GET /orders/<int:order_id>`, `UPDATE`).
    pub operation: String,
    /// Its start, microseconds on the store's clock.
    pub start_us: u64,
    /// Its duration, microseconds.
    pub duration_us: u64,
}

/// The traces asked for on one side: each one's spans, `None` when the store had no
/// such trace.
pub type Fetched = Vec<Option<Vec<Span>>>;

/// The operation (with an empty service) of the time no span covers.
pub const OUTSIDE: &str = "outside the spans";

/// One request whose trace was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedCall {
    /// Its latency as the load generator measured it, microseconds.
    pub latency_us: u64,
    /// Its trace's spans; `None` when the store had no such trace.
    pub spans: Option<Vec<Span>>,
}

/// How the slow requests' time split, against typical requests'.
#[derive(Debug, Clone, PartialEq)]
pub enum SpanJudgement {
    /// Both sides had traces to compare.
    Judged(SpanBreakdown),
    /// Why nothing is said (the store was down, no trace arrived, ...), with the
    /// counts when the store answered.
    NotJudged {
        /// Why.
        why: SpansUnjudged,
        /// The counts, when the store answered.
        counts: Option<Arrived>,
    },
}

impl SpanJudgement {
    /// The traces asked for and found, when the store answered.
    pub fn arrived(&self) -> Option<&Arrived> {
        match self {
            SpanJudgement::Judged(breakdown) => Some(&breakdown.arrived),
            SpanJudgement::NotJudged { counts, .. } => counts.as_ref(),
        }
    }
}

/// Why the slow requests' traces were not compared; `report::words::spans` words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpansUnjudged {
    /// The store could not be read (down, slow, not Jaeger's JSON).
    StoreUnreadable {
        /// The store, as the user named it.
        store: String,
        /// The client's reason.
        reason: String,
    },
    /// The store answered another number of traces than asked.
    StoreMiscounted {
        /// The store, as the user named it.
        store: String,
        /// Traces it answered.
        answered: usize,
        /// Traces asked for.
        asked: usize,
    },
    /// No traced request took [`SLOW_FACTOR`] times the typical ones' median.
    NoSlowRequest,
    /// None of the slow requests' traces is in the store.
    SlowNotFound {
        /// Slow requests' traces asked for.
        asked: usize,
    },
    /// No typical traced request was kept (a record before format version 6).
    NoTypicalKept,
    /// None of the typical requests' traces is in the store.
    TypicalNotFound {
        /// Typical requests' traces asked for.
        asked: usize,
    },
}

impl SpansUnjudged {
    /// Its name in JSON (`store_unreadable`, `no_slow_request`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            SpansUnjudged::StoreUnreadable { .. } => "store_unreadable",
            SpansUnjudged::StoreMiscounted { .. } => "store_miscounted",
            SpansUnjudged::NoSlowRequest => "no_slow_request",
            SpansUnjudged::SlowNotFound { .. } => "slow_not_found",
            SpansUnjudged::NoTypicalKept => "no_typical_kept",
            SpansUnjudged::TypicalNotFound { .. } => "typical_not_found",
        }
    }
}

/// How many traces were asked for and found, per side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Arrived {
    /// Slow requests' traces asked for.
    pub slow_asked: usize,
    /// Of those, found in the store.
    pub slow_found: usize,
    /// Typical requests' traces asked for.
    pub typical_asked: usize,
    /// Of those, found in the store.
    pub typical_found: usize,
}

/// The breakdown itself.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanBreakdown {
    /// The traces asked for and found.
    pub arrived: Arrived,
    /// Per (service, operation), the one whose median self time grew most first.
    pub operations: Vec<OperationTime>,
}

/// One (service, operation)'s self time on both sides.
#[derive(Debug, Clone, PartialEq)]
pub struct OperationTime {
    /// The service that reported it.
    pub service: String,
    /// The operation.
    pub operation: String,
    /// Its share of the slow traces' whole time (0..=1).
    pub slow_share: f64,
    /// Median of its self time per slow trace (0 where it is absent), microseconds.
    pub slow_median_us: u64,
    /// Median of its self time per typical trace, microseconds.
    pub typical_median_us: u64,
}

impl OperationTime {
    /// How much its median self time grew, microseconds (negative: shrank).
    pub fn growth_us(&self) -> i64 {
        i64::try_from(self.slow_median_us).unwrap_or(i64::MAX)
            - i64::try_from(self.typical_median_us).unwrap_or(i64::MAX)
    }
}

/// A slow traced request is compared only when its latency is at least this many times
/// the typical ones' median: the collector keeps the slowest requests of every second,
/// and those of a calm second are typical themselves, so they would blur the comparison.
pub const SLOW_FACTOR: u64 = 3;

/// Judges the slow requests' traces against the typical ones' (each as asked, in any
/// order).
pub fn judge_spans(slow: &[TracedCall], typical: &[TracedCall]) -> SpanJudgement {
    let found = |side: &[TracedCall]| side.iter().filter(|c| c.spans.is_some()).count();
    let arrived = Arrived {
        slow_asked: slow.len(),
        slow_found: found(slow),
        typical_asked: typical.len(),
        typical_found: found(typical),
    };
    let why = if arrived.slow_asked == 0 {
        Some(SpansUnjudged::NoSlowRequest)
    } else if arrived.slow_found == 0 {
        Some(SpansUnjudged::SlowNotFound {
            asked: arrived.slow_asked,
        })
    } else if arrived.typical_asked == 0 {
        Some(SpansUnjudged::NoTypicalKept)
    } else if arrived.typical_found == 0 {
        Some(SpansUnjudged::TypicalNotFound {
            asked: arrived.typical_asked,
        })
    } else {
        None
    };
    if let Some(why) = why {
        return SpanJudgement::NotJudged {
            why,
            counts: Some(arrived),
        };
    }
    let slow_times: Vec<_> = slow.iter().filter_map(self_times).collect();
    let typical_times: Vec<_> = typical.iter().filter_map(self_times).collect();
    let slow_total: u64 = slow_times.iter().flat_map(|t| t.values()).sum();
    let mut keys: Vec<&(String, String)> = slow_times
        .iter()
        .chain(&typical_times)
        .flat_map(|t| t.keys())
        .collect();
    keys.sort();
    keys.dedup();
    let mut operations: Vec<OperationTime> = keys
        .into_iter()
        .map(|key| {
            let in_slow: u64 = slow_times.iter().filter_map(|t| t.get(key)).sum();
            OperationTime {
                service: key.0.clone(),
                operation: key.1.clone(),
                slow_share: in_slow as f64 / slow_total.max(1) as f64,
                slow_median_us: median_of(&slow_times, key),
                typical_median_us: median_of(&typical_times, key),
            }
        })
        .collect();
    operations.sort_by(|a, b| {
        (b.growth_us().cmp(&a.growth_us())).then_with(|| b.slow_share.total_cmp(&a.slow_share))
    });
    SpanJudgement::Judged(SpanBreakdown {
        arrived,
        operations,
    })
}

/// How one operation's median self time in the slow traces moved from one run (A) to
/// another (B): `compare`'s "which span grew".
#[derive(Debug, Clone, PartialEq)]
pub struct SpanShift {
    /// The service that reported it.
    pub service: String,
    /// The operation.
    pub operation: String,
    /// Its slow median in A, microseconds (0 where A's traces lack it).
    pub from_us: u64,
    /// Its slow median in B, microseconds (0 where B's traces lack it).
    pub to_us: u64,
}

impl SpanShift {
    /// Whether it grew from A to B.
    pub fn grew(&self) -> bool {
        self.to_us > self.from_us
    }
}

/// The operation whose slow median moved most from `a` to `b` (grew or shrank), read
/// from both breakdowns, not judged again; `None` when none moved.
pub fn span_shift(a: &SpanBreakdown, b: &SpanBreakdown) -> Option<SpanShift> {
    let median = |side: &SpanBreakdown, time: &OperationTime| {
        (side.operations.iter())
            .find(|o| o.service == time.service && o.operation == time.operation)
            .map_or(0, |o| o.slow_median_us)
    };
    (a.operations.iter().chain(&b.operations))
        .map(|time| SpanShift {
            service: time.service.clone(),
            operation: time.operation.clone(),
            from_us: median(a, time),
            to_us: median(b, time),
        })
        .filter(|shift| shift.from_us != shift.to_us)
        .max_by_key(|shift| shift.from_us.abs_diff(shift.to_us))
}

/// Self time per (service, operation) of one found trace, microseconds, with the
/// latency its root spans do not cover as [`OUTSIDE`].
fn self_times(call: &TracedCall) -> Option<BTreeMap<(String, String), u64>> {
    let spans = call.spans.as_deref()?;
    let mut times = BTreeMap::new();
    let roots: Vec<(u64, u64)> = spans
        .iter()
        .filter(|s| {
            !spans
                .iter()
                .any(|p| Some(&p.span_id) == s.parent_id.as_ref())
        })
        .map(|s| (s.start_us, s.start_us.saturating_add(s.duration_us)))
        .collect();
    let traced_us = covered_us(0, u64::MAX, roots);
    times.insert(
        (String::new(), OUTSIDE.to_owned()),
        call.latency_us.saturating_sub(traced_us),
    );
    for span in spans {
        let children: Vec<(u64, u64)> = spans
            .iter()
            .filter(|c| c.parent_id.as_deref() == Some(span.span_id.as_str()))
            .map(|c| (c.start_us, c.start_us.saturating_add(c.duration_us)))
            .collect();
        let own =
            span.duration_us
                .saturating_sub(covered_us(span.start_us, span.duration_us, children));
        *times
            .entry((span.service.clone(), span.operation.clone()))
            .or_insert(0) += own;
    }
    Some(times)
}

/// How much of `[start, start + duration)` the intervals cover (overlaps counted once:
/// concurrent children do not make negative self time).
fn covered_us(start_us: u64, duration_us: u64, mut intervals: Vec<(u64, u64)>) -> u64 {
    let end_us = start_us.saturating_add(duration_us);
    intervals.sort_unstable();
    let (mut covered, mut reached) = (0, start_us);
    for (from, to) in intervals {
        let (from, to) = (from.max(reached), to.min(end_us));
        if to > from {
            covered += to - from;
            reached = to;
        }
    }
    covered
}

/// The median over traces of one key's self time, 0 where a trace lacks it.
fn median_of(times: &[BTreeMap<(String, String), u64>], key: &(String, String)) -> u64 {
    let mut values: Vec<u64> = times
        .iter()
        .map(|t| t.get(key).copied().unwrap_or(0))
        .collect();
    values.sort_unstable();
    values
        .get(values.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request of the orders app: the server span, a `SELECT` and an `UPDATE` under
    /// it, each child's duration in ms; the server's own work is 3 ms.
    fn request(select_ms: u64, update_ms: u64) -> Vec<Span> {
        let span = |id: &str, parent: Option<&str>, op: &str, start_ms: u64, ms: u64| Span {
            span_id: id.to_owned(),
            parent_id: parent.map(str::to_owned),
            service: "orders".to_owned(),
            operation: op.to_owned(),
            start_us: start_ms * 1000,
            duration_us: ms * 1000,
        };
        let total = select_ms + update_ms + 3;
        vec![
            span("a", Some("loadlab"), "GET /orders", 0, total),
            span("b", Some("a"), "SELECT", 1, select_ms),
            span("c", Some("a"), "UPDATE", 1 + select_ms, update_ms),
        ]
    }

    /// Requests whose latency is their spans' (the server's 3 ms with its children's)
    /// plus `outside_ms`.
    fn found(requests: &[(u64, u64)], outside_ms: u64) -> Vec<TracedCall> {
        (requests.iter())
            .map(|&(s, u)| TracedCall {
                latency_us: (s + u + 3 + outside_ms) * 1000,
                spans: Some(request(s, u)),
            })
            .collect()
    }

    fn missing() -> TracedCall {
        TracedCall {
            latency_us: 1000,
            spans: None,
        }
    }

    #[test]
    fn names_the_operation_that_grew_most() {
        // (slow, typical, the operation named first, its slow median ms, typical median ms)
        let rows = [
            (
                found(&[(1, 600), (2, 610), (1, 620)], 1),
                found(&[(1, 1), (1, 1), (2, 1)], 1),
                "UPDATE",
                610,
                1,
            ),
            (
                found(&[(400, 1), (420, 2)], 1),
                found(&[(1, 1)], 1),
                "SELECT",
                400,
                1,
            ),
            // A queue before the server's first span: the spans did not grow.
            (
                found(&[(1, 1), (1, 2)], 4000),
                found(&[(1, 1)], 1),
                OUTSIDE,
                4000,
                1,
            ),
        ];
        for (slow, typical, want, slow_ms, typical_ms) in rows {
            let SpanJudgement::Judged(breakdown) = judge_spans(&slow, &typical) else {
                panic!("not judged");
            };
            let first = &breakdown.operations[0];
            assert_eq!(first.operation, want, "{breakdown:?}");
            assert_eq!(first.slow_median_us, slow_ms * 1000);
            assert_eq!(first.typical_median_us, typical_ms * 1000);
            assert!(first.slow_share > 0.6, "{first:?}");
            // The server span's own time is 3 ms on both sides: it did not grow.
            let server = (breakdown.operations.iter())
                .find(|o| o.operation == "GET /orders")
                .unwrap();
            assert_eq!(server.growth_us(), 0, "{server:?}");
        }
    }

    #[test]
    fn missing_traces_are_counted_and_an_empty_side_is_not_judged() {
        let mut slow = found(&[(1, 600)], 1);
        slow.push(missing());
        let SpanJudgement::Judged(breakdown) = judge_spans(&slow, &found(&[(1, 1)], 1)) else {
            panic!("not judged");
        };
        assert_eq!(
            breakdown.arrived,
            Arrived {
                slow_asked: 2,
                slow_found: 1,
                typical_asked: 1,
                typical_found: 1
            }
        );
        // (slow, typical, why not judged)
        let rows = [
            (vec![], found(&[(1, 1)], 1), SpansUnjudged::NoSlowRequest),
            (
                vec![missing(), missing()],
                found(&[(1, 1)], 1),
                SpansUnjudged::SlowNotFound { asked: 2 },
            ),
            (
                found(&[(1, 600)], 1),
                vec![missing()],
                SpansUnjudged::TypicalNotFound { asked: 1 },
            ),
            (found(&[(1, 600)], 1), vec![], SpansUnjudged::NoTypicalKept),
        ];
        for (slow, typical, want) in rows {
            match judge_spans(&slow, &typical) {
                SpanJudgement::NotJudged { why, counts } => {
                    assert_eq!(why, want);
                    assert_eq!(counts.unwrap().slow_asked, slow.len());
                }
                judged => panic!("{want:?}: judged {judged:?}"),
            }
        }
    }

    #[test]
    fn the_span_that_moved_most_between_two_runs_is_named() {
        let breakdown =
            |slow: &[(u64, u64)]| match judge_spans(&found(slow, 1), &found(&[(1, 1)], 1)) {
                SpanJudgement::Judged(breakdown) => breakdown,
                judged => panic!("{judged:?}"),
            };
        // (A's slow (select, update) ms, B's, the operation named, A's and B's median ms)
        let rows = [
            (&[(1, 20)], &[(1, 600)], Some(("UPDATE", 20, 600))),
            (&[(1, 600)], &[(300, 20)], Some(("UPDATE", 600, 20))),
            (&[(2, 2)], &[(2, 2)], None),
        ];
        for (a, b, want) in rows {
            let shift = span_shift(&breakdown(a), &breakdown(b));
            let got = shift
                .as_ref()
                .map(|s| (s.operation.as_str(), s.from_us / 1000, s.to_us / 1000));
            assert_eq!(got, want, "{a:?} -> {b:?}");
            if let Some(shift) = shift {
                assert_eq!(shift.grew(), shift.to_us > shift.from_us);
            }
        }
    }

    #[test]
    fn self_time_counts_overlapping_children_once() {
        // (children as (start, end), the parent's self time) for a parent over [0, 100).
        let rows: [(&[(u64, u64)], u64); 5] = [
            (&[], 100),
            (&[(10, 20), (30, 40)], 80),
            (&[(10, 50), (20, 60)], 50),
            (&[(90, 150)], 90),
            (&[(0, 100), (0, 100)], 0),
        ];
        for (children, want) in rows {
            let covered = covered_us(0, 100, children.to_vec());
            assert_eq!(100 - covered, want, "{children:?}");
        }
    }
}
