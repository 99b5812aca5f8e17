//! A replay's originals (`attack -replay`): what the access log said about each
//! replayed request, kept beside the records so `report` and `plot` can put the replay
//! next to the original. Stored in optional `logged` blocks (kind 0x42), so readers
//! that predate them skip them.

use serde::{Deserialize, Serialize};

/// What the log said about one replayed request. It joins its record by
/// `(attack, seq)`; `target` and `intended_unix_ns` are the record's, repeated so a
/// reader needs no join for per-target and per-second figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Logged {
    /// Index into the header's attacks.
    pub attack: u16,
    /// The record's target (the request's path group).
    pub target: u32,
    /// The record's `seq`.
    pub seq: u64,
    /// The record's intended send time (the logged time, rebased and sped up).
    pub intended_unix_ns: u64,
    /// The status the server answered then; 0 when the log has none.
    pub status: u16,
    /// How long the server took then, nanoseconds, when logged.
    pub latency_ns: Option<u64>,
    /// Response bytes sent then, when logged.
    pub bytes: Option<u64>,
}

/// A replay attack, in its header entry (`AttackInfo::replay`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ReplayInfo {
    /// The log files, as named on the command line.
    pub files: Vec<String>,
    /// The log format read (`nginx`, `apache`, `alb`, ...).
    pub format: String,
    /// How much faster than logged (`-speed`; 1 = as logged).
    pub speed: f64,
    /// The logged time of the run's time zero, unix nanoseconds: a record's logged
    /// time is this plus (intended - start) x speed (within one loop).
    pub log_start_unix_ns: u64,
}

/// How reading a replay's logs went, in the run's end block (`RunEnd::replays`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ReplayEnd {
    /// Index into the header's attacks.
    pub attack: u16,
    /// Lines of the logs, every file (HAR: entries).
    pub lines: u64,
    /// Requests of the logs' first pass handed to the workers to be sent. The
    /// lines that are neither these, bad nor filtered are *skipped*
    /// ([`ReplayEnd::skipped`]).
    pub requests: u64,
    /// Lines that did not match the format.
    pub bad_lines: u64,
    /// The first few bad lines, `file:line: reason`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bad_examples: Vec<String>,
    /// Requests left out by the window's start or a filter.
    pub filtered: u64,
    /// Requests logged out of time order and put back in order.
    pub reordered: u64,
    /// The furthest one was put back, nanoseconds.
    pub max_reorder_ns: u64,
    /// Times the log was replayed from its start again (`-loop`).
    pub loops: u64,
}

impl ReplayEnd {
    /// Lines neither replayed, bad nor filtered: lines holding no request, lines past
    /// the window's end, requests the run ended before, requests of other shards
    /// (docs/REPLAY.md). The rest of the lines, so that the counts add up.
    pub fn skipped(&self) -> u64 {
        self.lines
            .saturating_sub(self.requests + self.bad_lines + self.filtered)
    }
}
