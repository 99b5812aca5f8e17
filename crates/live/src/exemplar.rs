//! [`BucketExemplar`]: under `attack -trace`, the latest traced request of each latency
//! bucket, for OpenMetrics' exemplars (`openmetrics.rs`). The trace ids are the
//! sampler's pure function of (attack, seq), computed again on the collector thread as
//! the engine's collector does for the record's exemplars: workers carry nothing more.

use engine::RunConfig;
use record::Record;
use workload::{TraceIds, TraceSampler};

/// A traced request that fell in a latency bucket: the latest one wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketExemplar {
    /// The W3C trace id it sent.
    pub trace_id: u128,
    /// Its latency, nanoseconds.
    pub latency_ns: u64,
    /// When it completed, unix nanoseconds.
    pub at_unix_ns: u64,
}

/// Which records carried loadlab's trace ids, and which.
pub(crate) struct Tracing {
    sampler: TraceSampler,
    /// Record ids of the fixed targets that set their own `traceparent`.
    own_traceparent: Vec<u32>,
}

impl Tracing {
    /// `None` when the run does not trace.
    pub(crate) fn of(config: &RunConfig) -> Option<Tracing> {
        let trace = config.settings.trace?;
        Some(Tracing {
            sampler: TraceSampler::new(trace, config.settings.seed),
            own_traceparent: engine::own_traceparents(config),
        })
    }

    /// The ids `record` carried, when they were ours.
    pub(crate) fn ids(&self, record: &Record) -> Option<TraceIds> {
        if self.own_traceparent.contains(&record.target) {
            return None;
        }
        self.sampler.ids(record.attack, record.seq)
    }

    /// The exemplar of `record`, when it carried our ids.
    pub(crate) fn exemplar(&self, record: &Record) -> Option<BucketExemplar> {
        let ids = self.ids(record)?;
        Some(BucketExemplar {
            trace_id: ids.trace_id,
            latency_ns: record.latency_ns,
            at_unix_ns: record.end_unix_ns(),
        })
    }
}
