//! Reports over record files: vegeta's `text`, `json`, `hist[...]` and `hdrplot` layouts
//! character for character, loadlab's extra rows (send lag, asked vs achieved rate, the
//! generator's own CPU, warnings when the generator fell behind), per-interval rows
//! (`-every`), per-group reports (`-by`), and the `encode` conversions.
//!
//! - [`ReportConfig`] / [`ReportType`] / [`GroupBy`]: what to print; [`run_report`] reads
//!   inputs (record files, vegeta or loadlab JSON/CSV, merged) and prints it.
//! - [`CheckedTargets`] / [`CheckCounts`]: each flow check's passes and failures
//!   ([`CheckFigures`]), the `Checks` block and `checks` array of a report, and what a
//!   plan's `[slo] checks` judge.
//! - [`Measure`] is the one fold of a run (its records, a replay's originals, the
//!   resource samples) and [`Summary`] what it closes into, judged once: every renderer
//!   (the layouts here, `plot`'s page, a plan step's write-up) reads it.
//! - [`Metrics`] aggregates records in bounded memory; [`Metrics::close`] yields a
//!   [`Report`], vegeta's metrics plus [`Extras`]. Percentiles come from a
//!   [`Distribution`]: exact for small sets, 3 significant digits (HdrHistogram) beyond.
//! - [`RunFacts`] is what the inputs say about the run itself (asked rates, unsent
//!   requests, CPU, stop reason); [`Warning`] is what a reader must not miss.
//! - [`Resources`] / [`ResourceSummary`]: the system under test from the inputs'
//!   resource samples (CPU per process group, memory, connections, fds, database
//!   transactions), as extra rows and plain warnings.
//! - [`Intervals`] bins records by send time for `-every`, closing each interval as soon
//!   as a later record arrives, so it works live on a pipe.
//! - [`EncodeFormat`] / [`run_encode`]: records to JSON, CSV or our record file, in
//!   send-time order.
//! - [`Seconds`] cuts a run into one-second windows in bounded memory: the saturation
//!   point of a rising open-model load ([`analysis::find_saturation`], in every
//!   whole-run report) and the samples `compare` bootstraps.
//! - [`Evidence`] gathers what the diagnosis ("what ran out first") reads in the same
//!   pass (the seconds, each watched resource against its limit);
//!   [`ClosedEvidence::fill`] puts it in the [`RunFacts`] and [`diagnose_run`] judges
//!   them: `report` and `plot` both call these, so they say the same.
//! - [`run_compare`] / [`compare_runs`]: runs side by side, each row's difference
//!   against the first, its improvement factor and whether it is beyond the noise.
//! - [`Replays`] / [`ReplayFigures`]: a replay (`attack -replay`) against its original
//!   (the access log's status and latency, kept in the record file's logged blocks):
//!   a section of the whole-run report, and what `plot` draws beside the replay.
//! - [`tabwriter::align`] is Go's `text/tabwriter` as vegeta configures it.
//!
//! Errors are [`ReportError`]; each names the input or the flag at fault.

#![warn(missing_docs)]

mod answers;
mod checks;
mod compare;
mod compare_spans;
mod config;
mod connections;
mod convert;
mod distribution;
mod every;
mod evidence;
mod extra_rows;
mod extras;
mod grouping;
mod hdrplot;
mod held;
mod hist;
mod json;
mod json_write;
mod measure;
mod metrics;
mod pipeline;
mod pressure;
mod replay;
mod replay_render;
mod resources;
mod run_diagnosis;
mod sampler_health;
mod seconds;
mod span_breakdown;
mod stream_seconds;
pub mod tabwriter;
mod text;
mod traces;
mod warnings;
pub mod words;

pub use answers::target_address;
pub use checks::{CheckCounts, CheckFigures, CheckedTarget, CheckedTargets, checks_overall};
pub use compare::{
    CompareFormat, CompareInput, Comparison, GATED_ROWS, Regression, Row, RunFigures, Unit, Versus,
    compare_runs, parse_threshold, ran_out_block, read_input, read_record_window, run_compare,
    side_letter,
};
pub use compare_spans::{where_time_went as compare_spans_block, write_json as compare_spans_json};
pub use config::{ReportConfig, ReportType};
pub use connections::{
    ConnectionFigures, Connections, StreamedCalls, write_calls_text, write_connections_text,
};
pub use convert::{EncodeFormat, EncodeOutcome, run_encode};
pub use distribution::{Distribution, EXACT_LIMIT, GROUP_EXACT_LIMIT, Quantiles, nearest_rank};
pub use every::{IntervalRow, Intervals};
pub use evidence::{ClosedEvidence, Evidence, close_run, diagnose_run, judge_run};
pub use extra_rows::{AskedRate, Extras, GeneratorUse, LagStats, RunShape};
pub use extras::{RunFacts, Scope};
pub use grouping::{GroupBy, GroupKey, Grouper};
pub use hdrplot::HDRPLOT_QUANTILES;
pub use hist::{BucketCounts, Buckets};
pub use json_write::{push_string as push_json_string, push_strings as push_json_strings};
pub use measure::{AttackLatency, Bounds, Measure, Summary};
pub use metrics::{AttackActivity, ByteStats, LatencyStats, Metrics, Report};
pub use pipeline::{ReportOutcome, keep_window, render, run_report};
pub use replay::{
    GroupFigures, LatencyFigures, MAX_REPLAY_GROUPS, REPLAY_TOP_GROUPS, ReplayFigures, Replays,
    SideFigures, StatusMix,
};
pub use resources::{
    CPU_BUSY_PERCENT, FD_WARN_PERCENT, ResourceSummary, Resources, SUSTAINED_SAMPLES,
    SamplerFigures, Stat,
};
pub use seconds::{MAX_SECONDS, Seconds};
pub use span_breakdown::{SLOW_FETCHED, TYPICAL_FETCHED, TraceStore, TraceStoreHandle};
pub use stream_seconds::{MessageQuantiles, StreamSecond, StreamsSoFar};
pub use text::{write_resources_text, write_text};
pub use traces::{TraceLink, TracedRequest, TracedRequests, judge_traces};
pub use warnings::{LAG_P99_LIMIT_NS, RATE_RATIO_LIMIT, Warning, shard_warnings, torn_warnings};

/// Why a report or conversion could not be made. Messages name the input or flag.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// An input could not be opened or read (the message names the file).
    #[error(transparent)]
    Record(#[from] record::RecordError),
    #[error("unknown report type {0:?}: want text, json, hist[BUCKETS] or hdrplot")]
    /// `-type` names no report we print.
    UnknownType(String),
    #[error("bad buckets {input:?}: {reason}")]
    /// A histogram's buckets that do not parse.
    Buckets {
        /// The buckets as given.
        input: String,
        /// What is wrong with them.
        reason: String,
    },
    #[error("{flag}: {reason}")]
    /// A flag's value that cannot be used.
    Flag {
        /// The flag, e.g. `-every`.
        flag: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
    #[error(
        "{path}: not a record file (compare reads record files from `loadlab attack`; convert others with `loadlab encode -to record`)"
    )]
    /// `compare` was given an input that is not a record file.
    NotARecordFile {
        /// The input as given.
        path: String,
    },
    #[error("writing the output")]
    /// Writing the report failed (a closed pipe is not reported as one).
    Write(#[source] std::io::Error),
}
