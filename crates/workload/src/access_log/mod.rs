//! Access logs as traffic to replay (`attack -replay`): readers for the logs people
//! have (nginx, Apache, a user's `log_format`, AWS ALB/ELB and CloudFront, JSON lines,
//! HAR, vegeta's results), each yielding [`LoggedRequest`]s in time order.
//!
//! [`LineParser`] is one format's line reader. [`LogStream`] reads logs (files or
//! stdin, gzipped or not, several merged) as one time-ordered, streaming sequence of
//! requests: bad lines counted ([`LogStats`]), lines written out of order put back in
//! order within a window, requests sharing a coarse timestamp spread over it
//! ([`LogOptions`]); a HAR recording is read whole ([`HarFormat`]).
//! [`ReplayFilter`] chooses the requests a replay sends (time window, path, method,
//! status, host); [`path_group`] names a request's group in reports.
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
    /// How far back in time it was logged after a later request and put back in
    /// order, nanoseconds (0: it came in order).
    pub put_back_ns: u64,
}

mod fields;
mod filter;
mod formats;
mod har_entries;
mod line;
mod path_group;
mod stream;

pub use fields::ReplayFields;
pub use filter::ReplayFilter;
pub use formats::{LOG_FORMATS, line_parser, sniff};
pub use har_entries::HarFormat;
pub use line::LineParser;
pub use path_group::path_group;
pub use stream::{ChooseParser, LogOptions, LogStats, LogStream, log_time_text};
