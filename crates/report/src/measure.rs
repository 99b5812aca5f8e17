//! [`Measure`]: a run measured once. One fold of its records, a replay's logged
//! originals and the resource samples (the figures of each group, the diagnosis's
//! evidence, the resources, the replay's tally and, for a page, each attack's latency
//! distribution), closed into the [`Summary`] every renderer reads: `report`'s layouts,
//! `plot`'s page (and the live dashboard through it) and a plan step's write-up. None
//! of them folds the records again, so a figure on the page and in `report` cannot
//! differ.

use analysis::GeneratorHealth;
use record::{Connection, Logged, Record, RunTables, SampleBatch, SampleTables, SourceSummary};

use crate::connections::Connections;
use crate::distribution::{Distribution, GROUP_EXACT_LIMIT, Quantiles};
use crate::evidence::{ClosedEvidence, Evidence, close_run};
use crate::extras::{RunFacts, Scope};
use crate::grouping::{GroupBy, GroupKey, Grouper, Groups};
use crate::metrics::{Metrics, Report};
use crate::replay::Replays;
use crate::resources::Resources;
use crate::traces::TracedRequests;

/// The fold; see the module documentation. Memory is bounded as each part's is, never
/// by the number of records.
#[derive(Clone)]
pub struct Measure {
    groups: Groups,
    judging: Judging,
    resources: Resources,
    replays: Replays,
    /// The `ws` and `sse` steps' connections.
    connections: Connections,
    /// Per merged attack id, when a renderer draws each attack's percentile curve.
    attacks: Option<Vec<Distribution>>,
}

/// The diagnosis's evidence: gathered as the records go by, or closed in a live copy,
/// which is drawn and never fed.
#[derive(Clone)]
enum Judging {
    Gathering(Box<Evidence>),
    Closed(Box<ClosedEvidence>),
}

/// What a run is judged by besides its records: the generator's bounds and the least
/// success ratio (the report's defaults, or a plan step's `[slo]`), and the traced
/// requests read beside the records.
#[derive(Debug, Clone, Default)]
pub struct Bounds {
    /// What the generator must achieve.
    pub health: GeneratorHealth,
    /// A plan's `[slo] success`, or `None` for the report's 99%.
    pub min_success_ratio: Option<f64>,
    /// The traced requests (`-trace`), judged by [`crate::judge_traces`].
    pub traces: Option<TracedRequests>,
}

/// One attack's latency distribution, for its percentile curve.
#[derive(Debug, Clone)]
pub struct AttackLatency {
    /// Its requests.
    pub requests: u64,
    /// Its slowest request.
    pub max_ns: u64,
    /// Its percentiles (exact up to [`GROUP_EXACT_LIMIT`] requests, as a `-by attack`
    /// report's).
    pub quantiles: Quantiles,
}

/// A run measured and judged once: what every renderer reads.
#[derive(Debug, Clone)]
pub struct Summary {
    /// What the inputs say about the run, its resources, replay and evidence included.
    pub facts: RunFacts,
    /// Keys and names the groups (`-by`); `None` for the whole run.
    pub grouper: Option<Grouper>,
    /// Each group's report in its stable order; without `-by`, the whole run's alone
    /// (closed and judged even without requests, for a monitor file).
    pub groups: Vec<(GroupKey, Report)>,
    /// Per merged attack id; empty unless asked for ([`Measure::with_attack_latency`]).
    pub attacks: Vec<AttackLatency>,
    /// The `ws` and `sse` steps' connections, merged per group when rendered
    /// ([`Connections::merged`]: peak held, the count open each second, messages).
    pub connections: Connections,
}

impl Measure {
    /// Nothing folded yet: a report per group of `by` (or one), each a clone of
    /// `template`.
    pub fn new(by: Option<GroupBy>, template: Metrics) -> Measure {
        Measure {
            groups: Groups::new(by, template),
            judging: Judging::Gathering(Box::default()),
            resources: Resources::default(),
            replays: Replays::new(),
            connections: Connections::default(),
            attacks: None,
        }
    }

    /// Also keeps each attack's latency distribution ([`Summary::attacks`]).
    pub fn with_attack_latency(mut self) -> Measure {
        self.attacks = Some(Vec::new());
        self
    }

    /// Adds a batch of records; `tables` are the run's as of this batch.
    pub fn add_records(&mut self, records: &[Record], tables: &RunTables) {
        self.groups.add_all(records, tables);
        if let Judging::Gathering(evidence) = &mut self.judging {
            evidence.add_records(records, tables);
        }
        self.replays.add_records(records, tables);
        if let Some(attacks) = &mut self.attacks {
            for record in records {
                let id = usize::from(record.attack);
                if attacks.len() <= id {
                    // Runs may have many attacks: 128 KiB each before the histogram.
                    attacks
                        .resize_with(id + 1, || Distribution::with_exact_limit(GROUP_EXACT_LIMIT));
                }
                attacks[id].add(record.latency_ns);
            }
        }
    }

    /// Adds a replay's logged originals (any order).
    pub fn add_logged(&mut self, logged: &[Logged], tables: &RunTables) {
        self.replays.add_logged(logged, tables);
    }

    /// Adds the connection entries of `ws` and `sse` steps and streamed gRPC calls (any
    /// order): their figures, and for the diagnosis which gRPC calls streamed.
    pub fn add_connections(&mut self, connections: &[Connection]) {
        self.connections.add(connections);
        if let Judging::Gathering(evidence) = &mut self.judging {
            evidence.add_connections(connections);
        }
    }

    /// Adds resource sample batches whose ids index `tables` (as read so far).
    pub fn add_samples(&mut self, tables: &SampleTables, batches: &[SampleBatch]) {
        if batches.is_empty() {
            return;
        }
        self.resources.add(tables, batches);
        if let Judging::Gathering(evidence) = &mut self.judging {
            evidence.add_samples(tables, batches);
        }
    }

    /// Records folded so far.
    pub fn requests(&self) -> u64 {
        self.groups.requests()
    }

    /// The earliest send time folded (`None` before the first record): where the
    /// resources' warnings and the traces count time from.
    pub fn earliest_unix_ns(&self) -> Option<u64> {
        (self.requests() > 0).then(|| self.groups.earliest_unix_ns())
    }

    /// A copy to close while the run goes on (the live page, each second): the same,
    /// except that its evidence is closed, so the per-second windows are not copied.
    pub fn live_copy(&self) -> Measure {
        let closed = match &self.judging {
            Judging::Gathering(evidence) => evidence.close(),
            Judging::Closed(closed) => ClosedEvidence::clone(closed),
        };
        Measure {
            judging: Judging::Closed(Box::new(closed)),
            ..self.clone()
        }
    }

    /// Closes the fold: the facts from the inputs (`summaries`, `tables`) and what was
    /// folded, judged by `bounds`, then every group's report built from them once.
    pub fn close(self, summaries: &[SourceSummary], tables: &RunTables, bounds: Bounds) -> Summary {
        let earliest_unix_ns = self.earliest_unix_ns();
        let mut facts = RunFacts::from_inputs(summaries, tables);
        facts.health = bounds.health;
        facts.min_success_ratio = bounds.min_success_ratio;
        facts.traces = bounds.traces;
        facts.resources = self.resources.close(earliest_unix_ns);
        facts.replay = self.replays.close(summaries, tables);
        match self.judging {
            Judging::Gathering(evidence) => evidence.close(),
            Judging::Closed(closed) => *closed,
        }
        .fill(&mut facts, tables, &self.connections);
        let attacks = (self.attacks.unwrap_or_default().into_iter())
            .map(|latency| AttackLatency {
                requests: latency.count(),
                max_ns: latency.max(),
                quantiles: latency.into_quantiles(),
            })
            .collect();
        let connections = self.connections;
        let empty = (self.groups.requests() == 0).then(|| self.groups.template().clone());
        let (grouper, mut sorted) = self.groups.into_sorted();
        if let (Some(empty), None) = (empty, &grouper) {
            sorted.push((GroupKey(0), empty));
        }
        let by = grouper.as_ref().map(Grouper::by);
        let groups = (sorted.into_iter())
            .map(|(key, metrics)| (key, close_run(metrics, &facts, tables, scope(by, key))))
            .collect();
        Summary {
            facts,
            grouper,
            groups,
            attacks,
            connections,
        }
    }
}

impl Summary {
    /// The whole run's report: the one group without `-by`.
    pub fn run(&self) -> Option<&Report> {
        match (&self.grouper, self.groups.as_slice()) {
            (None, [(_, report)]) => Some(report),
            _ => None,
        }
    }

    /// The whole run's diagnosis, when it has one (a `-by` report's groups are parts).
    pub fn diagnosis(&self) -> Option<&analysis::Diagnosis> {
        (self.groups.iter()).find_map(|(_, report)| report.extras.diagnosis.as_ref())
    }
}

fn scope(by: Option<GroupBy>, key: GroupKey) -> Scope {
    match by {
        None => Scope::Run,
        Some(GroupBy::Attack) => Scope::Attack(u16::try_from(key.0).unwrap_or(u16::MAX)),
        Some(
            GroupBy::Target | GroupBy::Step | GroupBy::Method | GroupBy::Status | GroupBy::Protocol,
        ) => Scope::Part,
    }
}
