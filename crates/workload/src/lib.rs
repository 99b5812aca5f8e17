//! What to send and when. Pure data and pure functions; the engine does the I/O.
//!
//! - [`Target`]: one request template (method, URL, headers, body), read from vegeta's
//!   `http` format ([`parse_http_targets`]) or `json` format ([`JsonTargetReader`]).
//! - [`Schedule`]: the open model's pacing. [`Schedule::intended_ns`] gives the intended
//!   send time of the k-th request as a pure function of k, so pacing never drifts and
//!   a late generator shows its lag instead of silently skipping requests.
//! - [`Plan`]: a schedule or a closed-model user count, with the run's bounds
//!   (duration, request cap).
//!
//! Errors are [`WorkloadError`], naming the file, line and field.

mod data;
mod plan;
mod scenario;
mod schedule;
mod schedule_parse;
mod stop_rule;
mod target;
mod targets_http;
mod targets_json;
mod template;

#[cfg(test)]
mod proptests;

pub use data::{DataOrder, DataTable};
pub use plan::{Pacing, Plan};
pub use scenario::{AttackFields, ScenarioFile, TextOrNumber};
pub use schedule::Schedule;
pub use stop_rule::{
    Fired, LatencyFigures, LatencyStat, RuleKind, RuleWatch, SecondStats, StopRule,
};
pub use target::{HTTP_METHODS, Header, Target};
pub use targets_http::{HttpTargetReader, parse_http_targets};
pub use targets_json::{JsonTargetReader, parse_json_target};
pub use template::{RenderContext, Template};

/// Why targets or a plan were rejected. Messages name the input.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("{source_name}:{line}: {reason}")]
    Target {
        source_name: String,
        line: u64,
        reason: String,
    },
    #[error("{source_name}: no targets")]
    NoTargets { source_name: String },
    #[error("{source_name}:{line}: body file {path:?}")]
    BodyFile {
        source_name: String,
        line: u64,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("reading {source_name}")]
    Read {
        source_name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Plan(String),
}
