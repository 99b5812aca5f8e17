//! [`RunObserver`]: what a live view sees of a run while it runs. The collector
//! thread, never a worker, hands it each batch of records as it takes it, each
//! generator stats sample and resource-sample frame as it writes it, new error-table
//! entries, and the stop rules' state after each judged second. So watching costs the workers nothing, and
//! a run without an observer does what it did before.

use record::{ErrorEntry, GeneratorStats, Record, SampleFrame, TargetInfo};
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
    /// Called right before [`RunObserver::stats`]: of the sample's requests behind,
    /// those whose attack found every connection it may use busy (at `-max-workers`
    /// or `-connections`): connections, not the generator's CPU, held the rate back.
    fn behind_at_cap(&mut self, _requests: u64) {}
    /// New entries of the error table, the first of them at index `first_index`
    /// (a record's `error` is that index plus one). They may follow the records
    /// that use them by up to a flush (250 ms).
    fn errors(&mut self, first_index: usize, new: &[ErrorEntry]);
    /// Entries of the target table, the first at index `first_index` (a record's
    /// `target`): the run's fixed targets before the first record, others (lazy
    /// targets) when they are written, up to a flush after records that use them.
    fn targets(&mut self, first_index: usize, new: &[TargetInfo]) {
        let _ = (first_index, new);
    }
    /// Each stop rule's watch after the seconds before `judged_ns` (from time zero)
    /// were judged; called only when that moment moved on.
    fn rules(&mut self, judged_ns: u64, watches: &[RuleWatch]) {
        let _ = (judged_ns, watches);
    }
    /// A frame of resource samples (the monitor's) as it is written: new table
    /// entries continuing the ones before, and one batch of values.
    fn samples(&mut self, frame: &SampleFrame) {
        let _ = frame;
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

/// Several observers watching one run (the terminal view, a dashboard, Prometheus),
/// each called in turn with the same data.
impl RunObserver for Vec<Box<dyn RunObserver + '_>> {
    fn start(&mut self, clock: Clock) {
        self.iter_mut().for_each(|observer| observer.start(clock));
    }
    fn records(&mut self, records: &[Record]) {
        self.iter_mut()
            .for_each(|observer| observer.records(records));
    }
    fn stats(&mut self, stats: &GeneratorStats) {
        self.iter_mut().for_each(|observer| observer.stats(stats));
    }
    fn behind_at_cap(&mut self, requests: u64) {
        self.iter_mut()
            .for_each(|observer| observer.behind_at_cap(requests));
    }
    fn errors(&mut self, first_index: usize, new: &[ErrorEntry]) {
        self.iter_mut()
            .for_each(|observer| observer.errors(first_index, new));
    }
    fn targets(&mut self, first_index: usize, new: &[TargetInfo]) {
        self.iter_mut()
            .for_each(|observer| observer.targets(first_index, new));
    }
    fn rules(&mut self, judged_ns: u64, watches: &[RuleWatch]) {
        self.iter_mut()
            .for_each(|observer| observer.rules(judged_ns, watches));
    }
    fn samples(&mut self, frame: &SampleFrame) {
        self.iter_mut().for_each(|observer| observer.samples(frame));
    }
    fn finish(&mut self) {
        self.iter_mut().for_each(|observer| observer.finish());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts what it is handed.
    #[derive(Default)]
    struct Tally {
        records: usize,
        errors: usize,
        finished: bool,
    }

    struct Counting<'a>(&'a mut Tally);

    impl RunObserver for Counting<'_> {
        fn start(&mut self, _clock: Clock) {}
        fn records(&mut self, records: &[Record]) {
            self.0.records += records.len();
        }
        fn stats(&mut self, _stats: &GeneratorStats) {}
        fn errors(&mut self, _first_index: usize, new: &[ErrorEntry]) {
            self.0.errors += new.len();
        }
        fn finish(&mut self) {
            self.0.finished = true;
        }
    }

    #[test]
    fn every_observer_of_a_fan_out_sees_every_call() {
        let (mut first, mut second) = (Tally::default(), Tally::default());
        {
            let mut observers: Vec<Box<dyn RunObserver + '_>> = vec![
                Box::new(Counting(&mut first)),
                Box::new(Counting(&mut second)),
            ];
            observers.records(&[Record::default(), Record::default()]);
            observers.errors(0, &[]);
            observers.records(&[Record::default()]);
            observers.finish();
        }
        for tally in [first, second] {
            assert_eq!(tally.records, 3);
            assert_eq!(tally.errors, 0);
            assert!(tally.finished);
        }
    }
}
