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

mod duration;
mod rate;
pub mod redact;
mod size;

pub use duration::{GoDuration, parse_duration, round_for_report};
pub use rate::Rate;
pub use redact::{REDACTED, redact_header_line, redact_header_value, redact_url};
pub use size::parse_size;

/// Why a duration, rate or size did not parse. Messages quote the offending input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitsError {
    #[error("invalid duration {input:?}: {reason}")]
    Duration { input: String, reason: &'static str },
    #[error("invalid rate {input:?}: {reason}")]
    Rate { input: String, reason: String },
    #[error("invalid size {input:?}: {reason}")]
    Size { input: String, reason: &'static str },
}
