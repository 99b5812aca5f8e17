//! The live view of a run: what `loadlab attack` shows on stderr while it runs.
//!
//! - [`LiveStats`] is an [`engine::RunObserver`]: on the engine's collector thread
//!   (never a worker) it folds each batch of records, each generator stats sample,
//!   new error entries and the stop rules' state into a [`Snapshot`], and publishes it
//!   behind a mutex taken once per call, not per request. Latencies go into
//!   the report's `Distribution` (exact, then 3 significant digits), so memory stays
//!   flat over hours and the run's figures at the end are the ones `report` prints.
//! - [`Snapshot`] is plain data: elapsed and planned time, asked vs sent vs completed
//!   rates over the last second and the run, success, latency p50/p99/max, status
//!   codes and errors by kind, send lag, in flight, connections, the schedule's
//!   target, each stop rule's streak, the monitor's headline samples
//!   (`resources.rs`) and for flows the checks' pass rate so far and the worst
//!   failing check (`checks.rs`, [`LiveStats::targets`] says which targets are steps). It renders itself as one plain progress line
//!   ([`Snapshot::progress_line`]) or as the lines of the terminal view
//!   ([`Snapshot::view_lines`]).
//! - [`Server`] is the small loopback HTTP server behind `-dashboard` and
//!   `-prometheus-addr`: GETs answered by a [`Handler`] from what was published.
//! - [`Keys`] reads the view's keys from the terminal: `p` pauses the view, `q` stops
//!   the run cleanly (as Ctrl-C does).
//! - [`PrometheusStats`] is another observer: vegeta's Prometheus series and ours
//!   (`loadlab_*`) in bounded memory, read through a [`PrometheusHandle`] by the
//!   `-prometheus-addr` scrape handler (the text format 0.0.4, `exposition.rs`, or
//!   OpenMetrics with trace exemplars when the scraper asks, `openmetrics.rs`) and
//!   by [`Push`], the thread behind `-prometheus-remote-write` (protobuf and snappy,
//!   `remote_write.rs`) and `-otlp-endpoint` (OTLP/HTTP protobuf to a Collector,
//!   `otlp.rs`), which pushes off the collector under a deadline (`push.rs`).
//! - [`ClientSpans`] (`-trace-spans`): a client span per traced request, made on the
//!   collector thread and pushed by the same thread kind to the OTLP endpoint.
//! - [`steer`]: one run over many shards steered as one: the shard's feed of settled
//!   seconds and the coordinator that merges them, judges the stop rules on the merged
//!   figures and stops every shard.
//! - [`View`] is the display thread: a redrawn indicatif view when stderr is a
//!   terminal, else a plain line every few seconds, so CI logs stay readable.

#![warn(missing_docs)]

mod checks;
mod exemplar;
mod exposition;
mod keys;
mod latest;
mod openmetrics;
mod otlp;
mod prometheus;
mod push;
mod remote_write;
mod resources;
mod serve;
mod settle;
mod sink;
mod snapshot;
mod spans;
mod started;
mod stats;
pub mod steer;
mod view;

pub use exemplar::BucketExemplar;
pub use exposition::CONTENT_TYPE as PROMETHEUS_CONTENT_TYPE;
pub use keys::{KeyAction, Keys, restore_terminal};
pub use latest::Latest;
pub use openmetrics::{OPENMETRICS_CONTENT_TYPE, wants_openmetrics};
pub use prometheus::{MAX_URL_SERIES, Metrics, PrometheusHandle, PrometheusStats};
pub use push::{Push, PushOptions, PushProtocol, PushSummary, Warn, otlp_headers};
pub use serve::{Body, Handler, Request, Response, Server, listen_address};
pub use snapshot::{ChecksState, Latency, RuleState, Snapshot, Window, WorstCheck, short_duration};
pub use spans::{ClientSpans, MAX_QUEUED_SPANS, SpanQueue};
pub use started::LoadUnit;
pub use stats::{LiveHandle, LiveStats};
pub use view::{View, ViewMode};

/// Why the live view could not start.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The display thread could not be started.
    #[error("live view thread")]
    Thread(#[from] std::io::Error),
    /// A server option's address could not be bound (taken, not local, malformed).
    #[error("{flag} {address}: cannot listen")]
    Bind {
        /// The option, as the user wrote it (`-dashboard`, `-prometheus-addr`).
        flag: String,
        /// The address given.
        address: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `-prometheus-remote-write` or `-otlp-endpoint` was not an http(s) URL.
    #[error("{flag} {url}: {reason}")]
    PushUrl {
        /// The flag that gave it.
        flag: &'static str,
        /// The URL given (passwords redacted).
        url: String,
        /// What is wrong with it.
        reason: String,
    },
}
