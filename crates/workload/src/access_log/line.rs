//! [`LineParser`]: how one line of a log becomes a [`LoggedRequest`], one per format.

use super::LoggedRequest;

/// One log format's line reader.
pub trait LineParser: Send {
    /// The request a line holds; `Ok(None)` for a line the format skips (a comment, a
    /// header row, a blank line); `Err(reason)` for a line that does not match. The
    /// returned request's `line` is left 0: the reader sets it.
    fn parse_line(&self, line: &str) -> Result<Option<LoggedRequest>, String>;
    /// How precise the format's timestamps are, nanoseconds (1 s for nginx's
    /// `$time_local`): requests that share a timestamp are spread over it.
    fn resolution_ns(&self) -> u64;
    /// The format's name as `-log-format` spells it.
    fn name(&self) -> String;
}
