//! Starting and finishing a run: check the config, prepare what workers share, start
//! the workers (and lazy feeders), give them one time zero, collect on a low-priority
//! thread, and write the end of the record file.

use std::io::Write;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

use record::{
    AttackEnd, AttackInfo, Compression, LoadModel, Record, RecordWriter, RunEnd, RunHeader,
    StopReason, TargetInfo,
};
use workload::{Pacing, Plan, TraceSampler};

use crate::clock::Clock;
use crate::collector::{self, Collector, Registries};
use crate::errors::{ErrorCache, ErrorRegistry};
use crate::exemplars::ExemplarKeeper;
use crate::lazy::{self, FeederResult, LazyTarget};
use crate::observer::RunObserver;
use crate::replay_feed::{self, ReplayFeeder, ReplayOutput};
use crate::sample_feed::SampleFeed;
use crate::shared::{Shared, TraceHeaders};
use crate::split::Split;
use crate::start;
use crate::stop_rules::RuleWatcher;
use crate::stream_tally::{StreamSeconds, StreamTally};
use crate::target_registry::{TargetRegistry, target_info};
use crate::worker::{AttackSetup, Worker, WorkerSetup};
use crate::worker_report::WorkerReport;
use crate::{EngineError, RunConfig, RunOutcome, StopHandle, Targets};

/// Target `index` of a flow as its step (or its stream step's action or events) names
/// it; a WebSocket's URL is shown with its own scheme.
fn flow_target_info(flow: &workload::Flow, index: usize, info: &mut TargetInfo) {
    let (step, name, checks) = match flow.steps.get(index) {
        // A stream step's checks judge its events, which have a target of their own.
        Some(step) if step.stream.is_some() => (step, step.name.clone(), Vec::new()),
        Some(step) => (
            step,
            step.name.clone(),
            step.checks.iter().map(|c| c.name.clone()).collect(),
        ),
        None => {
            let extra = &flow.stream_targets[index - flow.steps.len()];
            (
                &flow.steps[extra.step],
                extra.name.clone(),
                extra.checks.clone(),
            )
        }
    };
    if let Some(workload::Stream::WebSocket(_)) = step.stream {
        info.method = "WS".to_owned();
        if let Some(rest) = info.url.strip_prefix("http") {
            info.url = format!("ws{rest}");
        }
    }
    // A `stream` step keeps its own method (a POST, often).
    if let Some(workload::Stream::Events(events)) = step.stream
        && !events.whole_answer
    {
        info.method = "SSE".to_owned();
    }
    info.step = Some(name);
    info.checks = checks;
}

/// [`run_with_samples`](crate::run_with_samples), shown to `observer` as it goes (from
/// the collector thread: each batch of records, each stats sample, new errors, the
/// stop rules' state).
pub fn run_with_observer<W: Write + Send>(
    config: &RunConfig,
    out: W,
    stop: &StopHandle,
    samples: &mut dyn SampleFeed,
    observer: &mut dyn RunObserver,
) -> Result<(W, RunOutcome), EngineError> {
    validate(config)?;
    raise_open_file_limit();
    let shared = Arc::new(Shared::prepare(config)?);
    let threads = thread_count(config);
    let errors = Arc::new(ErrorRegistry::default());
    // Lazy targets get ids after every fixed target of every attack.
    let targets = Arc::new(TargetRegistry::default());
    targets.prefill(shared.attacks.iter().flat_map(|attack| {
        attack.targets.iter().enumerate().map(|(index, t)| {
            let mut info = target_info(&t.target);
            if let Some(flow) = attack.flow.as_deref() {
                flow_target_info(flow, index, &mut info);
            }
            info
        })
    }));
    let feeder_result: FeederResult = Arc::default();
    let replays = Arc::new(ReplayOutput::new(config.attacks.len()));
    let feeders = Feeders {
        registry: &targets,
        stop,
        result: &feeder_result,
        replays: &replays,
    };
    let queues = start_feeders(config, threads, &feeders)?;
    let workers = start_workers(config, &shared, threads, queues, stop, &errors)?;
    let (clock, start_skew_ns) = time_zero(&workers.ready, workers.clocks, config);
    samples.start(clock);
    observer.start(clock);
    let registries = Registries {
        errors: &errors,
        targets: &targets,
        replays: &replays,
    };
    let channels = Channels {
        reports: workers.reports,
        recycle: workers.recycle,
        tallies: workers.tallies,
        samples,
        observer,
    };
    let start = Start {
        clock,
        skew_ns: start_skew_ns,
    };
    let result =
        collect_on_own_thread(move || collect(config, start, out, stop, channels, registries));
    let worker_error = join_workers(workers.handles);
    let (out, outcome) = result?;
    if let Some(err) = feeder_result
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
    {
        return Err(err);
    }
    match worker_error {
        Some(err) => Err(EngineError::Io(err)),
        None => Ok((out, outcome)),
    }
}

/// The started worker threads and the channels to and from them.
struct Workers {
    handles: Vec<std::thread::JoinHandle<std::io::Result<()>>>,
    /// Closed once every worker has warmed up (or died).
    ready: Receiver<()>,
    /// One per worker: the run's clock, sent at time zero.
    clocks: Vec<SyncSender<Clock>>,
    reports: Receiver<WorkerReport>,
    /// One per worker: emptied record vectors going back.
    recycle: Vec<SyncSender<Vec<Record>>>,
    /// One per worker: its streams' running counts.
    tallies: Vec<Arc<StreamTally>>,
}

/// Starts one worker thread per `threads`, each with its split of every attack's caps
/// and its queue of each lazy attack; they warm up and wait for time zero.
fn start_workers(
    config: &RunConfig,
    shared: &Arc<Shared>,
    threads: usize,
    mut queues: Vec<Vec<Receiver<LazyTarget>>>,
    stop: &StopHandle,
    errors: &Arc<ErrorRegistry>,
) -> Result<Workers, EngineError> {
    let (report_tx, reports) = sync_channel::<WorkerReport>(threads * 64);
    let (ready_tx, ready) = channel::<()>();
    let (mut recycle, mut clocks, mut handles) = (Vec::new(), Vec::new(), Vec::new());
    let mut tallies: Vec<Arc<StreamTally>> = Vec::new();
    for index in 0..threads {
        let tally = Arc::new(StreamTally::default());
        tallies.push(Arc::clone(&tally));
        let (recycle_tx, recycle_rx) = sync_channel(4);
        let (clock_tx, clock_rx) = sync_channel(1);
        recycle.push(recycle_tx);
        clocks.push(clock_tx);
        let split = Split {
            index,
            workers: threads,
        };
        let setup = WorkerSetup {
            index,
            workers: threads,
            clock: Clock::start(),
            shared: Arc::clone(shared),
            attacks: config
                .attacks
                .iter()
                .zip(&mut queues)
                .map(|(attack, queues)| AttackSetup {
                    max_in_flight: split.of(in_flight_cap(
                        &attack.settings.plan,
                        attack.settings.max_in_flight,
                    )),
                    lazy: queues.pop(),
                    flow: attack.flow.clone(),
                    replay: matches!(attack.targets, Targets::Replay(_)),
                })
                .collect(),
            max_per_host: split.of(config.settings.connections_per_host).max(1),
            reports: report_tx.clone(),
            recycled: recycle_rx,
            stop: stop.clone(),
            errors: ErrorCache::new(Arc::clone(errors)),
            precision_ns: config.settings.precision_ns,
            tally,
        };
        let (prewarm, ready) = (
            split.of(config.settings.initial_connections),
            ready_tx.clone(),
        );
        handles.push(
            std::thread::Builder::new()
                .name(format!("loadlab-worker-{index}"))
                .spawn(move || run_worker(setup, prewarm, ready, &clock_rx))?,
        );
    }
    Ok(Workers {
        handles,
        ready,
        clocks,
        reports,
        recycle,
        tallies,
    })
}

/// Waits until every worker has warmed up (or died, dropping its sender), then starts
/// the run's clock and hands it to every worker: time zero is now, or `-start-at`.
/// Also returns how late time zero came (ns).
fn time_zero(
    ready: &Receiver<()>,
    clocks: Vec<SyncSender<Clock>>,
    config: &RunConfig,
) -> (Clock, i64) {
    while ready.recv().is_ok() {}
    let (clock, skew_ns) = start::start_clock(config.settings.start_at_unix_ns);
    for sender in clocks {
        let _ = sender.send(clock);
    }
    (clock, skew_ns)
}

/// Time zero and how late it came (for the header).
#[derive(Clone, Copy)]
struct Start {
    clock: Clock,
    skew_ns: i64,
}

/// What every feeder shares.
struct Feeders<'a> {
    registry: &'a Arc<TargetRegistry>,
    stop: &'a StopHandle,
    result: &'a FeederResult,
    replays: &'a Arc<ReplayOutput>,
}

/// One feeder per streamed or replayed attack; `queues[attack]` holds a queue per
/// worker.
fn start_feeders(
    config: &RunConfig,
    threads: usize,
    feeders: &Feeders<'_>,
) -> Result<Vec<Vec<Receiver<LazyTarget>>>, EngineError> {
    let mut all = Vec::new();
    for (index, attack) in config.attacks.iter().enumerate() {
        let queues = match &attack.targets {
            Targets::List(_) => Vec::new(),
            Targets::Stream(stream) => {
                let setup = lazy::FeederSetup {
                    stream: stream.clone(),
                    keepalive: attack.settings.keepalive,
                    trace: TraceHeaders::of(&config.settings),
                    unix_socket: config.settings.unix_socket.clone(),
                    registry: Arc::clone(feeders.registry),
                    stop: feeders.stop.clone(),
                    result: Arc::clone(feeders.result),
                    shard: attack.settings.plan.shard,
                };
                lazy::start_feeder(setup, threads)?
            }
            Targets::Replay(replay) => {
                let feeder = ReplayFeeder {
                    replay: Arc::clone(replay),
                    attack: index as u16,
                    shard: attack.settings.plan.shard,
                    end_ns: attack.settings.plan.end_ns(),
                    trace: TraceHeaders::of(&config.settings),
                    unix_socket: config.settings.unix_socket.clone(),
                    registry: Arc::clone(feeders.registry),
                    output: Arc::clone(feeders.replays),
                    stop: feeders.stop.clone(),
                    result: Arc::clone(feeders.result),
                };
                replay_feed::start(feeder, threads)?
            }
        };
        // Reversed so that `pop` hands worker 0 its queue first.
        all.push(queues.into_iter().rev().collect());
    }
    Ok(all)
}

fn run_worker(
    setup: WorkerSetup,
    prewarm: usize,
    ready: Sender<()>,
    clock: &Receiver<Clock>,
) -> std::io::Result<()> {
    let _guard = AbortOnPanic(setup.stop.clone());
    let mut worker = Worker::new(setup)?;
    let warmed = worker.prewarm(prewarm);
    drop(ready);
    warmed?;
    let Ok(clock) = clock.recv() else {
        return Ok(());
    };
    worker.set_clock(clock);
    worker.run()
}

/// A worker that panics stops the whole run instead of leaving it half-running.
struct AbortOnPanic(StopHandle);

impl Drop for AbortOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.abort();
        }
    }
}

fn join_workers(
    handles: Vec<std::thread::JoinHandle<std::io::Result<()>>>,
) -> Option<std::io::Error> {
    let mut worker_error = None;
    for handle in handles {
        match handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(err)) => worker_error = Some(err),
            Err(_) => worker_error = Some(std::io::Error::other("a worker thread panicked")),
        }
    }
    worker_error
}

/// What flows into the collector: worker reports and samples; and back to the
/// workers: emptied record vectors.
struct Channels<'a> {
    reports: Receiver<WorkerReport>,
    recycle: Vec<SyncSender<Vec<Record>>>,
    tallies: Vec<Arc<StreamTally>>,
    samples: &'a mut dyn SampleFeed,
    observer: &'a mut dyn RunObserver,
}

/// The collector gets its own thread at the lowest priority: on a shared core it must
/// use the workers' idle time, not preempt a worker that is due to send.
fn collect_on_own_thread<W: Write + Send>(
    collect: impl FnOnce() -> Result<(W, RunOutcome), EngineError> + Send,
) -> Result<(W, RunOutcome), EngineError> {
    std::thread::scope(|scope| {
        let collector = std::thread::Builder::new()
            .name("loadlab-collector".to_owned())
            .spawn_scoped(scope, move || {
                let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
                collect()
            })?;
        collector
            .join()
            .map_err(|_| EngineError::Io(std::io::Error::other("the collector thread panicked")))?
    })
}

fn collect<W: Write>(
    config: &RunConfig,
    start: Start,
    out: W,
    stop: &StopHandle,
    channels: Channels<'_>,
    registries: Registries<'_>,
) -> Result<(W, RunOutcome), EngineError> {
    let Channels {
        reports,
        recycle,
        tallies,
        samples,
        observer,
    } = channels;
    let clock = start.clock;
    // One snapshot for the header and the count: lazy feeders may be adding targets.
    let known_targets = registries.targets.snapshot();
    let targets_written = known_targets.len();
    // Before any record: a flow's steps and checks name what the records count.
    observer.targets(0, &known_targets);
    let writer = RecordWriter::new(
        out,
        &header(config, start, known_targets),
        Compression::Zstd { level: 3 },
    )
    .map_err(EngineError::Record);
    let writer = writer.inspect_err(|_| stop.abort())?;
    let threads = recycle.len();
    let mut collector = Collector {
        writer,
        clock,
        errors_written: 0,
        targets_written,
        watermarks: vec![0; threads],
        counters: vec![Default::default(); threads],
        attack_counters: vec![Vec::new(); threads],
        watcher: RuleWatcher::new(&config.settings.stop_rules, clock.start_unix_ns()),
        plans: config
            .attacks
            .iter()
            .map(|a| a.settings.plan.clone())
            .collect(),
        fired: None,
        recycle,
        stop: stop.clone(),
        logged: Vec::new(),
        connections: Vec::new(),
        streams: StreamSeconds::new(tallies),
        last_stats_unix_ns: clock.start_unix_ns(),
        exemplars: (config.settings.trace).map(|trace| {
            let sampler = TraceSampler::new(trace, config.settings.seed);
            ExemplarKeeper::new(sampler, own_traceparents(config))
        }),
    };
    collector.run(&reports, registries, samples, observer)?;
    observer.finish();
    let end_ns = clock.now_ns();
    // A stop ends what was asked: the requests of the drain were never due.
    let asked_end_ns = stop
        .asked_at()
        .map_or(end_ns, |at| clock.offset_ns(at).min(end_ns));
    let ends = attack_ends(config, &collector, asked_end_ns);
    let totals = collector.totals();
    let fired = collector.fired.take();
    let reason = match (&fired, stop.is_stopping(), stop.detail()) {
        (Some(_), _, _) | (None, true, Some(_)) => StopReason::StopRule,
        (None, true, None) => StopReason::Interrupted,
        (None, false, _) => StopReason::Completed,
    };
    let unsent = ends.iter().map(|e| e.unsent).sum();
    let end = RunEnd {
        at_unix_ns: clock.unix_ns(end_ns),
        reason,
        detail: fired.as_ref().map_or_else(
            || stop.detail().unwrap_or_default().to_owned(),
            workload::Fired::describe,
        ),
        attacks: ends,
        cpu_ns: collector::process_cpu_ns(),
        peak_rss_bytes: collector::peak_resident_bytes(),
        replays: replay_ends(config, registries.replays),
        exemplars: (collector.exemplars.take()).map_or_else(Vec::new, ExemplarKeeper::finish),
    };
    let out = collector.writer.finish(&end).map_err(EngineError::Record)?;
    Ok((
        out,
        RunOutcome {
            sent: totals.sent,
            completed: totals.completed,
            unsent,
            reason,
            fired,
            wakeups: totals.wakeups,
            capped: totals.cap_waits > 0,
        },
    ))
}

/// Record ids of the fixed targets that set their own `traceparent` (in the order of
/// the run's target table: each attack's list in turn): their requests carry the
/// user's ids, not the sampler's.
pub fn own_traceparents(config: &RunConfig) -> Vec<u32> {
    let lists = config.attacks.iter().map(|attack| match &attack.targets {
        Targets::List(list) => list.as_slice(),
        Targets::Stream(_) | Targets::Replay(_) => &[],
    });
    let has_own = |target: &workload::Target| {
        (target.headers.iter()).any(|h| h.name.eq_ignore_ascii_case(workload::TRACEPARENT))
    };
    (lists.flatten().enumerate())
        .filter(|(_, target)| has_own(target))
        .map(|(id, _)| id as u32)
        .collect()
}

/// Per attack: what the plan asked for up to `end_ns` (the end, or the stop), what
/// left, what never did.
fn attack_ends<W: Write>(
    config: &RunConfig,
    collector: &Collector<W>,
    end_ns: u64,
) -> Vec<AttackEnd> {
    config
        .attacks
        .iter()
        .enumerate()
        .map(|(a, attack)| {
            let counters = || collector.attack_counters.iter().filter_map(|w| w.get(a));
            let sent: u64 = counters().map(|c| c.sent).sum();
            // A flow's plan asks for runs started, and its `sent` counts every step's
            // request: only a plain attack's sends can outnumber what was asked, and a
            // flow's unsent are the runs it never started.
            let asked_by_end = attack.settings.plan.asked_by(end_ns);
            let (asked, started) = match asked_by_end {
                Some(asked) if attack.flow.is_some() => (asked, counters().map(|c| c.starts).sum()),
                asked => (asked.unwrap_or(sent).max(sent), sent),
            };
            // A replay's shape has whole-second buckets; its last request says when
            // the asking ended.
            let asked_span_ns = match &attack.targets {
                Targets::Replay(replay) => replay.asked_span_ns(end_ns),
                _ => asked_span_ns(&attack.settings.plan, asked),
            };
            AttackEnd {
                asked,
                sent,
                unsent: asked.saturating_sub(started),
                asked_span_ns,
            }
        })
        .collect()
}

/// From the first to the last intended send the plan asked for.
fn asked_span_ns(plan: &Plan, asked: u64) -> u64 {
    asked
        .checked_sub(1)
        .and_then(|last| plan.intended_ns(last))
        .unwrap_or(0)
}

fn header(config: &RunConfig, start: Start, targets: Vec<TargetInfo>) -> RunHeader {
    RunHeader {
        tool: format!("loadlab {}", env!("CARGO_PKG_VERSION")),
        start_unix_ns: start.clock.start_unix_ns(),
        attacks: config.attacks.iter().map(attack_info).collect(),
        targets,
        seed: Some(config.settings.seed),
        shard: start::shard_info(config, start.skew_ns),
        precision_ns: Some(config.settings.precision_ns),
        trace: (config.settings.trace).map(|trace| record::TraceInfo {
            sample: trace.sample,
        }),
    }
}

/// How each replay attack's reading went.
fn replay_ends(config: &RunConfig, output: &ReplayOutput) -> Vec<record::ReplayEnd> {
    (config.attacks.iter().enumerate())
        .filter_map(|(index, attack)| match &attack.targets {
            Targets::Replay(replay) => {
                let loops = output.loops[index].load(std::sync::atomic::Ordering::Relaxed);
                Some(replay.end(index as u16, loops, output.first_pass(index)))
            }
            _ => None,
        })
        .collect()
}

fn attack_info(attack: &crate::AttackConfig) -> AttackInfo {
    let (model, rate_per_sec, concurrency) = match &attack.settings.plan.pacing {
        Pacing::Open(schedule) => (
            LoadModel::Open,
            constant_rate(schedule),
            Some(attack.settings.max_in_flight),
        ),
        // The whole run's users: every shard's header describes the same run.
        Pacing::Closed { .. } => (
            LoadModel::Closed,
            None,
            Some(attack.settings.plan.whole().max_users()),
        ),
    };
    AttackInfo {
        name: attack.settings.name.clone(),
        model,
        schedule: attack.settings.plan.describe(),
        rate_per_sec,
        flow: attack.flow.is_some(),
        replay: match &attack.targets {
            Targets::Replay(replay) => Some(replay.info()),
            _ => None,
        },
        concurrency,
        timeout_ns: u64::try_from(attack.settings.timeout.as_nanos()).unwrap_or(u64::MAX),
    }
}

/// The rate of a schedule that is one constant segment (the header's `rate_per_sec`).
fn constant_rate(schedule: &workload::Schedule) -> Option<f64> {
    let rate = schedule.value_at(0);
    (schedule.max_value() == rate && rate > 0.0).then_some(rate)
}

fn validate(config: &RunConfig) -> Result<(), EngineError> {
    let fail = |reason: String| Err(EngineError::Config(reason));
    if config.attacks.is_empty() {
        return fail("no attacks".to_owned());
    }
    if config.attacks.len() > usize::from(u16::MAX) {
        return fail("more than 65535 attacks".to_owned());
    }
    if config.threads() == 0 || config.settings.connections_per_host == 0 {
        return fail("threads and connections must be at least 1".to_owned());
    }
    for attack in &config.attacks {
        let name = &attack.settings.name;
        if matches!(&attack.targets, Targets::List(list) if list.is_empty()) {
            return fail(format!("attack {name:?}: no targets"));
        }
        if attack.settings.timeout.is_zero() {
            return fail(format!("attack {name:?}: timeout must be longer than zero"));
        }
        if matches!(attack.settings.plan.pacing, Pacing::Open(_))
            && attack.settings.max_in_flight == 0
        {
            return fail(format!("attack {name:?}: max-workers must be at least 1"));
        }
    }
    if config
        .attacks
        .iter()
        .any(|a| a.settings.plan.shard != config.shard())
    {
        return fail("every attack of a run must have the same shard".to_owned());
    }
    if let Some(at_ns) = config.settings.start_at_unix_ns {
        let late_ns = start::unix_now_ns().saturating_sub(at_ns);
        if late_ns > start::START_AT_TOLERANCE.as_nanos() as u64 {
            return fail(format!(
                "start-at {} is {:.1}s in the past",
                record::format_timestamp(at_ns),
                late_ns as f64 / 1e9
            ));
        }
    }
    let has_open = config
        .attacks
        .iter()
        .any(|a| matches!(a.settings.plan.pacing, Pacing::Open(_)));
    if let Some(rule) = config
        .settings
        .stop_rules
        .iter()
        .find(|r| r.needs_rate() && !has_open)
    {
        return fail(format!(
            "stop rule '{rule}' compares with the asked rate, but no attack has one (closed model)"
        ));
    }
    Ok(())
}

/// Requests in flight at most for an attack in the whole run.
fn in_flight_cap(plan: &Plan, max_in_flight: u64) -> u64 {
    match plan.pacing {
        Pacing::Open(_) => max_in_flight,
        Pacing::Closed { .. } => plan.max_users().max(1),
    }
}

/// One thread per core, but no more than there are requests to keep in flight.
fn thread_count(config: &RunConfig) -> usize {
    let in_flight: u64 = config
        .attacks
        .iter()
        .map(|a| in_flight_cap(&a.settings.plan, a.settings.max_in_flight))
        .sum();
    config
        .threads()
        .min(usize::try_from(in_flight).unwrap_or(usize::MAX))
        .max(1)
}

/// Many connections need many descriptors; ask for the hard limit.
fn raise_open_file_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
}
