//! What to send and when. Pure data and pure functions; the engine does the I/O.
//!
//! - [`Target`]: one request template (method, URL, headers, body), read from vegeta's
//!   `http` format ([`parse_http_targets`]) or `json` format ([`JsonTargetReader`]), or
//!   from Yandex.Tank's `uri`, `uripost` and `phantom` ammo ([`TankAmmoReader`]); a
//!   gRPC call (`GRPC HOST:PORT pkg.Service/Method`) is a target whose message is
//!   encoded once through a [`ProtoSet`] (`.proto` files compiled in process).
//! - [`Schedule`]: the open model's pacing. [`Schedule::intended_ns`] gives the intended
//!   send time of the k-th request as a pure function of k, so pacing never drifts and
//!   a late generator shows its lag instead of silently skipping requests.
//!   [`Schedule::from_rates`] replays a log's requests per second as a schedule.
//! - [`Plan`]: a schedule or a closed-model user count, with the run's bounds
//!   (duration, request cap), and the [`Shard`] of it this process sends.
//! - [`AttackFields`] and [`RunFields`]: an attack's and a run's options as written
//!   (flags, a scenario table, a plan's `[load]`), checked into [`AttackSettings`] and
//!   [`RunSettings`] with the one set of [`defaults`]; [`Origin`] names each field
//!   in errors as the user wrote it.
//! - [`har_to_flow`]: a browser's HAR recording turned into a flow file
//!   (`loadlab encode -from har`).
//! - [`LogStream`]: access logs (one [`LineParser`] per format, gzip, several files
//!   merged) read as one time-ordered stream of [`LoggedRequest`]s for
//!   `attack -replay`, with [`ReplayFilter`] choosing what is sent and [`path_group`]
//!   grouping paths for reports.
//!
//! - [`Flow`]: a scenario's `[[scenario.step]]` tables ([`StepFields`]) checked into
//!   steps a virtual user runs with its own [`UserState`]: [`Check`]s judged on each
//!   [`Answer`], variables extracted ([`JsonPath`], regex, header, cookie), a
//!   [`CookieJar`] kept by the browser's rules.
//!
//! Errors are [`WorkloadError`], naming the file, line and field.

#![warn(missing_docs)]

mod access_log;
mod answer;
mod check;
mod cookies;
mod data;
pub mod defaults;
mod field_names;
mod flow;
mod grpc;
mod grpc_frame;
mod grpc_reflection;
mod grpc_template;
mod har;
mod json_path;
mod lines;
pub mod options;
mod plan;
mod rng;
mod run_settings;
mod scenario;
mod schedule;
mod schedule_parse;
mod settings;
mod shard;
mod step_fields;
mod stop_rule;
mod target;
mod targets_http;
mod targets_json;
mod targets_tank;
mod template;
mod trace;

#[cfg(test)]
mod proptests;

pub use access_log::{
    ChooseParser, HarFormat, LOG_FORMATS, LineParser, LogOptions, LogStats, LogStream,
    LoggedRequest, ReplayFields, ReplayFilter, line_parser, log_time_text, path_group, sniff,
};
pub use answer::Answer;
pub use check::Check;
pub use cookies::{CookieJar, CookieRefusal, CookieUrl};
pub use data::{DataOrder, DataTable};
pub use flow::{
    Action, ActionKind, Condition, DEFAULT_CHECK_BODY_LIMIT, EventStream, Extraction, Flow,
    FlowFailure, FlowOptions, FlowScratch, MAX_CHECKS, MAX_VARIABLES, Next, Pace, PaceTimes,
    SendTime, Step, Stream, StreamTarget, Think, UserState, Verdict, WebSocket,
};
pub use grpc::{ProtoSet, TypeSource, encode_message};
pub use grpc_frame::frame;
pub use grpc_reflection::{CallAnswer, Reflector};
pub use grpc_template::GrpcMessage;
pub use har::{HarFlow, HarOptions, MIN_THINK_MS, har_to_flow};
pub use json_path::JsonPath;
pub use lines::MAX_TARGET_BYTES;
pub use plan::{Pacing, Plan};
pub use run_settings::{RunFields, RunSettings, TlsOptions};
pub use scenario::{AttackFields, ScenarioFile, TextOrNumber};
pub use schedule::Schedule;
pub use settings::{AttackSettings, Origin, TargetFormat, parse_base_url};
pub use shard::Shard;
pub use step_fields::{ActionFields, CheckField, ExtractField, StepFields};
pub use stop_rule::{
    Fired, LatencyFigures, LatencyStat, RuleKind, RuleWatch, SecondStats, StopRule, StreamFigures,
};
pub use target::{GRPC_CONTENT_TYPE, GrpcStream, HTTP_METHODS, Header, Target};
pub use targets_http::{HttpTargetReader, parse_http_targets};
pub use targets_json::{JsonTargetReader, parse_json_target};
pub use targets_tank::{TankAmmo, TankAmmoReader};
pub use template::{Place, RenderContext, Template, breaks_header, path_encoded, query_encoded};
pub use trace::{
    TRACE_HEX_LEN, TRACEPARENT, TRACEPARENT_IDS_AT, TRACEPARENT_LINE, TRACESTATE, TraceIds,
    TraceSampler, TraceSettings, TraceState,
};

/// Why targets or a plan were rejected. Messages name the input.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A target (or scenario table) that cannot be read, with its line.
    #[error("{source_name}:{line}: {reason}")]
    Target {
        /// The input's name: a file, `stdin` or a flag.
        source_name: String,
        /// The 1-based line.
        line: u64,
        /// What is wrong.
        reason: String,
    },
    /// The input holds no target at all.
    #[error("{source_name}: no targets")]
    NoTargets {
        /// The input's name: a file, `stdin` or a flag.
        source_name: String,
    },
    /// An `@path` body line whose file cannot be read.
    #[error("{source_name}:{line}: body file {path:?}")]
    BodyFile {
        /// The input's name: a file, `stdin` or a flag.
        source_name: String,
        /// The 1-based line.
        line: u64,
        /// The body file as written.
        path: String,
        /// The I/O error underneath.
        #[source]
        source: std::io::Error,
    },
    /// The input itself failed (I/O, or text that is not UTF-8).
    #[error("reading {source_name}")]
    Read {
        /// The input's name: a file, `stdin` or a flag.
        source_name: String,
        /// The I/O error underneath.
        #[source]
        source: std::io::Error,
    },
    /// A plan that cannot run.
    #[error("{0}")]
    Plan(String),
    /// An access log that cannot be replayed as a whole (most lines bad, no request).
    #[error("{source_name}: {reason}")]
    Log {
        /// The log's name: a file or `stdin`.
        source_name: String,
        /// What is wrong.
        reason: String,
    },
    /// A `.proto` file that does not compile (`file` names its line and column when
    /// the compiler says them).
    #[error("{file}: {reason}")]
    Proto {
        /// The file, as the compiler names it, with `:LINE:COLUMN` when known.
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// An attack field (a flag or a scenario key) with a bad value; `label` names it.
    #[error("{label}: {reason}")]
    Field {
        /// The field as the user wrote it: `-rate`, or `FILE:LINE: scenario "NAME": rate`.
        label: String,
        /// What is wrong with its value.
        reason: String,
    },
}
