//! [`Record`]: one request, as plain data.

/// The outcome of one request. Times are unix nanoseconds (wall clock at the run's time
/// zero plus a monotonic offset, so differences within a run are monotonic-exact).
///
/// Latency counts from the *intended* send time, so a generator that falls behind
/// cannot hide its delay in the server's numbers (no coordinated omission);
/// `send_lag_ns` says how late the request actually left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Record {
    /// Index into [`crate::RunTables::attacks`] (the attack or scenario name).
    pub attack: u16,
    /// Index into [`crate::RunTables::targets`].
    pub target: u32,
    /// Position of the request in its attack's schedule.
    pub seq: u64,
    /// When the schedule said to send it.
    pub intended_unix_ns: u64,
    /// Actual send time minus intended send time.
    pub send_lag_ns: u64,
    /// Completion (or failure) time minus intended send time.
    pub latency_ns: u64,
    /// First response byte minus actual send time; 0 when no byte arrived.
    pub ttfb_ns: u64,
    /// HTTP status code; 0 when the request failed below HTTP (transport error).
    pub status: u16,
    /// 0 for none, else `id` into [`crate::RunTables::errors`] (1-based).
    pub error: u32,
    /// Response bytes received: status line, headers and body as read off the wire.
    pub bytes_in: u64,
    /// Request bytes written.
    pub bytes_out: u64,
}

impl Record {
    /// When the request actually left: vegeta's `timestamp`.
    pub fn sent_unix_ns(&self) -> u64 {
        self.intended_unix_ns.saturating_add(self.send_lag_ns)
    }

    /// When the request completed or failed.
    pub fn end_unix_ns(&self) -> u64 {
        self.intended_unix_ns.saturating_add(self.latency_ns)
    }

    /// vegeta's success rule: a status in 200..400.
    pub fn is_success(&self) -> bool {
        (200..400).contains(&self.status)
    }
}
