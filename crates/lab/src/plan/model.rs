//! The checked plan: what `loadlab run` runs. `parse.rs` makes it from a plan file.

use std::path::PathBuf;
use std::time::Duration;

use analysis::{SearchConfig, Slo};
use serde::{Deserialize, Serialize};
use workload::{AttackFields, Origin, RunFields, RunSettings};

/// How the cells of a plan are chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    /// Every variant at every step.
    Sweep,
    /// Per variant, the highest rate that meets the SLO.
    Search,
    /// Every combination of the axes, `repeat` times.
    Matrix,
}

impl Mode {
    /// `sweep`, `search` or `matrix`.
    pub fn word(self) -> &'static str {
        match self {
            Mode::Sweep => "sweep",
            Mode::Search => "search",
            Mode::Matrix => "matrix",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// A checked plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The plan's name (`name`, else the file's stem).
    pub name: String,
    /// Sweep, search or matrix.
    pub mode: Mode,
    /// The plan file as given, for messages.
    pub source_name: String,
    /// Relative paths in the plan are relative to its folder.
    pub base_dir: PathBuf,
    /// The plan's text as read (copied, redacted, into the run folder).
    pub text: String,
    /// The systems compared, in order (the first is the baseline of "improvement x").
    pub variants: Vec<Variant>,
    /// What each step sends.
    pub load: Load,
    /// The verdict of a step.
    pub slo: Slo,
    /// `search` mode's settings.
    pub search: SearchSettings,
    /// `matrix` mode's axes.
    pub matrix: Matrix,
    /// The trace store's query API each step's slow traced requests are read back
    /// from (`trace_store`, docs/TRACES.md); the caller makes the client.
    pub trace_store: Option<TraceStoreKey>,
    /// Further `{{name}}` values for hooks, set by the caller (the CLI adds `loadlab`,
    /// its own path, so a plan can start `{{loadlab}} simulate ...`).
    pub hook_values: Vec<(String, String)>,
}

/// The plan's `trace_store = "http://HOST:16686"`, with its line for messages.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceStoreKey {
    /// The URL as written.
    pub url: String,
    /// Its 1-based line.
    pub line: u64,
}

/// One system under test.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// Its name in folders, logs and tables.
    pub name: String,
    /// The line of its `[[variant]]` table.
    pub line: u64,
    /// Its own targets, or the plan's (rebased onto a base URL or not).
    pub targets: TargetSource,
    /// Shell command run before each of its cells.
    pub setup: Option<String>,
    /// Polled after `setup` until it succeeds.
    pub ready: Option<Ready>,
    /// Shell command run after each of its cells, whatever happened.
    pub teardown: Option<String>,
    /// A hook running longer than this fails its cell.
    pub hook_timeout: Duration,
    /// Monitor specs for its cells only, after `[load] monitor`: its own server's
    /// process or `/metrics`, which the other variants do not have.
    pub monitor: Vec<String>,
}

impl Variant {
    /// The `base_url` the plan's targets are rebased onto, if the variant has one.
    pub fn base_url(&self) -> Option<String> {
        match &self.targets {
            TargetSource::Rebased(base) => Some(base.clone()),
            _ => None,
        }
    }
}

/// Where a variant's targets come from.
#[derive(Clone, Debug, PartialEq)]
pub enum TargetSource {
    /// vegeta http-format text, one string per target.
    Inline(Vec<String>),
    /// A targets file in vegeta's http format.
    File(PathBuf),
    /// The plan's `[load]` targets with their scheme, host and port replaced by this.
    Rebased(String),
    /// The plan's `[load]` targets as written.
    Shared,
}

/// How to tell that a variant is up.
#[derive(Clone, Debug, PartialEq)]
pub struct Ready {
    /// What is polled.
    pub probe: ReadyProbe,
    /// Give up (and fail the cell) after this long.
    pub timeout: Duration,
    /// Between polls.
    pub interval: Duration,
}

/// A URL answered with 2xx/3xx, or a command that exits 0.
#[derive(Clone, Debug, PartialEq)]
pub enum ReadyProbe {
    /// An `http://` URL, fetched with a GET.
    Url(String),
    /// A shell command.
    Command(String),
}

/// The steps each variant is run at.
#[derive(Clone, Debug, PartialEq)]
pub enum Steps {
    /// Open model, requests per second.
    Rates(Vec<f64>),
    /// Closed model, user counts.
    Users(Vec<u64>),
    /// One open-model schedule run as a single step (a ramp, as in field report 003).
    Schedule(String),
}

/// What every step sends, and for how long.
#[derive(Clone, Debug)]
pub struct Load {
    /// The steps of a sweep (and the rates of a matrix without a `rate` axis).
    pub steps: Steps,
    /// Measured time per step, after the warm-up.
    pub step_duration: Duration,
    /// Sent first, excluded from the verdict.
    pub warmup: Duration,
    /// Pause after each step.
    pub cooldown: Duration,
    /// Sweep and matrix: once this many steps of a variant (with the same matrix
    /// values) have not passed, its higher rates are skipped; 0 runs every step.
    pub stop_after_failures: u32,
    /// Connect to each target's `host:port` before a step sends (`crate::reach`): a
    /// plan stops at once when one does not answer. Default `true`.
    pub check_targets: bool,
    /// Per-attack fields shared by every step, as written (targets, timeout, headers,
    /// data, ...; every key of an `attack -scenarios` table but those a step sets).
    pub attack: AttackFields,
    /// Where each of them was written, for errors found when a step is built.
    pub attack_origin: Origin,
    /// Run-wide fields, as written (threads, connections, HTTP/2, TLS, seed, stop
    /// rules, monitor: every run-wide flag of `attack`).
    pub run: RunFields,
    /// The same, checked; the caller turns `monitor` into samplers
    /// ([`crate::RunOptions::monitor`]).
    pub settings: RunSettings,
    /// The line of `[load]`, for errors found when a step is built.
    pub line: u64,
    /// Background scenarios run beside every step (`[[load.scenario]]`), in plan order.
    pub scenarios: Vec<Scenario>,
    /// `shards = N` above 1: every step runs as N shards of one run, merged; `None`
    /// runs each step in this process.
    pub shards: Option<Sharding>,
}

/// `[load] shards` and `via`: each step run as `count` shards of one run (`attack
/// -shard I/N -start-at T`), their record files merged as `loadlab report` merges them.
#[derive(Clone, Debug, PartialEq)]
pub struct Sharding {
    /// How many shards, 2 to 1000.
    pub count: u32,
    /// What starts them.
    pub via: Via,
    /// Their common time zero is this long after the step starts them (`kube`: its
    /// `-start-delay`, 60 s when not given).
    pub start_delay: Duration,
    /// The line of `shards = N`.
    pub line: u64,
}

/// What starts a sharded step's shards.
#[derive(Clone, Debug, PartialEq)]
pub enum Via {
    /// N child processes of this binary on this machine.
    Local,
    /// A command template run once per shard with `sh -c`, its placeholders
    /// (`{index}`, `{output}`, ...) filled in.
    Template(String),
    /// `loadlab kube run` with these options.
    Kube(KubeOptions),
}

/// `[load.kube]`: `loadlab kube run`'s options for every step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KubeOptions {
    /// The loadlab image the pods run (`-image`).
    pub image: String,
    /// `-namespace`; kube's default when `None`.
    pub namespace: Option<String>,
    /// `-host-network`: pods share their node's network (a target on its loopback).
    pub host_network: bool,
    /// `-pull`: the image pull policy, as written.
    pub pull: Option<String>,
    /// `-cpu`: each pod's CPU request and limit.
    pub cpu: Option<String>,
    /// `-memory`: each pod's memory request and limit.
    pub memory: Option<String>,
    /// `-start-delay`, when given.
    pub start_delay: Option<Duration>,
}

/// A background scenario (`[[load.scenario]]`): run beside every step of every variant
/// for the step's whole length (warm-up included) at its own fixed rate, as field report
/// 001 polled `/news` at 1 req/s while `/search` was flooded. Its targets are rebased onto
/// a variant's `base_url` like the shared ones.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Its name in records (the attack's name), rows and tables.
    pub name: String,
    /// The line of its `[[load.scenario]]` table.
    pub line: u64,
    /// Its attack's keys (as a `-scenarios` table: name, rate, targets, timeout, ...),
    /// with `[load]`'s request options filled in where it gives none.
    pub attack: AttackFields,
    /// Where each of them was written.
    pub origin: Origin,
    /// Its own verdict, if it has an `slo` table: a step passes only if it holds too.
    pub slo: Option<Slo>,
}

/// What a search's probes ask for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SearchOver {
    /// An arrival rate (open model), requests (or flow starts) per second.
    #[default]
    Rates,
    /// A count of users (closed model): how many connections a server holds.
    Users,
}

/// `search` mode's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SearchSettings {
    /// The state machine's settings (rates, or user counts with `over = "users"`).
    pub config: SearchConfig,
    /// What each probe asks for.
    pub over: SearchOver,
    /// Stop searching a variant after this long (the last bounds are reported).
    pub max_time: Option<Duration>,
}

/// `matrix` mode's axes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Matrix {
    /// Named axes with their values as text (`rate` is the offered rate).
    pub axes: Vec<(String, Vec<String>)>,
    /// Runs per cell.
    pub repeat: u32,
    /// Shuffle the cells with this seed; `None` runs them as written.
    pub shuffle_seed: Option<u64>,
}
