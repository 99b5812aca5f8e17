//! [`WorkerReport`]: what a worker ships to the collector every ~100 ms and at the
//! end (its records, watermark and running [`Counters`]). Workers send it and the
//! collector reads it; neither needs the other's module.

use record::{AttackStats, Connection, Record};

/// What a worker tells the collector, every ~100 ms and at the end.
pub(crate) struct WorkerReport {
    pub worker: usize,
    pub records: Vec<Record>,
    /// Figures of the `ws` and `sse` connections that closed since the last report
    /// (their records are in this report or an earlier one).
    pub connections: Vec<Connection>,
    /// Every request this worker dispatched before this offset is in this or an
    /// earlier report.
    pub watermark_ns: u64,
    pub counters: Counters,
    /// Per attack, in attack order.
    pub attacks: Vec<AttackStats>,
    pub done: bool,
}

/// Running totals of one worker (snapshots, not deltas).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counters {
    pub sent: u64,
    /// Runs of its flows started (their first request numbered).
    pub starts: u64,
    pub completed: u64,
    pub in_flight: u64,
    pub connections_open: u64,
    /// Requests due by now that have not left (the generator is behind).
    pub behind: u64,
    /// Of `behind`, those whose attack found every connection it may use busy.
    pub behind_at_cap: u64,
    /// Times the event loop came back from waiting (what an idle worker costs).
    pub wakeups: u64,
    /// Times a due request waited at a cap (`max_in_flight`, or the host's connections).
    pub cap_waits: u64,
}
