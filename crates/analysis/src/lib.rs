//! Pure functions that turn measurements into answers to capacity questions. No I/O:
//! callers (a plan runner, `report`, `compare`) read records and hand in plain numbers.
//!
//! - [`saturation`]: where a rising open-model load stops being served: the offered rate
//!   at which successful throughput stops following it, where latency turns, where errors
//!   start ([`find_saturation`] over per-second [`Window`]s, giving a [`Finding`]).
//! - [`slo`]: the verdict of one step ([`judge`] a [`StepSummary`] against an [`Slo`]),
//!   which always includes the generator's own health, so that a step the generator
//!   could not deliver is [`Verdict::Inconclusive`], never a server failure.
//!   Its [`slo::held`] part judges a step's held connections and messages ([`StreamWindow`]).
//! - [`search`]: the capacity search as a state machine ([`Search`]): exponential
//!   growth, then bisection to a stated precision, then a confirmation probe.
//! - [`diagnosis`]: what ran out first: the resources watched beside a run, each
//!   against its own limit, lined up with the run's knee and the generator's health
//!   ([`diagnose`] gives a [`Diagnosis`]).
//! - [`compare`]: whether a difference between two samples is beyond the noise
//!   ([`compare_samples`], a seeded block bootstrap of the difference of means).
//!
//! - [`spans`]: where the slow requests' time went, by service and operation, from
//!   their traces against typical requests' ([`judge_spans`] gives a [`SpanJudgement`]).
//!
//! Errors are [`AnalysisError`].

#![warn(missing_docs)]

pub mod compare;
pub mod diagnosis;
pub mod saturation;
pub mod search;
pub mod slo;
pub mod spans;

pub use compare::{CompareConfig, Difference, Direction, compare_samples};
pub use diagnosis::{
    Behind, Diagnosis, GeneratorState, Hole, Knee, Note, Trouble, Unjudged, Watched, diagnose,
};
pub use saturation::{
    Finding, NoRamp, SaturationConfig, Seen, Turn, TurnKind, Window, find_saturation,
};
pub use search::{Next, Outcome, Search, SearchConfig};
pub use slo::held::{ConnectionsAsked, MessageWay, StreamBounds, StreamWindow};
pub use slo::{
    CheckCount, GeneratorHealth, Lag, LagWeight, Miss, Pace, Percentile, SendGap, Slo, StepSummary,
    Verdict, judge, parse_percentile,
};
pub use spans::{
    Arrived, Fetched, OUTSIDE, OperationTime, SLOW_FACTOR, Span, SpanBreakdown, SpanJudgement,
    SpanShift, SpansUnjudged, TracedCall, judge_spans, span_shift,
};

/// What can go wrong turning user input into analysis settings.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AnalysisError {
    /// A percentile name that is not one of p50, p90, p95, p99, p99.9, max, mean.
    #[error("unknown percentile {0:?} (want one of p50, p90, p95, p99, p99.9, max, mean)")]
    UnknownPercentile(String),
    /// A search setting outside its range.
    #[error("search: {field} must be {want}, got {got}")]
    BadSearch {
        /// The setting's name, as a plan spells it.
        field: &'static str,
        /// What it must be.
        want: &'static str,
        /// The value given.
        got: f64,
    },
    /// A comparison needs samples on both sides.
    #[error("compare: {0} has no samples")]
    NoSamples(&'static str),
}
