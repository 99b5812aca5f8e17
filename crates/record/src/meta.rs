//! What a run says about itself besides its records: header, dictionaries, generator
//! statistics and the end-of-run summary. Stored as JSON inside checksummed blocks.

use crate::record::Record;
use serde::{Deserialize, Serialize};

/// Written once, first: who wrote the file and what the run is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RunHeader {
    /// The writing tool and version, e.g. `loadlab 0.1.0`.
    pub tool: String,
    /// Wall-clock unix time of the run's time zero.
    pub start_unix_ns: u64,
    /// The attacks run at once, in id order.
    pub attacks: Vec<AttackInfo>,
    /// Targets known before the first request; later ones come in dictionary blocks.
    #[serde(default)]
    pub targets: Vec<TargetInfo>,
    /// The seed of the run's templates (`attack -seed`): the same seed sends the same
    /// requests. Absent in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Set when the run is one shard of several (`attack -shard`) or started at a
    /// wall-clock instant (`-start-at`); absent otherwise, so an unsharded file has the
    /// bytes it always had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// How late the generator's workers could wake to send and read, nanoseconds
    /// (`attack -precision`; 0: exactly on time). Absent in files written before it
    /// was recorded, and in imports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision_ns: Option<u64>,
    /// How the run sent trace context (`attack -trace`); absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::TraceInfo>,
}

/// Which part of a sharded run a file holds, and how well its clock lined up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ShardInfo {
    /// This shard's 0-based index, below `count`.
    pub index: u64,
    /// How many shards share the run (1 for a single process started with `-start-at`).
    pub count: u64,
    /// The asked time zero (`-start-at`), unix nanoseconds; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_unix_ns: Option<u64>,
    /// When time zero actually came minus when it was asked, nanoseconds (how late the
    /// process woke; 0 without `-start-at`).
    #[serde(default)]
    pub start_skew_ns: i64,
    /// A hash (16 hex digits) of everything the shards of one run must share: attacks,
    /// targets, schedules, bounds, timeouts, seed and the shard count.
    pub plan_fingerprint: String,
    /// The kernel's estimate of this machine's clock error, nanoseconds; absent when
    /// unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_error_ns: Option<u64>,
}

/// One attack (or scenario) in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct AttackInfo {
    /// The attack's name (`-name`, or the scenario's); merged inputs match attacks by it.
    pub name: String,
    /// Open (a rate) or closed (users) model.
    pub model: LoadModel,
    /// The schedule as the user would write it, e.g. `const(500, 10s)` or `users(100)`.
    #[serde(default)]
    pub schedule: String,
    /// The asked rate for a constant open-model schedule, in requests per second (a
    /// flow's: flows started per second).
    #[serde(default)]
    pub rate_per_sec: Option<f64>,
    /// The concurrency cap (closed model) or in-flight cap (open model).
    #[serde(default)]
    pub concurrency: Option<u64>,
    #[serde(default)]
    /// How long a request may take before it fails as a timeout, nanoseconds.
    pub timeout_ns: u64,
    /// A flow: its schedule counts flow starts (users), not requests; each record's
    /// `seq` is `run << 16 | request in the run`, so `seq & 0xffff == 0` is a start.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flow: bool,
    /// A replay of access logs (`attack -replay`): its logs and speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::ReplayInfo>,
}

/// Open model: requests leave on a clock. Closed model: N users, each sends its next
/// request when the previous one completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LoadModel {
    #[default]
    /// Requests sent at a scheduled rate, whatever the responses do.
    Open,
    /// Users that each send, wait for the response and think.
    Closed,
    /// Imported from another tool; the model is not known.
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
/// A target the run sent requests to; records index these.
pub struct TargetInfo {
    /// The HTTP method.
    pub method: String,
    /// The URL as given.
    pub url: String,
    /// The flow step this target is (its attack is the flow); absent for a plain target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The step's checks, by name, in the bit order of [`Record::checks_failed`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
}

/// A distinct error: its kind (for counting) and its text (for the error set).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorEntry {
    /// The error's kind, for counting and grouping.
    pub kind: ErrorKind,
    /// The error's text, as reports print it.
    pub text: String,
}

/// Error kinds are counted, not parsed out of strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The connection could not be made (refused, unreachable, no route).
    Connect,
    /// No connection within the timeout.
    ConnectTimeout,
    /// No complete response within the timeout.
    Timeout,
    /// The peer reset the connection.
    Reset,
    /// The peer closed the connection before the response was complete.
    Closed,
    /// TLS handshake or record failure.
    Tls,
    /// The response was not valid HTTP.
    Protocol,
    /// Redirects could not be followed (too many, bad `Location`).
    Redirect,
    /// The server answered with a status outside 200..400; the text is its status line.
    Status,
    /// Any other socket error.
    Io,
    /// The server reset an HTTP/2 stream (RST_STREAM; a refused stream is retried
    /// once first).
    Stream,
    /// The server's HTTP/2 GOAWAY left the request unprocessed (after one retry).
    GoAway,
    /// A flow step's extraction found nothing in the answer (the text names the step
    /// and the expression).
    Extract,
    /// A flow step's check failed, and failed checks fail requests (the text names the
    /// step and the check).
    Check,
    /// A `Set-Cookie` the jar refused (a domain the request's host may not set, a bad
    /// attribute): the text names the step and the cookie.
    Cookie,
    /// A value from outside the request (a data row, a flow's extracted variable, a
    /// replayed log line) would have changed its shape, so it was not sent: the text
    /// names the step or target, the placeholder and the header.
    UnsafeValue,
    /// A gRPC call ended with a status other than `OK`: the text is the code's name
    /// and the server's `grpc-message` (`UNAVAILABLE: no backend`).
    Grpc,
    /// An error imported from another tool, or written by a newer loadlab.
    #[serde(other)]
    Other,
}

impl ErrorKind {
    /// Every kind, in id order.
    pub const ALL: [ErrorKind; 18] = [
        ErrorKind::Connect,
        ErrorKind::ConnectTimeout,
        ErrorKind::Timeout,
        ErrorKind::Reset,
        ErrorKind::Closed,
        ErrorKind::Tls,
        ErrorKind::Protocol,
        ErrorKind::Redirect,
        ErrorKind::Status,
        ErrorKind::Io,
        ErrorKind::Stream,
        ErrorKind::GoAway,
        ErrorKind::Extract,
        ErrorKind::Check,
        ErrorKind::Cookie,
        ErrorKind::UnsafeValue,
        ErrorKind::Grpc,
        ErrorKind::Other,
    ];

    /// The kind a [`ErrorKind::name`] spells, if any.
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// The kind's name in reports and exports (`timeout`, `connect`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::Closed => "closed",
            ErrorKind::Tls => "tls",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Redirect => "redirect",
            ErrorKind::Status => "status",
            ErrorKind::Io => "io",
            ErrorKind::Stream => "stream",
            ErrorKind::GoAway => "goaway",
            ErrorKind::Extract => "extract",
            ErrorKind::Check => "check",
            ErrorKind::Cookie => "cookie",
            ErrorKind::UnsafeValue => "unsafe_value",
            ErrorKind::Grpc => "grpc",
            ErrorKind::Other => "other",
        }
    }
}

/// The generator's own health, sampled about once a second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct GeneratorStats {
    /// When the sample was taken, unix nanoseconds.
    pub at_unix_ns: u64,
    /// Process CPU time (user + system) since the run started.
    pub cpu_ns: u64,
    /// Requests sent so far.
    pub sent: u64,
    /// Requests completed (with a response or an error) so far.
    pub completed: u64,
    /// Requests sent and not yet completed.
    pub in_flight: u64,
    /// Connections open at the time.
    pub connections_open: u64,
    /// Requests the schedule made due that have not left yet.
    pub behind: u64,
    /// The generator's resident memory, bytes.
    pub rss_bytes: u64,
    /// Per attack, in header order (absent in files with one attack and no users).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attacks: Vec<AttackStats>,
    /// Runs of the flows started so far: in process only, for the live view and a
    /// steered shard (not in the file: its records say which request starts a run,
    /// [`crate::Record::starts_a_run`]).
    #[serde(skip)]
    pub starts: u64,
    /// The stream steps' connections and streamed gRPC calls over the interval
    /// ending at this sample (version 8 on; absent until the first one opened).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<crate::StreamStats>,
}

/// One attack's share of a [`GeneratorStats`] sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct AttackStats {
    /// The attack's requests sent so far.
    pub sent: u64,
    /// The attack's requests completed so far.
    pub completed: u64,
    /// The attack's requests sent and not yet completed.
    pub in_flight: u64,
    /// Closed model: users sending or thinking (the concurrency over time).
    #[serde(default)]
    pub users: u64,
    /// A flow's runs started so far: in process only, as [`GeneratorStats::starts`].
    #[serde(skip)]
    pub starts: u64,
}

/// Written last by a run that ended in an orderly way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RunEnd {
    /// When the run ended, unix nanoseconds.
    pub at_unix_ns: u64,
    /// Why the run ended.
    pub reason: StopReason,
    #[serde(default)]
    /// More on the reason (the stop rule that held, the error that ended it).
    pub detail: String,
    /// One entry per attack, in header order.
    pub attacks: Vec<AttackEnd>,
    /// The generator's CPU time (user + system) over the run, nanoseconds.
    pub cpu_ns: u64,
    /// The generator's peak resident memory, bytes.
    pub peak_rss_bytes: u64,
    /// How reading each replay attack's logs went (`attack -replay`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replays: Vec<crate::ReplayEnd>,
    /// Traced requests worth looking at, with their trace ids (`attack -trace`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exemplars: Vec<crate::Exemplar>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
/// One attack's totals at the end of the run.
pub struct AttackEnd {
    /// Requests the schedule asked for up to the end.
    pub asked: u64,
    /// Requests that left.
    pub sent: u64,
    /// Requests that were due but never left (the generator was behind when it stopped).
    pub unsent: u64,
    /// Time from the first to the last intended send the schedule asked for.
    pub asked_span_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
/// Why a run ended.
pub enum StopReason {
    /// The schedule, duration or request cap ran out.
    #[default]
    Completed,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// A stop rule fired.
    StopRule,
    /// The generator hit an error it could not go on from.
    Failed,
}

/// The dictionaries records index into. Error ids are 1-based (0 means "no error").
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunTables {
    /// Attacks by id.
    pub attacks: Vec<AttackInfo>,
    /// Targets by id.
    pub targets: Vec<TargetInfo>,
    /// Errors by id - 1 (id 0 is "no error").
    pub errors: Vec<ErrorEntry>,
}

impl RunTables {
    /// The error entry for a record's `error` id, if it has one.
    pub fn error(&self, id: u32) -> Option<&ErrorEntry> {
        (id as usize)
            .checked_sub(1)
            .and_then(|index| self.errors.get(index))
    }

    /// What a record's ids name: its attack's name (empty when unknown), its target and
    /// its error entry.
    pub fn names_of(&self, record: &Record) -> (&str, Option<&TargetInfo>, Option<&ErrorEntry>) {
        let attack = self
            .attacks
            .get(usize::from(record.attack))
            .map_or("", |a| a.name.as_str());
        let target = self.targets.get(record.target as usize);
        (attack, target, self.error(record.error))
    }
}
