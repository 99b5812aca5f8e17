//! Units in the spellings our users already type: Go durations (`1m30s`, `250ms`),
//! vegeta rates (`100/1s`, `5/m`) and byte sizes (`256kb`).
//!
//! - [`parse_duration`] and [`GoDuration`] read and print durations exactly like Go's
//!   `time.ParseDuration` and `Duration.String`, and [`round_for_report`] applies vegeta's
//!   report rounding, so our text reports line up with vegeta's character for character.
//! - [`Rate`] is vegeta's `-rate` value.
//! - [`parse_size`] reads byte sizes.
//!
//! Every parser returns a [`UnitsError`] that quotes the input it rejected.
//!
//! Also the one rule for keeping secrets out of what loadlab echoes ([`redact_url`],
//! [`redact_header_value`], [`redact_header_line`]; see the `redact` module): it lives
//! here because every crate that echoes user input already reads it with this crate.
//! For the same reason, [`error_chain`]: an error and its causes as one line of text,
//! [`LatencyStat`]: a latency statistic by its name (`p99`, `max`), and gRPC status
//! codes by theirs ([`grpc_code`]).

#![warn(missing_docs)]

mod duration;
mod error_chain;
mod grpc_code;
mod latency_stat;
mod rate;
pub mod redact;
mod size;

#[cfg(test)]
mod proptests;

pub use duration::{GoDuration, go_seconds, parse_duration, round_for_report};
pub use error_chain::error_chain;
pub use grpc_code::{GRPC_CODE_NAMES, grpc_code};
pub use latency_stat::{LatencyStat, nearest_rank};
pub use rate::Rate;
pub use redact::{REDACTED, redact_header_line, redact_header_value, redact_url};
pub use size::parse_size;

/// Why a duration, rate or size did not parse. Messages quote the offending input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitsError {
    /// A duration that Go's `time.ParseDuration` would refuse.
    #[error("invalid duration {input:?}: {reason}")]
    Duration {
        /// The text as given.
        input: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A rate that is not `N` or `N/duration`.
    #[error("invalid rate {input:?}: {reason}")]
    Rate {
        /// The text as given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A byte size that is not `N` with an optional unit.
    #[error("invalid size {input:?}: {reason}")]
    Size {
        /// The text as given.
        input: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}
