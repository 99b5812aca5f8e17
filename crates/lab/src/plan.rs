//! Plan files: the TOML model ([`Plan`]) and its checks. Unknown keys are rejected and
//! every error names the plan file, the line and the field (`plan.toml:12: slo.success:
//! must be between 0 and 1, got 1.5`), so a typo never runs an hour-long experiment
//! with a bound silently missing. `docs/PLANS.md` documents every field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use analysis::{GeneratorHealth, Percentile, SearchConfig, Slo};
use serde::Deserialize;
use toml::Spanned;
use workload::{AttackFields, TextOrNumber};

use crate::LabError;

/// How the cells of a plan are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
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
    /// Further `{{name}}` values for hooks, set by the caller (the CLI adds `loadlab`,
    /// its own path, so a plan can start `{{loadlab}} simulate ...`).
    pub hook_values: Vec<(String, String)>,
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
    /// Per-attack settings shared by every step (targets, timeout, headers, ...).
    pub attack: AttackFields,
    /// The line of `[load]`, for errors found when a step is built.
    pub line: u64,
    /// Open connections per target host at most.
    pub connections: Option<u64>,
    /// Offer h2 to https targets in ALPN (default on, as `attack -http2`).
    pub http2: bool,
    /// HTTP/2 to http targets with prior knowledge (`attack -h2c`).
    pub h2c: bool,
    /// HTTP/2 streams per connection at most (`attack -max-streams`).
    pub max_streams: Option<u32>,
    /// Event-loop threads (default: the CPUs).
    pub threads: Option<usize>,
    /// Seeds the targets' templates.
    pub seed: u64,
    /// Monitor specs attached to every step (as `attack -monitor`); the caller turns
    /// them into samplers ([`crate::RunOptions::monitor`]).
    pub monitor: Vec<String>,
    /// How often the monitor samples, as written (`1s` when not given).
    pub monitor_interval: String,
    /// Stop rules for every step (as `attack -stop-when`): a probe that has clearly
    /// failed ends early.
    pub stop_when: Vec<workload::StopRule>,
    /// Background scenarios run beside every step (`[[load.scenario]]`), in plan order.
    pub scenarios: Vec<Scenario>,
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
    /// with `[load]`'s per-attack settings filled in where it gives none.
    pub attack: AttackFields,
    /// Its own verdict, if it has an `slo` table: a step passes only if it holds too.
    pub slo: Option<Slo>,
}

/// `search` mode's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SearchSettings {
    /// The state machine's settings.
    pub config: SearchConfig,
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    name: Option<String>,
    mode: Spanned<String>,
    #[serde(default, rename = "variant")]
    variants: Vec<Spanned<RawVariant>>,
    load: Spanned<RawLoad>,
    slo: Option<RawSlo>,
    search: Option<RawSearch>,
    matrix: Option<Spanned<RawMatrix>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    name: Spanned<String>,
    targets: Option<Vec<String>>,
    targets_file: Option<String>,
    base_url: Option<Spanned<String>>,
    setup: Option<String>,
    ready: Option<Spanned<RawReady>>,
    teardown: Option<String>,
    hook_timeout: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReady {
    url: Option<String>,
    command: Option<String>,
    timeout: Option<Spanned<String>>,
    interval: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLoad {
    rates: Option<Spanned<Vec<f64>>>,
    users: Option<Spanned<Vec<i64>>>,
    schedule: Option<Spanned<String>>,
    step_duration: Option<Spanned<String>>,
    warmup: Option<Spanned<String>>,
    cooldown: Option<Spanned<String>>,
    stop_after_failures: Option<Spanned<u32>>,
    targets: Option<Vec<String>>,
    targets_file: Option<String>,
    timeout: Option<String>,
    keepalive: Option<bool>,
    headers: Option<Vec<String>>,
    body_file: Option<String>,
    max_workers: Option<u64>,
    redirects: Option<i32>,
    max_body: Option<TextOrNumber>,
    think_time: Option<String>,
    connections: Option<Spanned<u64>>,
    http2: Option<bool>,
    h2c: Option<bool>,
    max_streams: Option<Spanned<u32>>,
    threads: Option<Spanned<usize>>,
    seed: Option<u64>,
    #[serde(default)]
    monitor: Vec<String>,
    monitor_interval: Option<Spanned<String>>,
    stop_when: Option<Spanned<Vec<String>>>,
    #[serde(default, rename = "scenario")]
    scenarios: Vec<Spanned<RawScenario>>,
}

/// The keys of an `attack -scenarios` table that mean something beside a step.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Spanned<String>,
    rate: Option<Spanned<TextOrNumber>>,
    targets: Option<Vec<String>>,
    targets_file: Option<String>,
    timeout: Option<Spanned<String>>,
    keepalive: Option<bool>,
    headers: Option<Spanned<Vec<String>>>,
    body_file: Option<String>,
    max_workers: Option<Spanned<u64>>,
    redirects: Option<i32>,
    max_body: Option<TextOrNumber>,
    slo: Option<Spanned<RawSlo>>,
    // Keys of a `-scenarios` table that a background scenario cannot take: refused
    // with the reason rather than as unknown.
    duration: Option<Spanned<toml::Value>>,
    schedule: Option<Spanned<toml::Value>>,
    concurrency: Option<Spanned<toml::Value>>,
    think_time: Option<Spanned<toml::Value>>,
    max_requests: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSlo {
    success: Option<Spanned<f64>>,
    p50: Option<Spanned<String>>,
    p90: Option<Spanned<String>>,
    p95: Option<Spanned<String>>,
    p99: Option<Spanned<String>>,
    #[serde(rename = "p99.9")]
    p999: Option<Spanned<String>>,
    max: Option<Spanned<String>>,
    mean: Option<Spanned<String>>,
    #[serde(default)]
    errors: BTreeMap<String, Spanned<f64>>,
    achieved: Option<Spanned<f64>>,
    max_lag: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSearch {
    start: Option<Spanned<f64>>,
    growth: Option<Spanned<f64>>,
    precision: Option<Spanned<f64>>,
    max_probes: Option<Spanned<usize>>,
    max_time: Option<Spanned<String>>,
    min_rate: Option<Spanned<f64>>,
    max_rate: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatrix {
    axes: Spanned<BTreeMap<String, Spanned<Vec<toml::Value>>>>,
    repeat: Option<Spanned<i64>>,
    order: Option<Spanned<String>>,
    seed: Option<u64>,
}

/// The default success bound: a step where more than 1% fail does not pass.
pub const DEFAULT_SUCCESS: f64 = 0.99;
const DEFAULT_STEP: Duration = Duration::from_secs(10);
const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);
const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_READY_INTERVAL: Duration = Duration::from_millis(200);

/// Turns byte offsets into errors naming the file, line and field.
struct Spot<'a> {
    text: &'a str,
    source_name: &'a str,
}

impl Spot<'_> {
    fn line(&self, offset: usize) -> u64 {
        self.text[..offset.min(self.text.len())]
            .matches('\n')
            .count() as u64
            + 1
    }

    fn err(&self, offset: usize, field: &str, reason: impl Into<String>) -> LabError {
        LabError::Plan {
            source_name: self.source_name.to_owned(),
            line: self.line(offset),
            field: field.to_owned(),
            reason: reason.into(),
        }
    }

    fn err_at_line(&self, line: u64, field: &str, reason: impl Into<String>) -> LabError {
        LabError::Plan {
            source_name: self.source_name.to_owned(),
            line,
            field: field.to_owned(),
            reason: reason.into(),
        }
    }

    fn duration(&self, value: &Spanned<String>, field: &str) -> Result<Duration, LabError> {
        units::parse_duration(value.get_ref())
            .map_err(|e| self.err(value.span().start, field, e.to_string()))
    }

    fn duration_or(
        &self,
        value: Option<&Spanned<String>>,
        field: &str,
        default: Duration,
    ) -> Result<Duration, LabError> {
        value.map_or(Ok(default), |v| self.duration(v, field))
    }
}

impl Plan {
    /// Reads and checks a plan file.
    pub fn read(path: &Path) -> Result<Plan, LabError> {
        let text = std::fs::read_to_string(path).map_err(|source| LabError::Io {
            path: path.to_owned(),
            source,
        })?;
        let base_dir = path.parent().map(Path::to_owned).unwrap_or_default();
        let mut plan = Plan::parse(&text, &path.display().to_string(), &base_dir)?;
        if plan.name.is_empty() {
            plan.name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
        }
        Ok(plan)
    }

    /// Parses and checks a plan's text; errors name `source_name`, the line and the field.
    pub fn parse(text: &str, source_name: &str, base_dir: &Path) -> Result<Plan, LabError> {
        let spot = Spot { text, source_name };
        let raw: RawPlan = toml::from_str(text).map_err(|err| {
            let offset = err.span().map_or(0, |span| span.start);
            let message = err.message().to_owned();
            let field = field_of(&message)
                .or_else(|| key_at(text, offset))
                .unwrap_or_default();
            spot.err(offset, &field, message)
        })?;
        let mode = match raw.mode.get_ref().as_str() {
            "sweep" => Mode::Sweep,
            "search" => Mode::Search,
            "matrix" => Mode::Matrix,
            other => {
                return Err(spot.err(
                    raw.mode.span().start,
                    "mode",
                    format!("unknown mode {other:?} (want sweep, search or matrix)"),
                ));
            }
        };
        let slo = slo(&spot, raw.slo.as_ref(), "slo")?;
        let mut load = load(&spot, &raw.load)?;
        load.scenarios = scenarios(&spot, &raw.load, &load.attack, &slo.generator)?;
        let variants = variants(&spot, raw.variants, &load)?;
        if let Some((scenario, variant)) = load.scenarios.iter().find_map(|s| {
            let variant = variants.iter().find(|v| v.name == s.name)?;
            Some((s, variant))
        }) {
            return Err(spot.err_at_line(
                scenario.line,
                "load.scenario.name",
                format!(
                    "{:?} is the name of the variant on line {}: records name both, so use another",
                    scenario.name, variant.line
                ),
            ));
        }
        let matrix = match (&raw.matrix, mode) {
            (Some(m), _) => matrix(&spot, m)?,
            (None, Mode::Matrix) => {
                return Err(spot.err(
                    0,
                    "matrix",
                    "mode = \"matrix\" needs a [matrix] table with axes",
                ));
            }
            (None, _) => Matrix {
                repeat: 1,
                ..Matrix::default()
            },
        };
        if mode == Mode::Matrix {
            let has_rate_axis = matrix.axes.iter().any(|(name, _)| name == "rate");
            if !has_rate_axis && load.steps == Steps::Rates(Vec::new()) {
                return Err(spot.err(
                    raw.load.span().start,
                    "load.rates",
                    "a matrix needs a rate axis, or rates or users in [load]",
                ));
            }
        } else {
            check_steps(&spot, &raw.load, &load.steps, mode)?;
        }
        Ok(Plan {
            name: raw.name.unwrap_or_default(),
            mode,
            source_name: source_name.to_owned(),
            base_dir: base_dir.to_owned(),
            text: text.to_owned(),
            variants,
            load,
            slo,
            search: search(&spot, raw.search.as_ref())?,
            matrix,
            hook_values: Vec::new(),
        })
    }
}

/// serde names the field in its message (`unknown field \`ratez\``); keep it for the label.
fn field_of(message: &str) -> Option<String> {
    if !message.starts_with("unknown field") && !message.starts_with("missing field") {
        return None;
    }
    let start = message.find('`')? + 1;
    let end = start + message[start..].find('`')?;
    Some(message[start..end].to_owned())
}

/// The key written on the line of `offset`, under its table: `load.rates` for a bad
/// value of `rates = ...` in `[load]` (serde's message names the value, not the key).
fn key_at(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next()?;
    let key = line.split_once('=')?.0.trim().trim_matches('"');
    let table = before[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']'));
    Some(match table {
        Some(table) => format!("{table}.{key}"),
        None => key.to_owned(),
    })
}

fn check_steps(
    spot: &Spot<'_>,
    raw: &Spanned<RawLoad>,
    steps: &Steps,
    mode: Mode,
) -> Result<(), LabError> {
    let at = raw.span().start;
    match (steps, mode) {
        (Steps::Rates(rates), Mode::Sweep) if rates.is_empty() => {
            Err(spot.err(at, "load.rates", "a sweep needs rates, users or a schedule"))
        }
        (Steps::Users(_) | Steps::Schedule(_), Mode::Search) => Err(spot.err(
            at,
            "load",
            "search finds a rate: give no users or schedule (the [search] table sets the rates)",
        )),
        _ => match &raw.get_ref().stop_after_failures {
            Some(n) if mode == Mode::Search && *n.get_ref() > 0 => Err(spot.err(
                n.span().start,
                "load.stop_after_failures",
                "a search stops by itself at the first failure: give it to sweep or matrix plans",
            )),
            _ => Ok(()),
        },
    }
}

fn load(spot: &Spot<'_>, raw: &Spanned<RawLoad>) -> Result<Load, LabError> {
    let at = raw.span().start;
    let r = raw.get_ref();
    let steps = match (&r.rates, &r.users, &r.schedule) {
        (Some(rates), None, None) => {
            if let Some(bad) = rates
                .get_ref()
                .iter()
                .find(|r| !(**r > 0.0 && r.is_finite()))
            {
                return Err(spot.err(
                    rates.span().start,
                    "load.rates",
                    format!("every rate must be above 0, got {bad}"),
                ));
            }
            Steps::Rates(rates.get_ref().clone())
        }
        (None, Some(users), None) => {
            if let Some(bad) = users.get_ref().iter().find(|u| **u < 1) {
                return Err(spot.err(
                    users.span().start,
                    "load.users",
                    format!("every user count must be at least 1, got {bad}"),
                ));
            }
            Steps::Users(users.get_ref().iter().map(|&u| u as u64).collect())
        }
        (None, None, Some(schedule)) => {
            workload::Schedule::parse(schedule.get_ref())
                .map_err(|e| spot.err(schedule.span().start, "load.schedule", e))?;
            Steps::Schedule(schedule.get_ref().clone())
        }
        (None, None, None) => Steps::Rates(Vec::new()),
        _ => return Err(spot.err(at, "load", "give one of rates, users or schedule")),
    };
    let step_duration =
        spot.duration_or(r.step_duration.as_ref(), "load.step_duration", DEFAULT_STEP)?;
    if step_duration.is_zero() {
        let offset = r.step_duration.as_ref().map_or(at, |s| s.span().start);
        return Err(spot.err(offset, "load.step_duration", "must be longer than zero"));
    }
    let stop_when = match &r.stop_when {
        Some(rules) => rules
            .get_ref()
            .iter()
            .map(|rule| {
                workload::StopRule::parse(rule)
                    .map_err(|e| spot.err(rules.span().start, "load.stop_when", e))
            })
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    for (field, value) in [
        (
            "load.connections",
            r.connections
                .as_ref()
                .map(|c| (c.span().start, *c.get_ref())),
        ),
        (
            "load.threads",
            r.threads
                .as_ref()
                .map(|t| (t.span().start, *t.get_ref() as u64)),
        ),
        (
            "load.max_streams",
            r.max_streams
                .as_ref()
                .map(|m| (m.span().start, u64::from(*m.get_ref()))),
        ),
    ] {
        if let Some((offset, 0)) = value {
            return Err(spot.err(offset, field, "must be at least 1"));
        }
    }
    Ok(Load {
        steps,
        step_duration,
        warmup: spot.duration_or(r.warmup.as_ref(), "load.warmup", Duration::ZERO)?,
        cooldown: spot.duration_or(r.cooldown.as_ref(), "load.cooldown", Duration::ZERO)?,
        stop_after_failures: r.stop_after_failures.as_ref().map_or(0, |n| *n.get_ref()),
        attack: AttackFields {
            targets: r.targets.clone(),
            targets_file: r.targets_file.clone(),
            timeout: r.timeout.clone(),
            keepalive: r.keepalive,
            headers: r.headers.clone(),
            body_file: r.body_file.clone(),
            max_workers: r.max_workers,
            redirects: r.redirects,
            max_body: r.max_body.clone(),
            think_time: r.think_time.clone(),
            ..AttackFields::default()
        },
        line: spot.line(at),
        connections: r.connections.as_ref().map(|c| *c.get_ref()),
        http2: r.http2.unwrap_or(true),
        h2c: r.h2c.unwrap_or(false),
        max_streams: r.max_streams.as_ref().map(|m| *m.get_ref()),
        threads: r.threads.as_ref().map(|t| *t.get_ref()),
        seed: r.seed.unwrap_or(0),
        monitor: r.monitor.clone(),
        monitor_interval: match &r.monitor_interval {
            Some(text) => {
                spot.duration(text, "load.monitor_interval")?;
                text.get_ref().clone()
            }
            None => "1s".to_owned(),
        },
        stop_when,
        scenarios: Vec::new(),
    })
}

/// `[[load.scenario]]` tables: checked here (names, rate, targets, timeout, headers,
/// slo) so a typo fails before anything runs; `defaults` are `[load]`'s per-attack
/// settings, filled in where a scenario gives none (as a `-scenarios` file's `[defaults]`).
fn scenarios(
    spot: &Spot<'_>,
    raw: &Spanned<RawLoad>,
    defaults: &AttackFields,
    generator: &GeneratorHealth,
) -> Result<Vec<Scenario>, LabError> {
    let mut out: Vec<Scenario> = Vec::new();
    for spanned in &raw.get_ref().scenarios {
        let at = spanned.span().start;
        let r = spanned.get_ref();
        let name = r.name.get_ref().trim().to_owned();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(spot.err(
                r.name.span().start,
                "load.scenario.name",
                format!("{name:?}: use letters, digits, '-', '_' or '.'"),
            ));
        }
        if out.iter().any(|o| o.name == name) {
            return Err(spot.err(
                r.name.span().start,
                "load.scenario.name",
                format!("{name:?} is used twice"),
            ));
        }
        refuse_step_keys(spot, r)?;
        let rate = scenario_rate(spot, r, at, &name)?;
        match (&r.targets, &r.targets_file) {
            (Some(list), None) if !list.is_empty() => {}
            (None, Some(_)) => {}
            (Some(_), Some(_)) => {
                return Err(spot.err(
                    at,
                    "load.scenario.targets",
                    format!("scenario {name:?}: give targets or targets_file, not both"),
                ));
            }
            _ => {
                return Err(spot.err(
                    at,
                    "load.scenario.targets",
                    format!("scenario {name:?} has no targets: give targets or targets_file"),
                ));
            }
        }
        if let Some(timeout) = &r.timeout
            && spot.duration(timeout, "load.scenario.timeout")?.is_zero()
        {
            return Err(spot.err(
                timeout.span().start,
                "load.scenario.timeout",
                "must be longer than zero",
            ));
        }
        if let Some(headers) = &r.headers
            && let Some(Err(reason)) = headers
                .get_ref()
                .iter()
                .map(|h| workload::Header::parse(h))
                .find(Result::is_err)
        {
            return Err(spot.err(headers.span().start, "load.scenario.headers", reason));
        }
        if let Some(workers) = &r.max_workers
            && *workers.get_ref() == 0
        {
            return Err(spot.err(
                workers.span().start,
                "load.scenario.max_workers",
                "must be at least 1",
            ));
        }
        let attack = AttackFields {
            name: Some(name.clone()),
            rate: Some(rate),
            targets: r.targets.clone(),
            targets_file: r.targets_file.clone(),
            body_file: r.body_file.clone(),
            timeout: r
                .timeout
                .as_ref()
                .map(|t| t.get_ref().clone())
                .or_else(|| defaults.timeout.clone()),
            keepalive: r.keepalive.or(defaults.keepalive),
            headers: r
                .headers
                .as_ref()
                .map(|h| h.get_ref().clone())
                .or_else(|| defaults.headers.clone()),
            max_workers: r
                .max_workers
                .as_ref()
                .map(|w| *w.get_ref())
                .or(defaults.max_workers),
            redirects: r.redirects.or(defaults.redirects),
            max_body: r.max_body.clone().or_else(|| defaults.max_body.clone()),
            ..AttackFields::default()
        };
        // Whatever is left to check (max_body), as an attack would.
        attack
            .settings(&workload::Origin::flags())
            .map_err(|e| spot.err(at, "load.scenario", format!("scenario {name:?}: {e}")))?;
        let slo = r
            .slo
            .as_ref()
            .map(|s| scenario_slo(spot, s, generator))
            .transpose()?;
        out.push(Scenario {
            name,
            line: spot.line(at),
            attack,
            slo,
        });
    }
    Ok(out)
}

/// A background scenario runs for the whole step at its own fixed rate: the keys of a
/// `-scenarios` table that would say otherwise are refused with that reason.
fn refuse_step_keys(spot: &Spot<'_>, r: &RawScenario) -> Result<(), LabError> {
    let keys = [
        ("duration", &r.duration),
        ("schedule", &r.schedule),
        ("concurrency", &r.concurrency),
        ("think_time", &r.think_time),
        ("max_requests", &r.max_requests),
    ];
    match keys.into_iter().find_map(|(key, v)| Some((key, v.as_ref()?))) {
        Some((key, value)) => Err(spot.err(
            value.span().start,
            &format!("load.scenario.{key}"),
            "a background scenario runs for each step's whole length at its own fixed `rate`; give no duration, schedule, concurrency, think_time or max_requests",
        )),
        None => Ok(()),
    }
}

fn scenario_rate(
    spot: &Spot<'_>,
    r: &RawScenario,
    at: usize,
    name: &str,
) -> Result<TextOrNumber, LabError> {
    let Some(rate) = &r.rate else {
        return Err(spot.err(
            at,
            "load.scenario.rate",
            format!("scenario {name:?} needs a rate (requests per second, like 1 or \"10/1s\")"),
        ));
    };
    let text = rate.get_ref().text();
    match units::Rate::parse(&text) {
        Ok(parsed) if !parsed.is_unpaced() && parsed.per_sec() > 0.0 => Ok(rate.get_ref().clone()),
        Ok(_) => Err(spot.err(
            rate.span().start,
            "load.scenario.rate",
            format!("must be above 0, got {text}: a background scenario runs at a fixed rate"),
        )),
        Err(e) => Err(spot.err(rate.span().start, "load.scenario.rate", e.to_string())),
    }
}

/// A scenario's own SLO: the fields of `[slo]` but the generator's health, which is
/// judged once for the whole generator (the plan's `[slo]` bounds apply to it too).
fn scenario_slo(
    spot: &Spot<'_>,
    raw: &Spanned<RawSlo>,
    generator: &GeneratorHealth,
) -> Result<Slo, LabError> {
    let r = raw.get_ref();
    if let Some(offset) = r
        .achieved
        .as_ref()
        .map(|a| a.span().start)
        .or(r.max_lag.as_ref().map(|l| l.span().start))
    {
        return Err(spot.err(
            offset,
            "load.scenario.slo",
            "the generator's health (achieved, max_lag) is set once, in [slo]",
        ));
    }
    let mut slo = slo(spot, Some(r), "load.scenario.slo")?;
    slo.generator = *generator;
    Ok(slo)
}

fn variants(
    spot: &Spot<'_>,
    raw: Vec<Spanned<RawVariant>>,
    load: &Load,
) -> Result<Vec<Variant>, LabError> {
    if raw.is_empty() {
        return Err(spot.err(
            0,
            "variant",
            "no [[variant]] tables: name at least one system under test",
        ));
    }
    let shared = load.attack.targets.is_some() || load.attack.targets_file.is_some();
    let mut out: Vec<Variant> = Vec::new();
    for spanned in raw {
        let at = spanned.span().start;
        let v = spanned.into_inner();
        let name = v.name.get_ref().trim().to_owned();
        let name_at = v.name.span().start;
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(spot.err(
                name_at,
                "variant.name",
                format!("{name:?}: use letters, digits, '-', '_' or '.' (it names folders)"),
            ));
        }
        if out.iter().any(|o| o.name == name) {
            return Err(spot.err(name_at, "variant.name", format!("{name:?} is used twice")));
        }
        let targets = match (v.targets, v.targets_file, v.base_url) {
            (Some(t), None, None) if !t.is_empty() => TargetSource::Inline(t),
            (None, Some(file), None) => TargetSource::File(PathBuf::from(file)),
            (None, None, Some(url)) => {
                if !shared {
                    return Err(spot.err(
                        url.span().start,
                        "variant.base_url",
                        "rebases the plan's targets, but [load] has no targets or targets_file",
                    ));
                }
                let text = url.get_ref().trim_end_matches('/');
                if !(text.starts_with("http://") || text.starts_with("https://"))
                    || text.matches('/').count() > 2
                {
                    return Err(spot.err(
                        url.span().start,
                        "variant.base_url",
                        format!("{text:?}: want scheme://host:port, like http://127.0.0.1:8080"),
                    ));
                }
                TargetSource::Rebased(text.to_owned())
            }
            (None, None, None) if shared => TargetSource::Shared,
            (None, None, None) | (Some(_), None, None) => {
                return Err(spot.err(at, "variant.targets", format!("variant {name:?} has no targets: give targets, targets_file or base_url here, or targets in [load]")));
            }
            _ => {
                return Err(spot.err(
                    at,
                    "variant.targets",
                    "give one of targets, targets_file or base_url",
                ));
            }
        };
        let ready = v.ready.map(|r| ready(spot, &r)).transpose()?;
        out.push(Variant {
            name,
            line: spot.line(at),
            targets,
            setup: v.setup,
            ready,
            teardown: v.teardown,
            hook_timeout: spot.duration_or(
                v.hook_timeout.as_ref(),
                "variant.hook_timeout",
                DEFAULT_HOOK_TIMEOUT,
            )?,
        });
    }
    Ok(out)
}

fn ready(spot: &Spot<'_>, raw: &Spanned<RawReady>) -> Result<Ready, LabError> {
    let r = raw.get_ref();
    let probe = match (&r.url, &r.command) {
        (Some(url), None) if url.starts_with("http://") => ReadyProbe::Url(url.clone()),
        (Some(url), None) => {
            return Err(spot.err(
                raw.span().start,
                "variant.ready.url",
                format!("{url:?}: want an http:// URL"),
            ));
        }
        (None, Some(command)) => ReadyProbe::Command(command.clone()),
        _ => {
            return Err(spot.err(
                raw.span().start,
                "variant.ready",
                "give one of url or command",
            ));
        }
    };
    Ok(Ready {
        probe,
        timeout: spot.duration_or(
            r.timeout.as_ref(),
            "variant.ready.timeout",
            DEFAULT_READY_TIMEOUT,
        )?,
        interval: spot.duration_or(
            r.interval.as_ref(),
            "variant.ready.interval",
            DEFAULT_READY_INTERVAL,
        )?,
    })
}

fn ratio(spot: &Spot<'_>, value: &Spanned<f64>, field: &str) -> Result<f64, LabError> {
    let v = *value.get_ref();
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(spot.err(
            value.span().start,
            field,
            format!("must be between 0 and 1 (a share, 0.99 = 99%), got {v}"),
        ))
    }
}

fn slo(spot: &Spot<'_>, raw: Option<&RawSlo>, prefix: &str) -> Result<Slo, LabError> {
    let Some(r) = raw else {
        return Ok(Slo {
            min_success_ratio: Some(DEFAULT_SUCCESS),
            ..Slo::default()
        });
    };
    let mut slo = Slo {
        min_success_ratio: Some(r.success.as_ref().map_or(Ok(DEFAULT_SUCCESS), |s| {
            ratio(spot, s, &format!("{prefix}.success"))
        })?),
        ..Slo::default()
    };
    let bounds = [
        (Percentile::P50, &r.p50),
        (Percentile::P90, &r.p90),
        (Percentile::P95, &r.p95),
        (Percentile::P99, &r.p99),
        (Percentile::P999, &r.p999),
        (Percentile::Max, &r.max),
        (Percentile::Mean, &r.mean),
    ];
    for (percentile, value) in bounds {
        if let Some(value) = value {
            let field = format!("{prefix}.{percentile}");
            let bound = spot.duration(value, &field)?;
            if bound.is_zero() {
                return Err(spot.err(value.span().start, &field, "must be longer than zero"));
            }
            slo.max_latency_ns
                .push((percentile, bound.as_nanos() as u64));
        }
    }
    for (kind, value) in &r.errors {
        let known = record::ErrorKind::from_name(kind).is_some()
            || kind.parse::<u16>().is_ok_and(|s| (100..600).contains(&s));
        if !known {
            return Err(spot.err(value.span().start, &format!("{prefix}.errors.{kind}"), "want an error kind (timeout, connect, reset, closed, ...) or an HTTP status like \"503\""));
        }
        slo.max_error_ratio_by_kind.push((
            kind.clone(),
            ratio(spot, value, &format!("{prefix}.errors.{kind}"))?,
        ));
    }
    let mut generator = GeneratorHealth::default();
    if let Some(achieved) = &r.achieved {
        generator.min_achieved_ratio = ratio(spot, achieved, "slo.achieved")?;
    }
    if let Some(lag) = &r.max_lag {
        generator.max_lag_p99_ns = spot.duration(lag, "slo.max_lag")?.as_nanos() as u64;
        if generator.max_lag_p99_ns == 0 {
            return Err(spot.err(
                lag.span().start,
                "slo.max_lag",
                "must be longer than zero: every generator sends a little late, so every step would be inconclusive",
            ));
        }
    }
    slo.generator = generator;
    Ok(slo)
}

fn search(spot: &Spot<'_>, raw: Option<&RawSearch>) -> Result<SearchSettings, LabError> {
    let mut config = SearchConfig::default();
    let Some(r) = raw else {
        return Ok(SearchSettings {
            config,
            max_time: None,
        });
    };
    let set = |value: &Option<Spanned<f64>>, slot: &mut f64| {
        if let Some(v) = value {
            *slot = *v.get_ref();
        }
    };
    set(&r.start, &mut config.start_per_sec);
    set(&r.growth, &mut config.growth);
    set(&r.precision, &mut config.precision);
    set(&r.min_rate, &mut config.min_per_sec);
    set(&r.max_rate, &mut config.max_per_sec);
    if let Some(max) = &r.max_probes {
        config.max_probes = *max.get_ref();
    }
    if let Err(analysis::AnalysisError::BadSearch { field, want, got }) = config.validate() {
        let (name, offset) = match field {
            "start" => ("start", r.start.as_ref().map(|s| s.span().start)),
            "growth" => ("growth", r.growth.as_ref().map(|s| s.span().start)),
            "precision" => ("precision", r.precision.as_ref().map(|s| s.span().start)),
            "max_probes" => ("max_probes", r.max_probes.as_ref().map(|s| s.span().start)),
            _ => (
                "max_rate",
                r.max_rate
                    .as_ref()
                    .or(r.min_rate.as_ref())
                    .map(|s| s.span().start),
            ),
        };
        return Err(spot.err(
            offset.unwrap_or(0),
            &format!("search.{name}"),
            format!("must be {want}, got {got}"),
        ));
    }
    let max_time = r
        .max_time
        .as_ref()
        .map(|t| spot.duration(t, "search.max_time"))
        .transpose()?;
    Ok(SearchSettings { config, max_time })
}

fn matrix(spot: &Spot<'_>, raw: &Spanned<RawMatrix>) -> Result<Matrix, LabError> {
    let r = raw.get_ref();
    if r.axes.get_ref().is_empty() {
        return Err(spot.err(
            r.axes.span().start,
            "matrix.axes",
            "no axes: name at least one, like rate = [100, 500]",
        ));
    }
    let mut axes = Vec::new();
    for (name, values) in r.axes.get_ref() {
        let field = format!("matrix.axes.{name}");
        if values.get_ref().is_empty() {
            return Err(spot.err(values.span().start, &field, "an empty axis makes no cells"));
        }
        let texts: Vec<String> = values
            .get_ref()
            .iter()
            .map(|v| match v {
                toml::Value::String(s) => Ok(s.clone()),
                toml::Value::Integer(i) => Ok(i.to_string()),
                toml::Value::Float(f) => Ok(f.to_string()),
                toml::Value::Boolean(b) => Ok(b.to_string()),
                other => Err(spot.err(
                    values.span().start,
                    &field,
                    format!("want strings or numbers, got {}", other.type_str()),
                )),
            })
            .collect::<Result<_, _>>()?;
        if name == "rate"
            && let Some(bad) = texts
                .iter()
                .find(|t| !t.parse::<f64>().is_ok_and(|r| r > 0.0))
        {
            return Err(spot.err(
                values.span().start,
                &field,
                format!("every rate must be a number above 0, got {bad}"),
            ));
        }
        if name == "variant" {
            return Err(spot.err(
                values.span().start,
                &field,
                "variants are always an axis: list them as [[variant]] tables",
            ));
        }
        axes.push((name.clone(), texts));
    }
    let repeat = match &r.repeat {
        Some(n) if *n.get_ref() < 1 => {
            return Err(spot.err(
                n.span().start,
                "matrix.repeat",
                format!("must be at least 1, got {}", n.get_ref()),
            ));
        }
        Some(n) => *n.get_ref() as u32,
        None => 1,
    };
    let shuffle_seed = match r
        .order
        .as_ref()
        .map(|o| (o.span().start, o.get_ref().as_str()))
    {
        None | Some((_, "as-written")) => None,
        Some((_, "shuffled")) => Some(r.seed.unwrap_or(1)),
        Some((offset, other)) => {
            return Err(spot.err(
                offset,
                "matrix.order",
                format!("unknown order {other:?} (want as-written or shuffled)"),
            ));
        }
    };
    Ok(Matrix {
        axes,
        repeat,
        shuffle_seed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGETS: &str = "[load]\ntargets = [\"GET http://127.0.0.1:1/\"]\nrates = [10]\n";
    const VARIANT: &str = "[[variant]]\nname = \"a\"\n";

    fn parse(text: &str) -> Result<Plan, String> {
        Plan::parse(text, "p.toml", Path::new("/plans")).map_err(|e| e.to_string())
    }

    #[test]
    fn good_plans() {
        let full = r#"name = "full"
mode = "search"

[[variant]]
name = "go"
base_url = "http://127.0.0.1:8081"
setup = "echo {{variant}}"
ready = { url = "http://127.0.0.1:8081/health", timeout = "5s", interval = "100ms" }
teardown = "true"
hook_timeout = "10s"

[[variant]]
name = "ruby"
targets_file = "ruby.txt"

[load]
targets = ["GET http://example:1/v3/info\nAuthorization: bearer x"]
step_duration = "2s"
warmup = "500ms"
cooldown = "1s"
timeout = "5s"
connections = 100
h2c = true
max_streams = 50
stop_when = ["errors > 50% for 1s"]

[slo]
success = 0.999
p99 = "250ms"
"p99.9" = "1s"
errors = { timeout = 0.001, "503" = 0.0 }
achieved = 0.98
max_lag = "5ms"

[search]
start = 50
growth = 3
precision = 0.05
max_probes = 12
max_time = "5m"
max_rate = 100000
"#;
        let plan = parse(full).expect("full plan");
        assert_eq!((plan.name.as_str(), plan.mode), ("full", Mode::Search));
        assert_eq!(
            plan.variants[0].targets,
            TargetSource::Rebased("http://127.0.0.1:8081".to_owned())
        );
        assert_eq!(
            plan.variants[1].targets,
            TargetSource::File(PathBuf::from("ruby.txt"))
        );
        assert_eq!(plan.variants[1].line, 12);
        assert_eq!(plan.load.warmup, Duration::from_millis(500));
        assert_eq!(
            (plan.load.http2, plan.load.h2c, plan.load.max_streams),
            (true, true, Some(50))
        );
        assert_eq!(plan.slo.min_success_ratio, Some(0.999));
        assert_eq!(
            plan.slo.max_latency_ns,
            vec![
                (Percentile::P99, 250_000_000),
                (Percentile::P999, 1_000_000_000)
            ]
        );
        assert_eq!(plan.slo.max_error_ratio_by_kind.len(), 2);
        assert_eq!(plan.slo.generator.max_lag_p99_ns, 5_000_000);
        assert_eq!(
            (
                plan.search.config.start_per_sec,
                plan.search.config.max_probes
            ),
            (50.0, 12)
        );
        assert_eq!(plan.search.max_time, Some(Duration::from_secs(300)));

        let rows: [(&str, String); 4] = [
            (
                "sweep of users",
                format!(
                    "mode = \"sweep\"\n{VARIANT}[load]\ntargets = [\"GET http://h/\"]\nusers = [1, 10]\n"
                ),
            ),
            (
                "ramp schedule",
                format!(
                    "mode = \"sweep\"\n{VARIANT}[load]\ntargets = [\"GET http://h/\"]\nschedule = \"line(1, 100, 10s)\"\n"
                ),
            ),
            (
                "matrix",
                format!(
                    "mode = \"matrix\"\n{VARIANT}{TARGETS}[matrix]\naxes = {{ replicas = [1, 2] }}\nrepeat = 3\norder = \"shuffled\"\nseed = 4\n"
                ),
            ),
            ("defaults", format!("mode = \"sweep\"\n{VARIANT}{TARGETS}")),
        ];
        for (name, text) in rows {
            let plan = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(plan.slo.min_success_ratio, Some(DEFAULT_SUCCESS), "{name}");
        }
    }

    #[test]
    fn bad_plans_name_the_line_and_field() {
        let rows: [(&str, String, &str); 22] = [
            (
                "no streams",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}max_streams = 0\n"),
                "p.toml:7: load.max_streams: must be at least 1",
            ),
            (
                "h2c not a bool",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}h2c = \"yes\"\n"),
                "p.toml:7: load.h2c: invalid type: string \"yes\", expected a boolean",
            ),
            (
                "typo",
                format!(
                    "mode = \"sweep\"\n{VARIANT}[load]\ntargets = [\"GET http://h/\"]\nratez = [1]\n"
                ),
                "p.toml:6: ratez: unknown field `ratez`",
            ),
            (
                "unknown mode",
                format!("mode = \"soak\"\n{VARIANT}{TARGETS}"),
                "p.toml:1: mode: unknown mode \"soak\"",
            ),
            (
                "missing mode",
                format!("{VARIANT}{TARGETS}"),
                "p.toml:1: mode: missing field `mode`",
            ),
            (
                "success > 1",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}[slo]\nsuccess = 1.5\n"),
                "p.toml:8: slo.success: must be between 0 and 1",
            ),
            (
                "negative error share",
                format!(
                    "mode = \"sweep\"\n{VARIANT}{TARGETS}[slo]\nerrors = {{ timeout = -0.1 }}\n"
                ),
                "p.toml:8: slo.errors.timeout: must be between 0 and 1",
            ),
            (
                "unknown error kind",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}[slo]\nerrors = {{ oops = 0.1 }}\n"),
                "p.toml:8: slo.errors.oops: want an error kind",
            ),
            (
                "bad latency",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}[slo]\np99 = \"fast\"\n"),
                "p.toml:8: slo.p99:",
            ),
            (
                "negative rate",
                format!(
                    "mode = \"sweep\"\n{VARIANT}[load]\ntargets = [\"GET http://h/\"]\nrates = [10, -5]\n"
                ),
                "p.toml:6: load.rates: every rate must be above 0, got -5",
            ),
            (
                "empty axis",
                format!(
                    "mode = \"matrix\"\n{VARIANT}{TARGETS}[matrix]\naxes = {{ replicas = [] }}\n"
                ),
                "p.toml:8: matrix.axes.replicas: an empty axis makes no cells",
            ),
            (
                "no axes",
                format!("mode = \"matrix\"\n{VARIANT}{TARGETS}[matrix]\naxes = {{}}\n"),
                "p.toml:8: matrix.axes: no axes",
            ),
            (
                "matrix without table",
                format!("mode = \"matrix\"\n{VARIANT}{TARGETS}"),
                "p.toml:1: matrix:",
            ),
            (
                "missing targets",
                format!("mode = \"sweep\"\n{VARIANT}[load]\nrates = [1]\n"),
                "p.toml:2: variant.targets: variant \"a\" has no targets",
            ),
            (
                "base_url without shared targets",
                "mode = \"sweep\"\n[[variant]]\nname = \"a\"\nbase_url = \"http://127.0.0.1:1\"\n[load]\nrates = [1]\n"
                    .to_owned(),
                "p.toml:4: variant.base_url:",
            ),
            (
                "no variants",
                format!("mode = \"sweep\"\n{TARGETS}"),
                "p.toml:1: variant: no [[variant]] tables",
            ),
            (
                "bad search",
                format!(
                    "mode = \"search\"\n{VARIANT}[load]\ntargets = [\"GET http://h/\"]\n[search]\nprecision = 2\n"
                ),
                "p.toml:7: search.precision: must be between 0 and 1",
            ),
            (
                "stop_after_failures in a search",
                format!(
                    "mode = \"search\"\n{VARIANT}[load]\ntargets = [\"GET http://h/\"]\nstop_after_failures = 1\n"
                ),
                "p.toml:6: load.stop_after_failures: a search stops by itself",
            ),
            (
                "negative stop_after_failures",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}stop_after_failures = -1\n"),
                "p.toml:7: load.stop_after_failures: invalid value: integer `-1`, expected u32",
            ),
            (
                "a value of the wrong type names its key",
                format!("mode = \"sweep\"\n{VARIANT}[load]\ntargets = [\"GET http://h/\"]\nrates = \"fast\"\n"),
                "p.toml:6: load.rates: invalid type: string \"fast\", expected a sequence",
            ),
            (
                "an impossible generator bound",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}[slo]\nmax_lag = \"0ms\"\n"),
                "p.toml:8: slo.max_lag: must be longer than zero",
            ),
            (
                "duplicate variant",
                format!("mode = \"sweep\"\n{VARIANT}{VARIANT}{TARGETS}"),
                "p.toml:5: variant.name: \"a\" is used twice",
            ),
        ];
        let wrong: Vec<String> = rows
            .into_iter()
            .filter_map(|(name, text, want)| match parse(&text) {
                Err(err) if err.starts_with(want) => None,
                other => Some(format!("{name}: {other:?}")),
            })
            .collect();
        assert!(wrong.is_empty(), "{wrong:#?}");
    }
}

#[cfg(test)]
mod scenario_tests {
    use super::*;

    const HEAD: &str = "mode = \"sweep\"\n[[variant]]\nname = \"a\"\n[load]\ntargets = [\"GET http://h/search\"]\nrates = [10]\ntimeout = \"3s\"\nheaders = [\"X-Run: lab\"]\n";

    fn parse(text: &str) -> Result<Plan, String> {
        Plan::parse(text, "p.toml", Path::new("/plans")).map_err(|e| e.to_string())
    }

    #[test]
    fn background_scenarios_parse_with_load_defaults_and_their_own_slo() {
        let text = format!(
            "{HEAD}[slo]\nmax_lag = \"25ms\"\n[[load.scenario]]\nname = \"news\"\ntargets = [\"GET http://h/news\"]\nrate = 1\n[load.scenario.slo]\nsuccess = 1.0\np99 = \"1.5s\"\n[[load.scenario]]\nname = \"home\"\ntargets_file = \"home.txt\"\nrate = \"10/1s\"\ntimeout = \"1s\"\n"
        );
        let plan = parse(&text).expect("plan with scenarios");
        let [news, home] = &plan.load.scenarios[..] else {
            panic!("{:?}", plan.load.scenarios)
        };
        assert_eq!((news.name.as_str(), news.line), ("news", 11));
        assert_eq!(news.attack.name.as_deref(), Some("news"));
        assert_eq!(
            news.attack.rate.as_ref().map(TextOrNumber::text).as_deref(),
            Some("1")
        );
        // [load]'s per-attack settings fill in what the scenario leaves out.
        assert_eq!(news.attack.timeout.as_deref(), Some("3s"));
        assert_eq!(news.attack.headers, Some(vec!["X-Run: lab".to_owned()]));
        let slo = news.slo.as_ref().expect("news has an slo");
        assert_eq!(slo.min_success_ratio, Some(1.0));
        assert_eq!(slo.max_latency_ns, vec![(Percentile::P99, 1_500_000_000)]);
        // The generator's health is the plan's.
        assert_eq!(slo.generator.max_lag_p99_ns, 25_000_000);
        assert_eq!(home.attack.timeout.as_deref(), Some("1s"));
        assert_eq!(home.attack.targets_file.as_deref(), Some("home.txt"));
        assert!(home.slo.is_none());
        assert!(parse(HEAD).expect("no scenarios").load.scenarios.is_empty());
    }

    #[test]
    fn bad_scenarios_name_the_line_and_field() {
        let news = "[[load.scenario]]\nname = \"news\"\ntargets = [\"GET http://h/news\"]\n";
        let rows: [(&str, String, &str); 13] = [
            (
                "typo",
                format!("{HEAD}{news}rate = 1\nrat = 2\n"),
                "p.toml:13: rat: unknown field `rat`",
            ),
            (
                "no rate",
                format!("{HEAD}{news}"),
                "p.toml:9: load.scenario.rate: scenario \"news\" needs a rate",
            ),
            (
                "bad rate",
                format!("{HEAD}{news}rate = \"fast\"\n"),
                "p.toml:12: load.scenario.rate:",
            ),
            (
                "zero rate",
                format!("{HEAD}{news}rate = 0\n"),
                "p.toml:12: load.scenario.rate: must be above 0",
            ),
            (
                "duplicate name",
                format!("{HEAD}{news}rate = 1\n{news}rate = 2\n"),
                "p.toml:14: load.scenario.name: \"news\" is used twice",
            ),
            (
                "named like a variant",
                format!(
                    "{HEAD}[[load.scenario]]\nname = \"a\"\ntargets = [\"GET http://h/\"]\nrate = 1\n"
                ),
                "p.toml:9: load.scenario.name: \"a\" is the name of the variant on line 2",
            ),
            (
                "no targets",
                format!("{HEAD}[[load.scenario]]\nname = \"news\"\nrate = 1\n"),
                "p.toml:9: load.scenario.targets: scenario \"news\" has no targets",
            ),
            (
                "both targets",
                format!("{HEAD}{news}targets_file = \"t.txt\"\nrate = 1\n"),
                "p.toml:9: load.scenario.targets: scenario \"news\": give targets or targets_file, not both",
            ),
            (
                "a duration",
                format!("{HEAD}{news}rate = 1\nduration = \"5m\"\n"),
                "p.toml:13: load.scenario.duration: a background scenario runs for each step's whole length",
            ),
            (
                "bad timeout",
                format!("{HEAD}{news}rate = 1\ntimeout = \"soon\"\n"),
                "p.toml:13: load.scenario.timeout:",
            ),
            (
                "bad header",
                format!("{HEAD}{news}rate = 1\nheaders = [\"no colon\"]\n"),
                "p.toml:13: load.scenario.headers:",
            ),
            (
                "slo out of range",
                format!("{HEAD}{news}rate = 1\nslo = {{ success = 2 }}\n"),
                "p.toml:13: load.scenario.slo.success: must be between 0 and 1",
            ),
            (
                "generator health per scenario",
                format!("{HEAD}{news}rate = 1\nslo = {{ max_lag = \"1s\" }}\n"),
                "p.toml:13: load.scenario.slo: the generator's health (achieved, max_lag) is set once, in [slo]",
            ),
        ];
        let wrong: Vec<String> = rows
            .into_iter()
            .filter_map(|(name, text, want)| match parse(&text) {
                Err(err) if err.starts_with(want) => None,
                other => Some(format!("{name}: {other:?}")),
            })
            .collect();
        assert!(wrong.is_empty(), "{wrong:#?}");
    }
}

#[cfg(test)]
mod shipped {
    use super::*;

    #[test]
    fn every_shipped_plan_parses() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/plans");
        let mut modes = Vec::new();
        for entry in std::fs::read_dir(&dir).expect("examples/plans") {
            let path = entry.expect("entry").path();
            let plan = Plan::read(&path).unwrap_or_else(|e| panic!("{e}"));
            for variant in &plan.variants {
                if let TargetSource::File(file) = &variant.targets {
                    assert!(
                        dir.join(file).is_file(),
                        "{}: {}",
                        path.display(),
                        file.display()
                    );
                }
            }
            modes.push(plan.mode);
        }
        for mode in [Mode::Sweep, Mode::Search, Mode::Matrix] {
            assert!(modes.contains(&mode), "no shipped {mode:?} plan");
        }
        assert!(modes.len() >= 4, "one plan per field report");
    }
}
