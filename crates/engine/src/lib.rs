//! The HTTP engine: sends a [`workload::Plan`]'s requests and streams one
//! [`record::Record`] per request to a [`record::RecordWriter`].
//!
//! - [`run_attack`] takes an [`AttackConfig`] and a writer and runs to the end of the
//!   plan or until its [`StopHandle`] says stop.
//! - One worker thread per core, each a small epoll loop (`worker.rs`) in the manner
//!   of wrk: connections, pacing and timeouts are the worker's own; records leave in
//!   batches to the collector (`collector.rs`), the only writer.
//! - Open model: request k is due at `plan.intended_ns(k)`; latency counts from that
//!   instant and the send lag is recorded. When every connection is busy the worker
//!   opens more up to the caps; beyond them requests wait and their lag shows.
//! - HTTP/1.1 with keep-alive over TCP, Unix sockets and TLS (rustls). Requests are
//!   rendered to bytes once (`render.rs`); responses are parsed incrementally
//!   (`response.rs`) and counted, not stored.
//!
//! Errors that stop a run are [`EngineError`]; errors of single requests are
//! recorded as [`record::ErrorKind`]s and counted.

mod clock;
mod collector;
mod conn;
mod errors;
mod hosts;
mod inflight;
mod lazy;
mod poller;
mod redirect;
mod render;
mod response;
mod shared;
mod stop;
mod tls;
mod worker;

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel, sync_channel};
use std::time::Duration;

use record::{
    AttackEnd, AttackInfo, Compression, LoadModel, RecordWriter, RunEnd, RunHeader, StopReason,
    TargetInfo,
};
use workload::{Pacing, Plan, Target};

pub use clock::Clock;
pub use lazy::{TargetIter, TargetStream};
pub use stop::StopHandle;
pub use tls::TlsOptions;

use crate::collector::Collector;
use crate::errors::{ErrorCache, ErrorRegistry};
use crate::shared::Shared;
use crate::worker::{Worker, WorkerReport, WorkerSetup};

/// Everything an attack needs; the CLI builds it from flags.
#[derive(Debug, Clone)]
pub struct AttackConfig {
    /// The attack's name in records and reports.
    pub name: String,
    pub targets: Targets,
    pub plan: Plan,
    /// Per request, from dispatch to the last response byte (connect included).
    pub timeout: Duration,
    pub keepalive: bool,
    /// Redirects to follow; -1 follows none and counts 3xx as success (vegeta).
    pub redirects: i32,
    /// Open model: requests in flight at most (vegeta's `-max-workers`).
    pub max_in_flight: u64,
    /// Connections opened before time zero (vegeta's `-workers`).
    pub initial_connections: u64,
    /// Open connections per target host at most (vegeta's `-connections`).
    pub connections_per_host: u64,
    /// Event-loop threads.
    pub threads: usize,
    /// Read at most this many body bytes per response, then close the connection.
    pub max_body: Option<u64>,
    pub tls: TlsOptions,
    pub local_addr: Option<IpAddr>,
    pub unix_socket: Option<PathBuf>,
}

/// The targets of an attack: a list sent round-robin, or a stream read on demand.
#[derive(Debug, Clone)]
pub enum Targets {
    List(Vec<Target>),
    /// vegeta's `-lazy`: each target is sent once, in order; the attack ends with
    /// the stream (or its bounds).
    Stream(TargetStream),
}

/// How an attack went, for the caller's exit code and summary.
#[derive(Debug, Clone, PartialEq)]
pub struct AttackOutcome {
    pub sent: u64,
    pub completed: u64,
    /// Requests that were due but never left (the generator was behind at the end).
    pub unsent: u64,
    pub reason: StopReason,
}

/// Why an attack could not run.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("invalid attack: {0}")]
    Config(String),
    #[error("cannot resolve {host}: {reason}")]
    Resolve { host: String, reason: String },
    #[error("tls{}: {reason}", path.as_ref().map(|p| format!(" ({})", p.display())).unwrap_or_default())]
    Tls {
        path: Option<PathBuf>,
        reason: String,
    },
    #[error("{0}")]
    Record(#[source] record::RecordError),
    #[error("{0}")]
    Targets(#[source] workload::WorkloadError),
    #[error("worker: {0}")]
    Io(#[from] std::io::Error),
}

impl EngineError {
    /// The I/O error underneath, if any (a closed output pipe is not a failure).
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            EngineError::Record(err) => err.io_error(),
            EngineError::Io(err) => Some(err),
            _ => None,
        }
    }
}

/// Runs the attack, writing records to `out`, and returns the writer when done.
pub fn run_attack<W: Write + Send>(
    config: &AttackConfig,
    out: W,
    stop: &StopHandle,
) -> Result<(W, AttackOutcome), EngineError> {
    validate(config)?;
    raise_open_file_limit();
    let shared = Arc::new(Shared::prepare(config)?);
    let target_registry = Arc::new(lazy::TargetRegistry::default());
    let feeder_result: lazy::FeederResult = Arc::default();
    let plan = Arc::new(config.plan.clone());
    let threads = thread_count(config);
    let registry = Arc::new(ErrorRegistry::default());
    let (ready_tx, ready_rx) = channel::<()>();
    let mut clock_senders = Vec::new();
    let (report_tx, report_rx) = sync_channel::<WorkerReport>(threads * 64);
    let mut recycle = Vec::new();
    let mut handles = Vec::new();
    let mut lazy_queues = match &config.targets {
        Targets::List(_) => Vec::new(),
        Targets::Stream(stream) => {
            let setup = lazy::FeederSetup {
                stream: stream.clone(),
                keepalive: config.keepalive,
                unix_socket: config.unix_socket.clone(),
                registry: Arc::clone(&target_registry),
                stop: stop.clone(),
                result: Arc::clone(&feeder_result),
            };
            lazy::start_feeder(setup, threads)?
        }
    }
    .into_iter();
    for index in 0..threads {
        let (recycle_tx, recycle_rx) = sync_channel(4);
        recycle.push(recycle_tx);
        let setup = WorkerSetup {
            index,
            stride: threads as u64,
            clock: Clock::start(),
            plan: Arc::clone(&plan),
            shared: Arc::clone(&shared),
            max_in_flight: share(caps(config).0, threads, index),
            max_per_host: share(caps(config).1, threads, index).max(1),
            reports: report_tx.clone(),
            recycled: recycle_rx,
            stop: stop.clone(),
            errors: ErrorCache::new(Arc::clone(&registry)),
            lazy: lazy_queues.next(),
        };
        let prewarm = share(config.initial_connections, threads, index);
        let (clock_tx, clock_rx) = sync_channel(1);
        clock_senders.push(clock_tx);
        let ready = ready_tx.clone();
        handles.push(
            std::thread::Builder::new()
                .name(format!("loadlab-worker-{index}"))
                .spawn(move || run_worker(setup, prewarm, ready, &clock_rx))?,
        );
    }
    drop((report_tx, ready_tx));
    // Every worker has warmed up (or died, dropping its sender): time zero is now.
    while ready_rx.recv().is_ok() {}
    let clock = Clock::start();
    for sender in clock_senders {
        let _ = sender.send(clock);
    }
    let registries = Registries {
        errors: &registry,
        targets: &target_registry,
    };
    // The collector gets its own thread at the lowest priority: on a shared core it
    // must use the workers' idle time, not preempt a worker that is due to send.
    let result = std::thread::scope(|scope| {
        let collector = std::thread::Builder::new()
            .name("loadlab-collector".to_owned())
            .spawn_scoped(scope, move || {
                let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
                collect(config, clock, out, stop, &report_rx, recycle, registries)
            })?;
        collector
            .join()
            .map_err(|_| EngineError::Io(std::io::Error::other("the collector thread panicked")))?
    });
    let mut worker_error = None;
    for handle in handles {
        match handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(err)) => worker_error = Some(err),
            Err(_) => worker_error = Some(std::io::Error::other("a worker thread panicked")),
        }
    }
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

fn collect<W: Write>(
    config: &AttackConfig,
    clock: Clock,
    out: W,
    stop: &StopHandle,
    reports: &Receiver<WorkerReport>,
    recycle: Vec<std::sync::mpsc::SyncSender<Vec<record::Record>>>,
    registries: Registries<'_>,
) -> Result<(W, AttackOutcome), EngineError> {
    let writer = RecordWriter::new(out, &header(config, clock), Compression::Zstd { level: 3 })
        .map_err(EngineError::Record);
    let writer = writer.inspect_err(|_| stop.abort())?;
    let threads = recycle.len();
    let mut collector = Collector {
        writer,
        clock,
        errors_written: 0,
        targets_written: match &config.targets {
            Targets::List(list) => list.len(),
            Targets::Stream(_) => 0,
        },
        watermarks: vec![0; threads],
        counters: vec![Default::default(); threads],
        recycle,
        stop: stop.clone(),
    };
    collector.run(reports, registries)?;
    let totals = collector.totals();
    let end_ns = clock.now_ns();
    let asked = config
        .plan
        .asked_by(end_ns)
        .unwrap_or(totals.sent)
        .max(totals.sent);
    let reason = if stop.is_stopping() {
        StopReason::Interrupted
    } else {
        StopReason::Completed
    };
    let outcome = AttackOutcome {
        sent: totals.sent,
        completed: totals.completed,
        unsent: asked - totals.sent,
        reason,
    };
    let end = RunEnd {
        at_unix_ns: clock.unix_ns(end_ns),
        reason,
        detail: String::new(),
        attacks: vec![AttackEnd {
            asked,
            sent: totals.sent,
            unsent: outcome.unsent,
            asked_span_ns: asked_span_ns(&config.plan, asked),
        }],
        cpu_ns: collector::process_cpu_ns(),
        peak_rss_bytes: collector::peak_resident_bytes(),
    };
    let out = collector.writer.finish(&end).map_err(EngineError::Record)?;
    Ok((out, outcome))
}

/// The shared tables the collector writes into dictionary blocks.
#[derive(Clone, Copy)]
pub(crate) struct Registries<'a> {
    pub errors: &'a ErrorRegistry,
    pub targets: &'a lazy::TargetRegistry,
}

/// From the first to the last intended send the plan asked for.
fn asked_span_ns(plan: &Plan, asked: u64) -> u64 {
    match asked.checked_sub(1) {
        Some(last) => plan.intended_ns(last).unwrap_or(0),
        None => 0,
    }
}

fn header(config: &AttackConfig, clock: Clock) -> RunHeader {
    let (model, rate_per_sec, concurrency) = match &config.plan.pacing {
        Pacing::Open(_) => (
            LoadModel::Open,
            config
                .plan
                .intended_ns(1)
                .filter(|&t| t > 0)
                .map(|t| 1e9 / t as f64),
            Some(config.max_in_flight),
        ),
        Pacing::Closed { users } => (LoadModel::Closed, None, Some(*users)),
    };
    RunHeader {
        tool: format!("loadlab {}", env!("CARGO_PKG_VERSION")),
        start_unix_ns: clock.start_unix_ns(),
        attacks: vec![AttackInfo {
            name: config.name.clone(),
            model,
            schedule: config.plan.describe(),
            rate_per_sec,
            concurrency,
            timeout_ns: config.timeout.as_nanos() as u64,
        }],
        targets: match &config.targets {
            Targets::List(list) => list
                .iter()
                .map(|t| TargetInfo {
                    method: t.method.clone(),
                    url: t.url.to_string(),
                })
                .collect(),
            Targets::Stream(_) => Vec::new(),
        },
    }
}

fn validate(config: &AttackConfig) -> Result<(), EngineError> {
    let fail = |reason: &str| Err(EngineError::Config(reason.to_owned()));
    if matches!(&config.targets, Targets::List(list) if list.is_empty()) {
        return fail("no targets");
    }
    if config.timeout.is_zero() {
        return fail("timeout must be longer than zero");
    }
    if config.threads == 0 {
        return fail("threads must be at least 1");
    }
    if config.connections_per_host == 0 {
        return fail("connections must be at least 1");
    }
    match config.plan.pacing {
        Pacing::Closed { users: 0 } => fail("the closed model needs at least one user"),
        Pacing::Open(_) if config.max_in_flight == 0 => fail("max-workers must be at least 1"),
        _ => Ok(()),
    }
}

/// (in-flight cap, per-host connection cap) for the whole run.
fn caps(config: &AttackConfig) -> (u64, u64) {
    let in_flight = match config.plan.pacing {
        Pacing::Open(_) => config.max_in_flight,
        Pacing::Closed { users } => users,
    };
    (in_flight, config.connections_per_host)
}

fn thread_count(config: &AttackConfig) -> usize {
    let (in_flight, _) = caps(config);
    config
        .threads
        .min(usize::try_from(in_flight).unwrap_or(usize::MAX))
        .max(1)
}

/// Worker `index`'s share of `total` split over `workers`.
fn share(total: u64, workers: usize, index: usize) -> usize {
    let workers = workers as u64;
    let base = total / workers + u64::from((index as u64) < total % workers);
    usize::try_from(base).unwrap_or(usize::MAX)
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
