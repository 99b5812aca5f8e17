//! [`RunObserver`]: what a live view sees of a run while it runs. The collector
//! thread, never a worker, hands it each batch of records as it takes it, each
//! generator stats sample as it writes it, new error-table entries, and the stop
//! rules' state after each judged second. So watching costs the workers nothing, and
//! a run without an observer does what it did before.

use record::{ErrorEntry, GeneratorStats, Record};
use workload::RuleWatch;

use crate::clock::Clock;

/// Watches a run from the collector thread; see the module documentation.
///
/// Every call comes from the collector, which runs at the lowest priority and is the
/// run's only writer: an observer must be quick and never block (take a lock once per
/// call at most, never wait on a display).
pub trait RunObserver: Send {
    /// Called once, right after the workers have their time zero.
    fn start(&mut self, clock: Clock);
    /// A worker's batch of records, as the collector takes it (completion order
    /// within a worker, workers interleaved).
    fn records(&mut self, records: &[Record]);
    /// The generator stats sample just written (about once a second).
    fn stats(&mut self, stats: &GeneratorStats);
    /// New entries of the error table, the first of them at index `first_index`
    /// (a record's `error` is that index plus one). They may follow the records
    /// that use them by up to a flush (250 ms).
    fn errors(&mut self, first_index: usize, new: &[ErrorEntry]);
    /// Each stop rule's watch after the seconds before `judged_ns` (from time zero)
    /// were judged; called only when that moment moved on.
    fn rules(&mut self, judged_ns: u64, watches: &[RuleWatch]) {
        let _ = (judged_ns, watches);
    }
    /// The run is over: the last records, stats and errors have been handed over.
    fn finish(&mut self) {}
}

/// No observer: the plain run.
pub(crate) struct NoObserver;

impl RunObserver for NoObserver {
    fn start(&mut self, _clock: Clock) {}
    fn records(&mut self, _records: &[Record]) {}
    fn stats(&mut self, _stats: &GeneratorStats) {}
    fn errors(&mut self, _first_index: usize, _new: &[ErrorEntry]) {}
}
