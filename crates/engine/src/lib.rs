//! The HTTP engine: sends the requests of one or more attacks (scenarios) at once and
//! streams one [`record::Record`] per request to a [`record::RecordWriter`].
//!
//! - [`run`] takes a [`RunConfig`] (its [`AttackConfig`]s, run-wide options, stop
//!   rules) and a writer, and runs to the end of every plan, until a stop rule fires,
//!   or until its [`StopHandle`] says stop.
//! - One worker thread per core, each a small epoll loop (`worker/`) in the manner of
//!   wrk: connections, pacing and timeouts are the worker's own, every attack has its
//!   share in every worker (`attack.rs`); records leave in batches to the collector
//!   (`collector.rs`), the only writer, which also judges stop rules (`stop_rules.rs`).
//! - Open model: request k is due at `plan.intended_ns(k)`; latency counts from that
//!   instant to the answer's arrival as the kernel stamped it (`arrival.rs`), however
//!   late the worker reads it, and the send lag is recorded. When every connection is busy the worker
//!   opens more up to the caps; beyond them requests wait and their lag shows.
//!   Closed model: a user schedule and a think time.
//! - HTTP/1.1 with keep-alive over TCP, Unix sockets and TLS (rustls). Static requests
//!   are rendered to bytes once, templated ones per request into a reused buffer
//!   (`render.rs`); responses are parsed incrementally (`response.rs`) and counted.
//! - HTTP/2 over TLS (ALPN, on by default) and in cleartext with prior knowledge
//!   (`-h2c`): our own framing on the same event loop (`h2/`), requests re-framed
//!   from their HTTP/1.1 rendering, streams multiplexed on few connections.
//!
//! - [`run_with_samples`] also writes a [`SampleFeed`]'s frames (the monitor's)
//!   beside the records, started at the run's time zero.
//! - [`run_with_observer`] also shows the run to a [`RunObserver`] (a live view) from
//!   the collector thread, batch by batch; the workers do not know it.
//!
//! - Sharding: [`RunConfig::with_shard`] makes this process send one shard's requests
//!   (run-wide `seq`, targets and templates as one machine would); `start_at_unix_ns`
//!   puts time zero at a wall-clock instant (`start.rs`), and the header says which
//!   shard the file holds ([`plan_fingerprint`], start skew).
//!
//! - Replays ([`Targets::Replay`], a surveyed [`Replay`]): access logs sent at their
//!   logged times; the survey's shape is the plan's schedule, a feeder deals each
//!   logged request with its own due time (`replay.rs`, `replay_feed.rs`), and the
//!   collector writes what the log said beside the records.
//!
//! Errors that stop a run are [`EngineError`]; errors of single requests are
//! recorded as [`record::ErrorKind`]s and counted.

#![warn(missing_docs)]

mod arrival;
mod attack;
mod build;
mod clock;
mod collector;
mod conn;
mod errors;
mod exemplars;
mod flow_users;
mod grpc_messages;
mod grpc_reflect;
mod h2;
mod hosts;
mod inflight;
mod launch;
mod lazy;
mod observer;
mod poller;
#[cfg(test)]
mod proptests;
mod redirect;
mod render;
mod replay;
mod replay_feed;
mod response;
mod sample_feed;
mod session;
mod shared;
mod split;
mod start;
mod stop_handle;
mod stop_rules;
mod stream_tally;
mod target_registry;
mod tls;
mod worker;
mod worker_report;

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use record::StopReason;
use workload::{AttackSettings, DataTable, Fired, Plan, RunSettings, Shard, Target};

pub use clock::Clock;
pub use launch::{own_traceparents, run_with_observer};
pub use lazy::{TargetIter, TargetStream};
pub use observer::RunObserver;
pub use replay::{Replay, Survey};
pub use sample_feed::SampleFeed;
pub use start::{START_AT_TOLERANCE, plan_fingerprint, unix_now_ns};
pub use stop_handle::{STEER_SILENCE, StopHandle};
pub use tls::tool_client_config;
pub use workload::TlsOptions;

/// A whole run: its attacks and what they share. Built from what the user wrote by
/// [`RunConfig::from_fields`] (`build.rs`), or in code from [`RunConfig::single`].
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// One or more attacks (scenarios), all running at once.
    pub attacks: Vec<AttackConfig>,
    /// What they share: threads, connections, TLS, seed, stop rules, precision, HTTP/2.
    pub settings: RunSettings,
}

impl RunConfig {
    /// A run of one attack on one thread, every other setting at its default.
    pub fn single(attack: AttackConfig) -> RunConfig {
        RunConfig {
            attacks: vec![attack],
            settings: RunSettings {
                threads: Some(1),
                ..RunSettings::default()
            },
        }
    }

    /// The run sent by `shard` of N processes: every attack's plan keeps only its
    /// share of the requests and users (see [`workload::Plan`]).
    pub fn with_shard(mut self, shard: Shard) -> RunConfig {
        for attack in &mut self.attacks {
            attack.settings.plan.shard = shard;
        }
        self
    }

    /// The shard this process sends (every attack's is the same, checked at start).
    pub fn shard(&self) -> Shard {
        self.attacks
            .first()
            .map_or(Shard::WHOLE, |attack| attack.settings.plan.shard)
    }

    /// Event-loop threads: as set, else one per CPU the process may run on.
    pub fn threads(&self) -> usize {
        self.settings.threads.unwrap_or_else(build::available_cpus)
    }
}

/// One attack (scenario): its settings, its targets and its data rows. Built from
/// what the user wrote by [`AttackConfig::from_fields`], or in code from
/// [`AttackConfig::new`].
#[derive(Debug, Clone)]
pub struct AttackConfig {
    /// Its name, pacing, bounds and request options ([`AttackSettings::new`] has the
    /// defaults).
    pub settings: AttackSettings,
    /// What to send.
    pub targets: Targets,
    /// Rows for `{{csv.COLUMN}}` placeholders.
    pub data: Option<Arc<DataTable>>,
    /// A flow: its steps are the targets, in order, and its users send them.
    pub flow: Option<Arc<workload::Flow>>,
}

impl AttackConfig {
    /// An attack on `targets` with the defaults of [`workload::defaults`] (vegeta's:
    /// 30 s timeout, keep-alive, 10 redirects, 10,000 requests in flight at most).
    pub fn new(name: &str, targets: Vec<Target>, plan: Plan) -> AttackConfig {
        AttackConfig {
            settings: AttackSettings::new(name, plan),
            targets: Targets::List(targets),
            data: None,
            flow: None,
        }
    }
}

/// The targets of an attack: a list sent round-robin, or a stream read on demand.
#[derive(Debug, Clone)]
pub enum Targets {
    /// Fixed targets, sent in turn.
    List(Vec<Target>),
    /// vegeta's `-lazy`: each target is sent once, in order; the attack ends with
    /// the stream (or its bounds).
    Stream(TargetStream),
    /// `-replay`: the logs' requests, each sent at its logged time.
    Replay(Arc<Replay>),
}

/// How a run went, for the caller's exit code and summary.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// Requests that left.
    pub sent: u64,
    /// Requests that ended with an answer or an error (all of them, unless aborted).
    pub completed: u64,
    /// Requests that were due but never left (the generator was behind at the end or
    /// at the stop).
    pub unsent: u64,
    /// Why the run ended.
    pub reason: StopReason,
    /// The stop rule that ended the run, if one did.
    pub fired: Option<Fired>,
    /// Times the workers' event loops (and their session loops) woke from waiting, all
    /// workers together: what idling costs (a drain with requests in flight should
    /// wake rarely).
    pub wakeups: u64,
    /// Whether a due request ever waited at the in-flight cap (`-max-workers`) or a
    /// host's connection cap (`-connections`): at the server's latency, the rate
    /// asked needed more.
    pub capped: bool,
}

/// Why an attack could not run.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The run's configuration cannot run (the text says which field).
    #[error("invalid attack: {0}")]
    Config(String),
    /// A target's host has no address.
    #[error("cannot resolve {host}: {reason}")]
    Resolve {
        /// The host as written in the target.
        host: String,
        /// What the resolver said.
        reason: String,
    },
    /// The TLS configuration could not be built.
    #[error("tls{}: {reason}", path.as_ref().map(|p| format!(" ({})", p.display())).unwrap_or_default())]
    Tls {
        /// The certificate or key file at fault, if one was.
        path: Option<PathBuf>,
        /// What was wrong with it.
        reason: String,
    },
    /// Writing the record file failed.
    #[error(transparent)]
    Record(record::RecordError),
    /// An attack's or a run's fields, or its targets (read at start or lazily), were bad.
    #[error(transparent)]
    Targets(workload::WorkloadError),
    /// A file the fields name (targets, body, data, TLS) could not be read.
    #[error("{what}")]
    Read {
        /// The field and the file: `-targets t.txt`.
        what: String,
        /// The I/O error underneath.
        #[source]
        source: std::io::Error,
    },
    /// A thread, socket or epoll call failed.
    #[error("engine thread")]
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

/// Runs every attack at once, writing records to `out`; returns the writer when done.
pub fn run<W: Write + Send>(
    config: &RunConfig,
    out: W,
    stop: &StopHandle,
) -> Result<(W, RunOutcome), EngineError> {
    run_with_samples(config, out, stop, &mut sample_feed::NoSamples)
}

/// [`run`], with resource samples from `samples` written beside the records on the
/// run's clock.
pub fn run_with_samples<W: Write + Send>(
    config: &RunConfig,
    out: W,
    stop: &StopHandle,
    samples: &mut dyn SampleFeed,
) -> Result<(W, RunOutcome), EngineError> {
    run_with_observer(config, out, stop, samples, &mut observer::NoObserver)
}
