//! [`Exemplar`]: a traced request worth looking at (`attack -trace`), kept in the run's
//! end block with its trace ids, so a report can point from a slow or failed request
//! to the server's trace of it. Bounded by the generator: the slowest few per second
//! and target, a typical one per second and target (to compare the slow ones with),
//! and each error's first few (docs/TRACES.md).

use serde::{Deserialize, Serialize};

/// Why a request was kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExemplarKind {
    /// Among the slowest successful requests of its second and target.
    Slow,
    /// Among the first requests that failed with its error.
    Failed,
    /// The median of the first few successful requests of its second and target: what
    /// the slow ones are compared with (format version 6 on).
    Typical,
}

/// One traced request and its ids. It joins its record by `(attack, seq)`; the rest
/// repeats the record's figures, so readers need no join.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exemplar {
    /// Why it was kept.
    pub kind: ExemplarKind,
    /// Index into the header's attacks.
    pub attack: u16,
    /// The record's target.
    pub target: u32,
    /// The record's `seq`.
    pub seq: u64,
    /// The W3C trace id sent, 32 lowercase hex digits.
    pub trace_id: String,
    /// The span id sent (the server's parent), 16 lowercase hex digits.
    pub span_id: String,
    /// The record's intended send time, unix nanoseconds.
    pub intended_unix_ns: u64,
    /// The record's latency, nanoseconds.
    pub latency_ns: u64,
    /// The record's status (0: none).
    pub status: u16,
    /// The record's error id (0: none).
    #[serde(default)]
    pub error: u32,
}

/// How a run traced its requests, in its header (`RunHeader::trace`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TraceInfo {
    /// The share of requests that carried a `traceparent` (`-trace-sample`).
    pub sample: f64,
}
