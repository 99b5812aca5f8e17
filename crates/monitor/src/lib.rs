//! The system under test on the same clock as the load: `loadlab monitor` and
//! `loadlab attack -monitor`.
//!
//! - [`MonitorConfig`] / [`SamplerSpec`]: what to sample, parsed from one grammar
//!   (`host`, `process=NAME_OR_REGEX`, `pid=N`, `prom=URL;...`, `postgres=URL`,
//!   `agent=HOST:PORT`) shared by both commands.
//! - [`Monitor::start`] starts one thread per sampler (process groups share one /proc
//!   scan) on a grid anchored at a [`ClockAnchor`], and returns a [`MonitorHandle`]
//!   whose receiver yields `record::SampleFrame`s, ready for
//!   `record::RecordWriter::write_samples`. [`MonitorHandle::stop`] ends it.
//! - Samplers: host CPU, memory, network, TCP states, fds (`host.rs`, `tcp_states.rs`,
//!   `sockstat.rs`, `netstat.rs`); process groups (`process.rs`, `process_match.rs`,
//!   and the limits their cgroups and affinity set: `cgroup.rs`, `cpu_allowance.rs`);
//!   logs (`log.rs`);
//!   Prometheus endpoints (`prom.rs` over `prom_parse.rs`, `rates.rs`, `http_get.rs`);
//!   PostgreSQL (`pg.rs`); a remote agent (`agent.rs`).
//! - [`AgentServer`]: `loadlab monitor -serve`, streaming frames to attack-side clients.
//! - [`TraceStoreClient`]: after a run, reads traces back from a trace store's query
//!   API (Jaeger's) for `report -trace-store` (`trace_store.rs`).
//! - What a sampler thread is given and must do (`sampler.rs`: the trait, its tick, the
//!   stop every thread watches) is imported by each sampler; `runner.rs` starts and
//!   drives them.
//!
//! Faults (a process that is gone, an endpoint that is down, slow or returns garbage, a
//! login refused, a counter reset) become gaps with a reason, never errors: a monitor
//! must not disturb the run it watches. Errors are [`MonitorError`]; each names the
//! spec or address at fault, with secrets redacted ([`redact_url`], the one rule in `units::redact`).

#![warn(missing_docs)]

mod agent;
mod cgroup;
mod clock;
mod cpu_allowance;
mod histogram;
mod host;
mod http_get;
mod hub;
mod log;
mod netstat;
mod pg;
mod proc_stat;
mod process;
mod process_match;
mod prom;
mod prom_parse;
#[cfg(test)]
mod proptests;
mod rates;
mod runner;
mod sampler;
mod sockstat;
mod spec;
mod tcp_states;
mod trace_store;

pub use agent::AgentServer;
pub use clock::ClockAnchor;
pub use runner::{Monitor, MonitorHandle, MonitorStats, MonitorStopped};
pub use spec::{
    LimitOf, LogSource, LogSpec, MIN_INTERVAL, MonitorConfig, NamedSampler, PostgresSpec,
    ProcessMatch, PromFilters, PromLimit, PromSpec, SamplerSpec,
};
pub use trace_store::TraceStoreClient;
pub use units::redact_url;

/// Why a monitor could not start or serve. Messages name the spec or address.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// A `-monitor` spec that does not parse or cannot be used.
    #[error("monitor spec {spec:?}: {reason}")]
    Spec {
        /// The spec as given, with its secrets redacted.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A monitor was asked to run with nothing to sample.
    #[error("monitor: no samplers: give at least one (host, process=NAME, prom=URL, ...)")]
    NoSamplers,
    /// A sampler or the hub could not get its thread.
    #[error("monitor: could not start the {what} thread")]
    Thread {
        /// Which thread.
        what: String,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// An agent could not listen on, or reach, its address.
    #[error("monitor agent {addr}")]
    Agent {
        /// The agent's `HOST:PORT`.
        addr: String,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// A `-trace-store` that cannot be a trace store's query API.
    #[error("-trace-store {base:?}: {reason}")]
    TraceStore {
        /// The base URL as given.
        base: String,
        /// What is wrong with it.
        reason: String,
    },
}
