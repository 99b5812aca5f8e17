//! Access logs as traffic to replay (`attack -replay`): readers for the logs people
//! have (nginx, Apache, a user's `log_format`, AWS ALB/ELB and CloudFront, JSON lines,
//! HAR, vegeta's results), each yielding [`LoggedRequest`]s in time order.
//!
//! [`LineParser`] is one format's line reader.
//!
//! What a line says about the request is kept apart from what will be sent: status,
//! bytes and latency are for comparing the replay with the original, never sent.

/// One request as a log recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRequest {
    /// When the request arrived at the server, unix nanoseconds (a log written at
    /// completion has its logged latency taken off where it has one).
    pub time_unix_ns: u64,
    /// The request method, upper case.
    pub method: String,
    /// The path and query as logged (origin form, starting with `/`), or an absolute
    /// URL where the log has one (ALB, HAR, vegeta).
    pub target: String,
    /// The `Host` the request named, when the log has it.
    pub host: Option<String>,
    /// The status the server answered, when logged.
    pub status: Option<u16>,
    /// Response bytes sent, when logged.
    pub bytes: Option<u64>,
    /// The client's `User-Agent`, when logged.
    pub user_agent: Option<String>,
    /// How long the server took, nanoseconds, when logged.
    pub latency_ns: Option<u64>,
    /// The line (1-based) of the request in its file, for error messages.
    pub line: u64,
}

mod formats;
mod line;

pub use formats::{LOG_FORMATS, line_parser, sniff};
pub use line::LineParser;
