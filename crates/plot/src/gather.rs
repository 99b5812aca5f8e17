//! [`read_run`]: one pass over the inputs in send-time order ([`RecordStream`]). Each
//! batch of records, logged originals and resource samples goes to the report's one
//! fold, [`Measure`], whose [`report::Summary`] the page reads: its figures, its
//! diagnosis (judged as `loadlab report` judges it), the resources, the replay's tally
//! and each attack's latency distribution (the percentile curve). Beside it, this
//! gathers only what is drawn: the per-interval [`Bins`], per attack a
//! [`PointSampler`] for OK and for failed requests, for flows each check's passes and
//! failures and each step's latency ([`FlowGather`]), the resource traces
//! ([`SampleGather`], once per batch) and a replay's per-interval p99s
//! ([`ReplayGather`]). Memory is bounded by the samplers' limits and the number of
//! intervals, never by the number of records.

use record::{
    ErrorKind, LoadModel, Logged, ReadOrder, Record, RecordStream, RunTables, SampleBatch,
    SampleTables, SourceSummary,
};
use report::{
    AttackLatency, Bounds, Measure, Metrics, Quantiles, ReplayFigures, Report, RunFacts,
    TracedRequests,
};

use crate::PlotError;
use crate::bins::{BinnedRequest, Bins, Row, StatusKey, TRANSPORT};
use crate::config::PlotConfig;
use crate::downsample::{GridSize, Kept, PointSampler, Sampled};
use crate::flows::{FlowData, FlowGather};
use crate::model::TimeZero;
use crate::replay_gather::ReplayGather;
use crate::sample_gather::{SampleData, SampleGather};

/// Point labels at or above this are error ids (`ERROR_LABEL + id`); below, statuses.
pub const ERROR_LABEL: u32 = 1 << 20;
/// Failed requests are rarer and what a reader hunts for: their series keep this many
/// times more points than the OK ones before they are downsampled.
pub const ERROR_POINTS_FACTOR: usize = 4;

/// Everything the charts and the summary are drawn from.
pub struct RunData {
    /// When the earliest request (by send time) of all inputs was due: x = 0 on every
    /// time chart. Without requests, the first resource sample.
    pub origin_unix_ns: u64,
    pub zero: TimeZero,
    /// The report's numbers and extra rows, as `loadlab report` prints them.
    pub report: Report,
    pub facts: RunFacts,
    pub tables: RunTables,
    pub summaries: Vec<SourceSummary>,
    /// By merged attack id.
    pub attacks: Vec<AttackData>,
    pub rows: Vec<Row>,
    pub every_ns: u64,
    /// The plan step's window the page shows ([`PlotConfig::window_ns`]).
    pub window_ns: Option<(u64, u64)>,
    /// Resource samples of the system under test (empty when the inputs hold none).
    pub samples: SampleData,
    /// The flows' checks and steps (empty for a run without flows).
    pub flows: FlowData,
    /// Each replay attack against its original (empty for a run without one); the
    /// rows hold its per-interval figures.
    pub replay: Vec<ReplayFigures>,
}

/// One attack's requests.
pub struct AttackData {
    pub ok: Sampled,
    pub failed: Sampled,
    pub latency: Quantiles,
    pub requests: u64,
    pub max_latency_ns: u64,
    /// The latest intended send time of the attack's requests.
    pub last_intended_unix_ns: u64,
    /// Whether the rows' `asked` counts this attack's intended send times.
    pub counts_intended: bool,
}

/// Reads every input and gathers what the page needs. Fails when an input cannot be
/// opened or holds neither records nor resource samples.
pub fn read_run(paths: &[String], config: &PlotConfig) -> Result<RunData, PlotError> {
    let mut stream = RecordStream::open(paths, ReadOrder::SendTime, false)?;
    let mut gather = RunGather::new(config);
    let (mut batch, mut samples, mut logged) = (Vec::new(), Vec::new(), Vec::new());
    let mut connections = Vec::new();
    while stream.next_batch(&mut batch)? {
        if let Some(window_ns) = config.window_ns {
            report::keep_window(&mut batch, stream.summaries(), window_ns);
        }
        gather.add_records(&batch, stream.tables());
        stream.take_logged(&mut logged);
        gather.add_logged(&logged, stream.tables());
        logged.clear();
        stream.take_connections(&mut connections);
        gather.add_connections(&connections);
        connections.clear();
        let sample_tables = stream.take_samples(&mut samples);
        gather.add_samples(sample_tables, &samples);
        samples.clear();
    }
    stream.take_logged(&mut logged);
    gather.add_logged(&logged, stream.tables());
    stream.take_connections(&mut connections);
    gather.add_connections(&connections);
    let sample_tables = stream.take_samples(&mut samples);
    gather.add_samples(sample_tables, &samples);
    let sample_tables = sample_tables.clone();
    gather.judge_traces(&stream, config);
    let (tables, summaries) = stream.into_parts();
    gather.finish(&input_names(paths), tables, summaries, sample_tables)
}

/// What the page is drawn from, gathered one batch at a time from records in
/// send-time order ([`record::Sorted`] or [`RecordStream`] with
/// [`ReadOrder::SendTime`]). `loadlab plot` fills one from its inputs; the live
/// dashboard fills one as the run's records are written and clones it (bounded: the
/// samplers' points, one row per interval, the distributions' histograms) to draw the
/// page so far. Fed the same records in the same order, both draw the same page.
#[derive(Clone)]
pub struct RunGather {
    gather: Gather,
}

impl RunGather {
    /// An empty gathering for pages drawn with `config`.
    pub fn new(config: &PlotConfig) -> RunGather {
        RunGather {
            gather: Gather::new(config),
        }
    }

    /// Adds records, in send-time order after those added before; `tables` resolves
    /// their ids (attacks, errors) as of these records.
    pub fn add_records(&mut self, records: &[Record], tables: &RunTables) {
        for record in records {
            self.gather.add(record, tables);
        }
        self.gather.measure.add_records(records, tables);
        if let Some(origin) = self.gather.origin_unix_ns {
            let gather = &mut self.gather;
            gather
                .replay
                .add_records(records, tables, origin, &mut gather.bins);
        }
    }

    /// Adds a replay's logged originals, in any order; `tables` resolves their ids.
    pub fn add_logged(&mut self, logged: &[Logged], tables: &RunTables) {
        let gather = &mut self.gather;
        gather.measure.add_logged(logged, tables);
        gather
            .replay
            .add_logged(logged, gather.origin_unix_ns, &mut gather.bins);
    }

    /// Adds the held steps' connection entries, in any order (the connection limit's
    /// peak held at once).
    pub fn add_connections(&mut self, connections: &[record::Connection]) {
        self.gather.measure.add_connections(connections);
    }

    /// Adds resource samples; `tables` names their samplers and series.
    pub fn add_samples(&mut self, tables: &SampleTables, samples: &[SampleBatch]) {
        self.gather.samples.add(tables, samples);
        self.gather.measure.add_samples(tables, samples);
    }

    /// A copy to draw a live page from: the same, except that its rows stop growing
    /// past `max_rows` (`Bins::coarse_copy`) and its measure's evidence is closed
    /// ([`Measure::live_copy`]), so the copy made each second keeps a size however
    /// long the run.
    pub fn live_copy(&self, max_rows: usize) -> RunGather {
        let gather = &self.gather;
        RunGather {
            gather: Gather {
                threshold: gather.threshold,
                health: gather.health,
                min_success_ratio: gather.min_success_ratio,
                window_ns: gather.window_ns,
                origin_unix_ns: gather.origin_unix_ns,
                traces: gather.traces.clone(),
                measure: gather.measure.live_copy(),
                bins: gather.replay.live_bins(&gather.bins, max_rows),
                replay: gather.replay.live_copy(),
                attacks: gather.attacks.clone(),
                flows: gather.flows.clone(),
                samples: gather.samples.clone(),
            },
        }
    }

    /// Judges the inputs' traced requests with `config`'s `-trace-link` and
    /// `-trace-store`, once every record is read (the exemplars are in the end blocks),
    /// their send times from the earliest request's, as `loadlab report` lists them.
    fn judge_traces(&mut self, stream: &RecordStream, config: &PlotConfig) {
        let gather = &mut self.gather;
        gather.traces = gather
            .measure
            .earliest_unix_ns()
            .and_then(|earliest_unix_ns| {
                report::judge_traces(
                    stream.exemplars(),
                    stream.summaries(),
                    stream.tables(),
                    (config.trace_link.as_ref(), config.trace_store.as_ref()),
                    earliest_unix_ns,
                )
            });
    }

    /// Requests added so far.
    pub fn requests(&self) -> u64 {
        self.gather.measure.requests()
    }

    /// The page's data, with the inputs' tables and summaries as they stand. Fails
    /// when nothing was gathered (`inputs` names them in the error).
    pub(crate) fn finish(
        self,
        inputs: &str,
        tables: RunTables,
        summaries: Vec<SourceSummary>,
        sample_tables: SampleTables,
    ) -> Result<RunData, PlotError> {
        let gather = self.gather;
        if gather.measure.requests() == 0 && gather.samples.first_unix_ns().is_none() {
            return Err(PlotError::NoRecords {
                inputs: inputs.to_owned(),
                detail: why_empty(&summaries),
            });
        }
        Ok(gather.finish(tables, summaries, sample_tables))
    }
}

pub(crate) fn input_names(paths: &[String]) -> String {
    if paths.is_empty() {
        "stdin".to_owned()
    } else {
        paths.join(", ")
    }
}

/// What the inputs say about why they hold no records.
fn why_empty(summaries: &[SourceSummary]) -> String {
    let mut reasons = Vec::new();
    for summary in summaries {
        if let Some(torn) = &summary.torn {
            reasons.push(format!(
                "{}: cut at byte {} ({})",
                summary.name, torn.offset, torn.reason
            ));
        }
        if let Some(end) = summary.end.as_ref().filter(|end| !end.detail.is_empty()) {
            reasons.push(format!("{}: the run ended: {}", summary.name, end.detail));
        }
    }
    if reasons.is_empty() {
        String::new()
    } else {
        format!(" ({})", reasons.join("; "))
    }
}

#[derive(Clone)]
struct Gather {
    threshold: usize,
    health: analysis::GeneratorHealth,
    min_success_ratio: Option<f64>,
    window_ns: Option<(u64, u64)>,
    origin_unix_ns: Option<u64>,
    /// The traced requests (`-trace`), judged once the inputs' exemplars are read.
    traces: Option<TracedRequests>,
    /// The report's one fold: the summary, the diagnosis, the resources, the replay's
    /// tally and each attack's latency distribution are read from it, never refolded.
    measure: Measure,
    bins: Bins,
    attacks: Vec<AttackGather>,
    flows: FlowGather,
    samples: SampleGather,
    replay: ReplayGather,
}

#[derive(Clone)]
struct AttackGather {
    ok: PointSampler,
    failed: PointSampler,
    /// Count intended send times per interval: the asked rate is not a known constant.
    counts_intended: bool,
    /// A flow: its records with `seq & 0xffff == 0` start its runs, its load.
    flow: bool,
    last_intended_unix_ns: u64,
}

impl Gather {
    fn new(config: &PlotConfig) -> Gather {
        Gather {
            threshold: config.threshold,
            health: config.health,
            min_success_ratio: config.min_success_ratio,
            window_ns: config.window_ns,
            origin_unix_ns: None,
            traces: None,
            measure: Measure::new(None, Metrics::new(None)).with_attack_latency(),
            bins: Bins::new(config.every_ns),
            attacks: Vec::new(),
            flows: FlowGather::default(),
            samples: SampleGather::new(config.threshold),
            replay: ReplayGather::default(),
        }
    }

    #[inline]
    fn add(&mut self, record: &Record, tables: &RunTables) {
        let sent = record.sent_unix_ns();
        // The first request's intended time: the schedule's zero, so intervals of
        // intended (asked) and actual (sent) times line up.
        let origin = *self
            .origin_unix_ns
            .get_or_insert(record.intended_unix_ns.min(sent));
        let attack = self.attack(record.attack, tables);
        let success = record.is_success();
        let point = Kept {
            t_ns: sent.saturating_sub(origin),
            latency_ns: record.latency_ns,
            label: point_label(record),
            weight: 1,
        };
        if success {
            attack.ok.add(point);
        } else {
            attack.failed.add(point);
        }
        attack.last_intended_unix_ns = attack.last_intended_unix_ns.max(record.intended_unix_ns);
        // A flow's schedule asks for runs: its other requests are neither asked nor
        // started load.
        let starts_load = !attack.flow || record.starts_a_run();
        let intended_ns = (attack.counts_intended && starts_load)
            .then(|| record.intended_unix_ns.saturating_sub(origin));
        self.bins.add(&BinnedRequest {
            sent_ns: point.t_ns,
            latency_ns: record.latency_ns,
            send_lag_ns: record.send_lag_ns,
            status: status_key(record, tables),
            success,
            intended_ns,
            starts_load,
        });
        let checks = self.flows.add(record, tables);
        self.bins
            .add_checks(point.t_ns, checks, record.checks_failed);
    }

    fn attack(&mut self, id: u16, tables: &RunTables) -> &mut AttackGather {
        let index = usize::from(id);
        while self.attacks.len() <= index {
            let info = tables.attacks.get(self.attacks.len());
            let counts_intended = info.is_some_and(|info| {
                info.model == LoadModel::Open && constant_rate(info.rate_per_sec).is_none()
            });
            self.attacks.push(AttackGather {
                ok: PointSampler::new(self.threshold),
                failed: PointSampler::new(self.threshold * ERROR_POINTS_FACTOR),
                counts_intended,
                flow: info.is_some_and(|info| info.flow),
                last_intended_unix_ns: 0,
            });
        }
        &mut self.attacks[index]
    }

    fn finish(
        mut self,
        tables: RunTables,
        summaries: Vec<SourceSummary>,
        sample_tables: SampleTables,
    ) -> RunData {
        let (origin_unix_ns, zero) = match self.origin_unix_ns {
            Some(origin) => (Some(origin), TimeZero::FirstRequest),
            None => (self.samples.first_unix_ns(), TimeZero::FirstSample),
        };
        let samples = self.samples.finish(sample_tables);
        self.replay.finish(&mut self.bins);
        let bounds = Bounds {
            health: self.health,
            min_success_ratio: self.min_success_ratio,
            traces: self.traces,
        };
        let summary = self.measure.close(&summaries, &tables, bounds);
        let every_ns = self.bins.every_ns();
        let mut attacks = self.attacks;
        share_the_ok_grid(&mut attacks);
        let flows = self.flows.finish(&tables);
        let report::Summary {
            facts,
            mut groups,
            attacks: latencies,
            ..
        } = summary;
        // Without `-by` the summary holds the whole run's report alone.
        let (_, report) = groups.swap_remove(0);
        let mut latencies = latencies.into_iter();
        let attacks = (attacks.into_iter())
            .map(|attack| attack.finish(latencies.next()))
            .collect();
        RunData {
            origin_unix_ns: origin_unix_ns.unwrap_or(0),
            zero,
            report,
            replay: facts.replay.clone(),
            facts,
            tables,
            summaries,
            attacks,
            rows: self.bins.finish(),
            every_ns,
            window_ns: self.window_ns,
            samples,
            flows,
        }
    }
}

/// Failed requests too many to draw them all are reduced on a grid no finer than the
/// OK requests', so a red dot stands for as much as a blue one: a 0.5% error rate does
/// not outweigh the other 99.5% on the scatter. Failed requests that fit their budget
/// are all drawn.
fn share_the_ok_grid(attacks: &mut [AttackGather]) {
    let ok_grid = attacks
        .iter()
        .filter_map(|attack| attack.ok.grid_size())
        .reduce(GridSize::coarsest);
    if let Some(ok_grid) = ok_grid {
        for attack in attacks {
            attack.failed.coarsen_to(ok_grid);
        }
    }
}

impl AttackGather {
    /// The attack's points, and its latency from the summary (`None`: it sent nothing).
    fn finish(self, latency: Option<AttackLatency>) -> AttackData {
        let (requests, max_latency_ns, latency) = match latency {
            Some(l) => (l.requests, l.max_ns, l.quantiles),
            None => (0, 0, report::Distribution::new().into_quantiles()),
        };
        AttackData {
            ok: self.ok.finish(),
            failed: self.failed.finish(),
            latency,
            requests,
            max_latency_ns,
            last_intended_unix_ns: self.last_intended_unix_ns,
            counts_intended: self.counts_intended,
        }
    }
}

/// A usable constant rate from a header.
pub fn constant_rate(rate_per_sec: Option<f64>) -> Option<f64> {
    rate_per_sec.filter(|rate| rate.is_finite() && *rate > 0.0)
}

/// What a point is called on hover: its error, else its status.
fn point_label(record: &Record) -> u32 {
    if record.error != 0 {
        ERROR_LABEL.saturating_add(record.error)
    } else {
        u32::from(record.status)
    }
}

/// HTTP statuses as themselves; transport errors (status 0) by their kind.
fn status_key(record: &Record, tables: &RunTables) -> StatusKey {
    if record.status != 0 {
        return StatusKey::from(record.status);
    }
    let kind = tables
        .error(record.error)
        .map_or(ErrorKind::Other, |error| error.kind);
    let index = ErrorKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
    TRANSPORT + index as StatusKey
}

/// The name of a status key: `200`, or `0 timeout` for a transport error.
pub fn status_name(key: StatusKey) -> String {
    if key < TRANSPORT {
        return key.to_string();
    }
    let kind = ErrorKind::ALL
        .get((key - TRANSPORT) as usize)
        .copied()
        .unwrap_or(ErrorKind::Other);
    format!("0 {}", kind.name().replace('_', " "))
}
