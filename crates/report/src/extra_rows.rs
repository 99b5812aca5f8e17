//! [`Extras`]: our rows beside vegeta's in one report (send lag, the asked rate, the
//! generator's use, the run's shape, protocols, resources, saturation) and the
//! warnings they call for, as the renderers read them. `extras.rs` builds them from
//! what the inputs say ([`crate::RunFacts`]).

use analysis::Finding;
use record::Protocol;

use crate::distribution::Distribution;
use crate::resources::ResourceSummary;
use crate::warnings::Warning;

/// Send lag (actual minus intended send time) of a set of records, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LagStats {
    /// Mean lag, nanoseconds.
    pub mean_ns: u64,
    /// Median lag, nanoseconds.
    pub p50_ns: u64,
    /// 99th percentile lag, nanoseconds.
    pub p99_ns: u64,
    /// Largest lag, nanoseconds.
    pub max_ns: u64,
}

impl LagStats {
    pub(crate) fn from_distribution(distribution: Distribution) -> LagStats {
        let (mean_ns, max_ns) = (distribution.mean(), distribution.max());
        let quantiles = distribution.into_quantiles();
        LagStats {
            mean_ns,
            p50_ns: quantiles.quantile(0.50),
            p99_ns: quantiles.quantile(0.99),
            max_ns,
        }
    }
}

/// The generator's own resource use, summed over the inputs that recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeneratorUse {
    /// Process CPU time (user + system) over the run.
    pub cpu_ns: u64,
    /// CPU time per request sent, nanoseconds.
    pub cpu_per_request_ns: u64,
    /// The largest peak RSS of any generator process.
    pub peak_rss_bytes: u64,
}

/// The asked rate against what was achieved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AskedRate {
    /// What the schedules asked for, requests per second, summed over the attacks.
    pub asked_per_sec: f64,
    /// vegeta's rate (requests over the send span), summed over the attacks.
    pub achieved_per_sec: f64,
    /// Achieved over asked (1 when the rate held).
    pub ratio: f64,
    /// Requests that were due but never left.
    pub unsent: u64,
}

/// The load model, how many attacks and how the run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunShape {
    /// `open`, `closed`, `mixed` or `unknown`.
    pub model: &'static str,
    /// Attacks in the run.
    pub attacks: usize,
    /// How the run ended (`completed`, `interrupted`, a stop rule...).
    pub stop: String,
}

/// The extra rows and warnings of one report; `None` rows have no data in the input.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Extras {
    /// Send lag row, when the input recorded lag.
    pub send_lag: Option<LagStats>,
    /// The send lag p99 weighed against its bound and the median latency (the one
    /// judgement behind the warning, the diagnosis and the plot's tile).
    pub lag: Option<analysis::Lag>,
    /// How late the generator could wake to send and read (`attack -precision`),
    /// when recorded: the resolution of the send lag and of the latencies.
    pub precision_ns: Option<u64>,
    /// Asked against achieved rate, open model only.
    pub asked: Option<AskedRate>,
    /// The generator's CPU and memory.
    pub generator: Option<GeneratorUse>,
    /// The load model and how the run ended.
    pub run: Option<RunShape>,
    /// Requests per protocol in name order ([`Report::protocols`](crate::Report::protocols)), only when some
    /// request did not go over HTTP/1.1: a pure HTTP/1.1 report (every vegeta one)
    /// stays as it was.
    pub protocols: Option<Vec<(Protocol, u64)>>,
    /// What a reader must not miss.
    pub warnings: Vec<Warning>,
    /// Whole-run reports only: the resource summary and its warnings.
    pub resources: Option<ResourceSummary>,
    /// Whole-run reports only: where a rising open-model load saturated, or why it says nothing.
    pub saturation: Option<Finding>,
    /// Whole-run reports only: what ran out first, when the run has samples or a knee
    /// (set by the pipeline, `run_diagnosis.rs`).
    pub diagnosis: Option<analysis::Diagnosis>,
    /// Whole-run reports only: each replay attack against its original
    /// (`attack -replay`); empty without one.
    pub replay: Vec<crate::replay::ReplayFigures>,
    /// Whole-run reports only: the traced requests worth looking at (`attack -trace`).
    pub traces: Option<crate::TracedRequests>,
}
