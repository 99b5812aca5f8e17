//! The run folder, which is the write-up:
//!
//! ```text
//! plan.toml            the plan as run, secrets REDACTED
//! log.txt              a line per step: time, what ran, verdict, why
//! summary.json         plan, mode, complete flag, per-variant results, per-step rows
//! summary.md           Markdown tables ready to paste
//! index.html           the same at a glance: charts against the offered rate, tables,
//!                      links to every step's files (`index_page.rs`)
//! steps/NNN-VARIANT-RATE/records.llr, report.txt, plot.html, hooks.txt
//! ```
//!
//! `summary.json`, `summary.md` and `index.html` are rewritten after every step
//! ([`RunSummary::write`]), so an interrupted plan leaves a summary (marked incomplete)
//! that `-resume` continues from, and a page that says INCOMPLETE. `index.html` is made
//! from the summary's rows alone; each step's `plot.html` (`loadlab plot` of its
//! records) is made once, when the step is judged (`step.rs`).

pub(crate) mod held_rows;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use analysis::{Percentile, StepSummary, Verdict};
use serde::{Deserialize, Serialize};

use crate::LabError;
use crate::cells::{Cell, format_rate};
use crate::plan::{Mode, Plan};
use held_rows::{ConnectionsRow, HeldAnswer, connections_markdown};

/// A step's verdict in `summary.json`: the server's ([`Verdict`]'s word), or why
/// there is none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepVerdict {
    /// Every bound held.
    Pass,
    /// The generator delivered and a bound did not hold.
    Fail,
    /// The generator did not deliver: the step says nothing about the server.
    Inconclusive,
    /// The cell could not run (a hook, a server that is down, unreadable targets);
    /// also a row's state until it is judged.
    #[default]
    Failed,
    /// Not run: `load.stop_after_failures` skipped it.
    Skipped,
    /// Ctrl-C stopped it; not judged.
    Interrupted,
}

impl StepVerdict {
    /// The verdict of a judged window.
    pub fn of(verdict: &Verdict) -> StepVerdict {
        match verdict {
            Verdict::Pass => StepVerdict::Pass,
            Verdict::Fail(_) => StepVerdict::Fail,
            Verdict::Inconclusive(_) => StepVerdict::Inconclusive,
        }
    }

    /// Pass, fail or inconclusive: the step ran and its window was judged.
    pub fn is_judged(self) -> bool {
        matches!(
            self,
            StepVerdict::Pass | StepVerdict::Fail | StepVerdict::Inconclusive
        )
    }

    /// The word in `summary.json`, tables and logs.
    pub fn word(self) -> &'static str {
        match self {
            StepVerdict::Pass => "pass",
            StepVerdict::Fail => "fail",
            StepVerdict::Inconclusive => "inconclusive",
            StepVerdict::Failed => "failed",
            StepVerdict::Skipped => "skipped",
            StepVerdict::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for StepVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// What a step was to its plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    /// A step of a sweep.
    #[default]
    Sweep,
    /// A search's probe.
    Probe,
    /// A search's confirmation run at the rate found.
    Confirm,
    /// A cell of a matrix.
    Matrix,
}

impl StepKind {
    /// The kind of every step of a plan in `mode` (a search's are probes until one
    /// confirms).
    pub fn of(mode: Mode) -> StepKind {
        match mode {
            Mode::Sweep => StepKind::Sweep,
            Mode::Search => StepKind::Probe,
            Mode::Matrix => StepKind::Matrix,
        }
    }

    /// The word in `summary.json` and tables.
    pub fn word(self) -> &'static str {
        match self {
            StepKind::Sweep => "sweep",
            StepKind::Probe => "probe",
            StepKind::Confirm => "confirm",
            StepKind::Matrix => "matrix",
        }
    }
}

impl std::fmt::Display for StepKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// One step's row in `summary.json` and `summary.md`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepRow {
    /// The step's folder under `steps/`, its key for `-resume`.
    pub step: String,
    /// The variant's name.
    pub variant: String,
    /// Axis values (matrix), hook values aside.
    pub params: BTreeMap<String, String>,
    /// What the step was to the plan.
    pub kind: StepKind,
    /// 1-based run of a repeated cell.
    pub repeat: u32,
    /// The rate asked by the plan, requests per second (open model).
    pub rate_asked: Option<f64>,
    /// Users (closed model).
    pub users: Option<u64>,
    /// The rate the plan made due in the window, per second.
    pub asked_per_sec: f64,
    /// The rate sent in the window, per second.
    pub achieved_per_sec: f64,
    /// Requests in the window.
    pub requests: u64,
    /// Share of the window's requests that succeeded.
    pub success: f64,
    /// Latency percentiles of the window, in milliseconds.
    pub p50_ms: Option<f64>,
    /// 90th percentile, ms.
    pub p90_ms: Option<f64>,
    /// 99th percentile, ms.
    pub p99_ms: Option<f64>,
    /// Slowest, ms.
    pub max_ms: Option<f64>,
    /// The generator's send lag p99, ms.
    pub lag_p99_ms: f64,
    /// Failed requests by kind (HTTP status or transport error kind).
    pub errors: BTreeMap<String, u64>,
    /// The verdict, or why there is none.
    pub verdict: StepVerdict,
    /// Every reason.
    pub why: String,
    /// The record file, relative to the run folder.
    pub records: Option<String>,
    /// A sharded step's record files (one per shard that left one), relative to the
    /// run folder; `records` is then absent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<String>,
    /// The step's report, relative to the run folder.
    pub report: Option<String>,
    /// The hooks' output, relative to the run folder, if any hook ran.
    pub hooks: Option<String>,
    /// The step's plot page (as `loadlab plot` draws it), relative to the run folder;
    /// `None` when it could not be made (the reason is in `why`) or the step was not
    /// judged.
    #[serde(default)]
    pub plot: Option<String>,
    /// Wall time of the cell, hooks included, seconds.
    pub seconds: f64,
    /// Hook problems that did not fail the cell (a teardown).
    #[serde(skip)]
    pub notes: Vec<String>,
    /// Each background scenario's figures in the same window, in plan order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<ScenarioRow>,
    /// What ran out first in the step, as its `report.txt` says it (the verdict, then
    /// what followed and what held); empty when the step was not monitored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnosis: Vec<String>,
    /// Where the step's slow traced requests' time went, as its `report.txt` judged it
    /// (the plan's trace store): the headline, then what arrived; empty without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<String>,
    /// Connections held and messages in the window, when the step had stream steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<ConnectionsRow>,
}

/// A background scenario's figures in one step's window (`[[load.scenario]]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScenarioRow {
    /// The scenario's name.
    pub name: String,
    /// Requests in the window.
    pub requests: u64,
    /// Share of them that succeeded.
    pub success: f64,
    /// Median latency, ms.
    pub p50_ms: Option<f64>,
    /// 99th percentile, ms.
    pub p99_ms: Option<f64>,
    /// Failed requests by kind (HTTP status or transport error kind).
    pub errors: BTreeMap<String, u64>,
    /// Its own verdict when it has an SLO (pass, fail or inconclusive), else none.
    pub verdict: Option<StepVerdict>,
}

impl ScenarioRow {
    /// A scenario's window, and its verdict if it was judged.
    pub fn new(name: &str, summary: &StepSummary, verdict: Option<&Verdict>) -> ScenarioRow {
        ScenarioRow {
            name: name.to_owned(),
            requests: summary.requests,
            success: summary.success_ratio,
            p50_ms: percentile_ms(summary, Percentile::P50),
            p99_ms: percentile_ms(summary, Percentile::P99),
            errors: summary.errors_by_kind.iter().cloned().collect(),
            verdict: verdict.map(StepVerdict::of),
        }
    }

    /// The compact cell of `summary.md`: `news: 100% ok, p99 1.02s` (and the verdict
    /// when it failed).
    fn cell(&self) -> String {
        let p99 = match self.p99_ms {
            Some(ms) if ms >= 1000.0 => format!("{:.2}s", ms / 1000.0),
            Some(ms) => format!("{ms:.1}ms"),
            None => "-".to_owned(),
        };
        let verdict = match self.verdict {
            None | Some(StepVerdict::Pass) => String::new(),
            Some(other) => format!(" ({other})"),
        };
        format!(
            "{}: {}% ok, p99 {p99}{verdict}",
            self.name,
            format_share(self.success * 100.0)
        )
    }
}

/// `100`, `99.5`, `33.33`: as short as the share allows.
fn format_share(percent: f64) -> String {
    let text = format!("{percent:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn percentile_ms(summary: &StepSummary, p: Percentile) -> Option<f64> {
    summary
        .latency_ns
        .iter()
        .find(|(q, _)| *q == p)
        .map(|(_, ns)| *ns as f64 / 1e6)
}

impl StepRow {
    /// An empty row for `cell`, run in `dir`.
    pub fn new(plan: &Plan, cell: &Cell, dir: &Path, run_dir: &Path) -> StepRow {
        let variant = &plan.variants[cell.variant];
        let has_hooks =
            variant.setup.is_some() || variant.ready.is_some() || variant.teardown.is_some();
        StepRow {
            step: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            variant: variant.name.clone(),
            params: cell.params.iter().cloned().collect(),
            kind: StepKind::of(plan.mode),
            repeat: cell.repeat,
            rate_asked: cell.offer.rate(),
            users: cell.offer.users(),
            hooks: has_hooks.then(|| relative(&dir.join("hooks.txt"), run_dir)),
            records: Some(relative(&dir.join("records.llr"), run_dir)),
            ..StepRow::default()
        }
    }

    /// The cell could not run: no verdict on the server, only the reason.
    pub fn set_failed(&mut self, why: String) {
        self.verdict = StepVerdict::Failed;
        self.why = why;
    }

    /// Copies a window's figures and its verdict.
    pub fn fill(&mut self, summary: &StepSummary, verdict: &Verdict) {
        let ms = |p: Percentile| {
            summary
                .latency_ns
                .iter()
                .find(|(q, _)| *q == p)
                .map(|(_, ns)| *ns as f64 / 1e6)
        };
        self.asked_per_sec = summary.asked_per_sec;
        self.achieved_per_sec = summary.sent_per_sec;
        self.requests = summary.requests;
        self.success = summary.success_ratio;
        self.p50_ms = ms(Percentile::P50);
        self.p90_ms = ms(Percentile::P90);
        self.p99_ms = ms(Percentile::P99);
        self.max_ms = ms(Percentile::Max);
        self.lag_p99_ms = summary.lag_p99_ns as f64 / 1e6;
        self.errors = summary.errors_by_kind.iter().cloned().collect();
        self.connections = summary.streams.as_ref().map(ConnectionsRow::of);
        self.verdict = StepVerdict::of(verdict);
        self.why = report::words::verdict_why(verdict);
    }

    /// The window's figures as the tables print them: achieved/s, success, p50, p90,
    /// p99 and max. A window without requests has no success to show (a step whose
    /// users held, through it, connections they opened in the warm-up).
    pub(crate) fn figure_texts(&self) -> [String; 6] {
        let success = if self.requests == 0 {
            "-".to_owned()
        } else {
            format!("{:.2}%", self.success * 100.0)
        };
        [
            format!("{:.1}", self.achieved_per_sec),
            success,
            millis(self.p50_ms),
            millis(self.p90_ms),
            millis(self.p99_ms),
            millis(self.max_ms),
        ]
    }

    /// How the step's offer reads in a table: `500/s`, `10 users`, `schedule`.
    pub(crate) fn offer(&self) -> String {
        match (self.rate_asked, self.users) {
            (Some(rate), _) => format!("{}/s", format_rate(rate)),
            (None, Some(users)) => format!("{users} users"),
            (None, None) => "schedule".to_owned(),
        }
    }
}

/// `path` as the run folder's pages and rows name it: relative to `base`.
pub fn relative(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// One variant's answer to the plan's question.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VariantResult {
    /// The variant's name.
    pub variant: String,
    /// The highest rate that met the SLO, requests per second, if any did.
    pub max_rate_held: Option<f64>,
    /// The most users that met the SLO, if any did (steps of a closed model: a search
    /// over users, a sweep of users).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_users_held: Option<u64>,
    /// How it was found.
    pub how: String,
    /// Search: probes run (the confirmation included).
    pub probes: Option<usize>,
    /// Search: wall time, seconds.
    pub seconds: Option<f64>,
    /// When its steps held connections: what its highest passing step held (a users
    /// search's answer, which has no `max_rate_held`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<HeldAnswer>,
}

/// What a variant's capacity held counts: the highest rate that met the SLO, or (when
/// no side's steps had a rate: a search over users, a sweep of users) the most users.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Capacity {
    /// Requests (a flow's: runs started) per second.
    Rate,
    /// Users at once (a closed model).
    Users,
}

impl Capacity {
    /// The capacity `results` are compared in (one variant's on every side, or every
    /// variant of a run): users when none has a rate held and some has users held.
    pub fn of<'a>(results: impl Iterator<Item = &'a VariantResult> + Clone) -> Capacity {
        let rate = results.clone().any(|v| v.max_rate_held.is_some());
        if !rate && results.into_iter().any(|v| v.max_users_held.is_some()) {
            Capacity::Users
        } else {
            Capacity::Rate
        }
    }

    /// What `result` held, in this capacity.
    pub fn held(self, result: &VariantResult) -> Option<f64> {
        match self {
            Capacity::Rate => result.max_rate_held,
            Capacity::Users => result.max_users_held.map(|users| users as f64),
        }
    }

    /// How a regression's line names it: `max rate held`, `most users held`.
    pub fn name(self) -> &'static str {
        match self {
            Capacity::Rate => "max rate held",
            Capacity::Users => "most users held",
        }
    }
}

/// `summary.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The plan's name.
    pub plan: String,
    /// The plan file as given.
    pub plan_file: String,
    /// How the plan chose its steps.
    pub mode: Mode,
    /// False while running, or when the plan was interrupted.
    pub complete: bool,
    /// When the plan first started, UTC (a resumed run keeps the first start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    /// Per variant, in plan order.
    pub variants: Vec<VariantResult>,
    /// Per step, in run order.
    pub steps: Vec<StepRow>,
    /// Matrix: per cell, the median and spread of its repeats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<CellStats>,
}

/// A matrix cell over its repeats: the median and the spread (min..max).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CellStats {
    /// The variant's name.
    pub variant: String,
    /// Axis values.
    pub params: BTreeMap<String, String>,
    /// The rate asked, req/s (open model).
    pub rate_asked: Option<f64>,
    /// Repeats judged.
    pub runs: usize,
    /// Repeats that passed.
    pub passed: usize,
    /// Achieved rate: median, min, max.
    pub achieved_per_sec: [f64; 3],
    /// Success share: median, min, max.
    pub success: [f64; 3],
    /// p50 ms: median, min, max.
    pub p50_ms: [f64; 3],
    /// p99 ms: median, min, max.
    pub p99_ms: [f64; 3],
}

/// Median, min and max (the median of an even count is the mean of the middle two).
fn spread(mut values: Vec<f64>) -> [f64; 3] {
    if values.is_empty() {
        return [0.0; 3];
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    [median, values[0], values[n - 1]]
}

/// Groups judged rows by cell (variant, axis values, rate), in first-seen order.
pub fn cell_stats(steps: &[StepRow]) -> Vec<CellStats> {
    let mut cells: Vec<(CellStats, Vec<&StepRow>)> = Vec::new();
    for row in steps.iter().filter(|r| r.verdict.is_judged()) {
        let same = |c: &CellStats| {
            c.variant == row.variant && c.params == row.params && c.rate_asked == row.rate_asked
        };
        match cells.iter_mut().find(|(c, _)| same(c)) {
            Some((_, rows)) => rows.push(row),
            None => cells.push((
                CellStats {
                    variant: row.variant.clone(),
                    params: row.params.clone(),
                    rate_asked: row.rate_asked,
                    ..CellStats::default()
                },
                vec![row],
            )),
        }
    }
    cells
        .into_iter()
        .map(|(mut cell, rows)| {
            let of = |f: &dyn Fn(&StepRow) -> Option<f64>| {
                spread(rows.iter().filter_map(|r| f(r)).collect())
            };
            cell.runs = rows.len();
            cell.passed = rows
                .iter()
                .filter(|r| r.verdict == StepVerdict::Pass)
                .count();
            cell.achieved_per_sec = of(&|r| Some(r.achieved_per_sec));
            cell.success = of(&|r| Some(r.success));
            cell.p50_ms = of(&|r| r.p50_ms);
            cell.p99_ms = of(&|r| r.p99_ms);
            cell
        })
        .collect()
}

impl RunSummary {
    /// Writes `summary.json`, `summary.md` and `index.html` (whole files, replaced
    /// atomically), so an interrupted plan has all three.
    pub fn write(&self, dir: &Path) -> Result<(), LabError> {
        let json = serde_json::to_string_pretty(self)
            .map_err(|e| LabError::Folder(format!("summary.json: {e}")))?;
        write_atomic(&dir.join("summary.json"), json.as_bytes())?;
        write_atomic(&dir.join("summary.md"), self.markdown().as_bytes())?;
        write_atomic(&dir.join("index.html"), self.index_html().as_bytes())
    }

    /// Reads a run folder's `summary.json`, if there is one.
    pub fn read(dir: &Path) -> Result<Option<RunSummary>, LabError> {
        let path = dir.join("summary.json");
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| LabError::Folder(format!("{}: {e}", path.display()))),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(cause) => Err(LabError::Io { path, cause }),
        }
    }

    /// Per variant, the step where its limit shows: its first step that did not pass
    /// (in the order the steps ran, as docs/PLANS.md says), else its highest passing
    /// step with a diagnosis. Renderers say the step's verdict and why in the words of
    /// the steps' table, then its diagnosis.
    pub fn ran_out_first(&self) -> Vec<(&str, &StepRow)> {
        let mut names: Vec<&str> = self.variants.iter().map(|v| v.variant.as_str()).collect();
        if names.is_empty() {
            // A matrix: the variants in the order their first steps ran.
            for step in &self.steps {
                if !names.contains(&step.variant.as_str()) {
                    names.push(&step.variant);
                }
            }
        }
        names
            .into_iter()
            .filter_map(|variant| {
                let steps = self.steps.iter().filter(|s| s.variant == variant);
                let first_miss = steps
                    .clone()
                    .find(|s| matches!(s.verdict, StepVerdict::Fail | StepVerdict::Inconclusive));
                let rate = |s: &&StepRow| s.rate_asked.unwrap_or(0.0);
                let step = first_miss.or_else(|| {
                    steps
                        .filter(|s| !s.diagnosis.is_empty())
                        .max_by(|a, b| rate(a).total_cmp(&rate(b)))
                })?;
                Some((variant, step))
            })
            .collect()
    }

    /// The steps whose slow traced requests were read back from the plan's trace
    /// store (judged or not), in the order they ran.
    pub fn traced_steps(&self) -> impl Iterator<Item = &StepRow> {
        self.steps.iter().filter(|s| !s.spans.is_empty())
    }

    /// `## Where the time went`: per traced step, its span breakdown's headline and
    /// what arrived, as its `report.txt` says them.
    fn spans_markdown(&self) -> String {
        let mut md = String::new();
        for step in self.traced_steps() {
            if md.is_empty() {
                md.push_str("## Where the time went (trace_store)\n\n");
            }
            let _ = write!(md, "- **{}**, step {}:", step.variant, step.step);
            for line in &step.spans {
                let _ = write!(md, "\n  - {line}");
            }
            md.push('\n');
        }
        if !md.is_empty() {
            md.push('\n');
        }
        md
    }

    /// A [`RunSummary::ran_out_first`] step's lead: `step 002 (fail: success 98.48%
    /// under 99.00%)`, its verdict and why as the steps' table says them.
    pub fn ran_out_lead(step: &StepRow) -> String {
        match step.verdict {
            StepVerdict::Pass => format!("step {} (pass)", step.step),
            _ if step.why.is_empty() => format!("step {} ({})", step.step, step.verdict),
            _ => format!("step {} ({}: {})", step.step, step.verdict, step.why),
        }
    }

    /// Markdown ready to paste: the maximum rate per variant with its improvement
    /// against the first variant (field report 000), then one row per step (001, 004).
    pub fn markdown(&self) -> String {
        let mut md = format!(
            "# {}\n\nmode: {}{}\n\n",
            self.plan,
            self.mode,
            if self.complete {
                ""
            } else {
                " (INCOMPLETE: interrupted or still running)"
            }
        );
        if self.mode != Mode::Matrix {
            md.push_str(&self.variants_markdown());
        }
        if !self.cells.is_empty() {
            md.push_str(&self.cells_markdown());
        }
        let ran_out = self.ran_out_first();
        if !ran_out.is_empty() {
            md.push_str("## What ran out first\n\n");
            for (variant, step) in ran_out {
                let _ = write!(md, "- **{variant}**, {}", RunSummary::ran_out_lead(step));
                for line in &step.diagnosis {
                    let _ = write!(md, "\n  - {line}");
                }
                md.push('\n');
            }
            md.push('\n');
        }
        md.push_str(&self.spans_markdown());
        let axes: Vec<&String> = self
            .steps
            .iter()
            .flat_map(|s| s.params.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        md.push_str("| step | variant |");
        for axis in &axes {
            let _ = write!(md, " {axis} |");
        }
        let scenarios = self.steps.iter().any(|s| !s.scenarios.is_empty());
        md.push_str(" offered | achieved/s | success | p50 | p90 | p99 | max | errors |");
        if scenarios {
            md.push_str(" scenarios |");
        }
        md.push_str(" verdict | why |\n|---|---|");
        md.push_str(&"---|".repeat(axes.len()));
        md.push_str("---:|---:|---:|---:|---:|---:|---:|---|");
        md.push_str(if scenarios {
            "---|---|---|\n"
        } else {
            "---|---|\n"
        });
        for s in &self.steps {
            let _ = write!(md, "| {} | {} |", s.step, s.variant);
            for axis in &axes {
                let _ = write!(md, " {} |", s.params.get(*axis).map_or("", String::as_str));
            }
            let errors = if s.errors.is_empty() {
                "-".to_owned()
            } else {
                s.errors
                    .iter()
                    .map(|(k, n)| format!("{k}: {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = write!(
                md,
                " {} | {} | {errors} |",
                s.offer(),
                s.figure_texts().join(" | ")
            );
            if scenarios {
                let cells: Vec<String> = s.scenarios.iter().map(ScenarioRow::cell).collect();
                let _ = write!(md, " {} |", cells.join("; "));
            }
            let _ = writeln!(md, " {} | {} |", s.verdict, s.why.replace('|', "/"));
        }
        let connections = connections_markdown(&self.steps);
        if !connections.is_empty() {
            md.push('\n');
            md.push_str(&connections);
        }
        md
    }
}

impl RunSummary {
    /// Each variant's answer with its improvement against the first, as table cells
    /// for `summary.md` and `index.html` alike: the headers, then each variant's cells
    /// (in the headers' order). The answer is the maximum rate held (the most users,
    /// when the steps were users) or, when its steps held connections, the connections
    /// and messages a second of its highest passing step.
    pub(crate) fn answers(&self) -> (&'static [&'static str], Vec<Vec<String>>) {
        let held = self.variants.iter().any(|v| v.held.is_some());
        let capacity = Capacity::of(self.variants.iter());
        let users = capacity == Capacity::Users;
        let level = |v: &VariantResult| match (held, &v.held) {
            (true, answer) => answer.as_ref().map(|a| a.connections as f64),
            (false, _) => capacity.held(v),
        };
        let baseline = self.variants.first().and_then(level);
        let cells = (self.variants.iter()).map(|v| {
            let improvement = match (level(v), baseline) {
                (Some(held), Some(base)) if base > 0.0 => format!("{:.2}x", held / base),
                _ => "-".to_owned(),
            };
            let mut cells = match (&v.held, held) {
                (Some(a), _) => {
                    let offered = match (a.users, v.max_rate_held) {
                        (Some(users), _) => format!("{users} users"),
                        (None, Some(rate)) => format!("{}/s", format_rate(rate)),
                        (None, None) => "-".to_owned(),
                    };
                    vec![
                        a.connections.to_string(),
                        format!("{:.1}", a.messages_in_per_sec),
                        format!("{:.1}", a.messages_out_per_sec),
                        offered,
                    ]
                }
                (None, true) => ["none", "-", "-", "-"].map(str::to_owned).to_vec(),
                (None, false) if users => vec![
                    (v.max_users_held).map_or("none".to_owned(), |users| format!("{users} users")),
                ],
                (None, false) => vec![v.max_rate_held.map_or("none".to_owned(), format_rate)],
            };
            cells.push(improvement);
            cells
        });
        let headers: &[&str] = if held {
            &[
                "connections held",
                "messages/s in",
                "messages/s out",
                "offered",
                "improvement",
            ]
        } else if users {
            &["most users held", "improvement"]
        } else {
            &["max req/s held", "improvement"]
        };
        (headers, cells.collect())
    }

    /// [`RunSummary::answers`] as Markdown, with how each was found.
    fn variants_markdown(&self) -> String {
        let (headers, rows) = self.answers();
        let mut md = format!("| variant | {} | how |\n|---|", headers.join(" | "));
        md.push_str(&"---:|".repeat(headers.len()));
        md.push_str("---|\n");
        for (v, cells) in self.variants.iter().zip(rows) {
            let _ = writeln!(md, "| {} | {} | {} |", v.variant, cells.join(" | "), v.how);
        }
        md.push('\n');
        md
    }

    /// A matrix's cells: the median of the repeats with the spread in brackets.
    fn cells_markdown(&self) -> String {
        let axes: Vec<&String> = self
            .cells
            .iter()
            .flat_map(|c| c.params.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut md = "Per cell: the median of its repeats [min..max].\n\n| variant |".to_owned();
        for axis in &axes {
            let _ = write!(md, " {axis} |");
        }
        md.push_str(" offered | runs | passed | achieved/s | success | p50 | p99 |\n|---|");
        md.push_str(&"---|".repeat(axes.len()));
        md.push_str("---:|---:|---:|---:|---:|---:|---:|\n");
        for c in &self.cells {
            let _ = write!(md, "| {} |", c.variant);
            for axis in &axes {
                let _ = write!(md, " {} |", c.params.get(*axis).map_or("", String::as_str));
            }
            let offered = c
                .rate_asked
                .map_or("-".to_owned(), |r| format!("{}/s", format_rate(r)));
            let [a, a_lo, a_hi] = c.achieved_per_sec;
            let [s, s_lo, s_hi] = c.success;
            let [p50, p50_lo, p50_hi] = c.p50_ms;
            let [p99, p99_lo, p99_hi] = c.p99_ms;
            let _ = writeln!(
                md,
                " {offered} | {} | {} | {a:.1} [{a_lo:.1}..{a_hi:.1}] | {:.2}% [{:.2}..{:.2}] | {p50:.1}ms [{p50_lo:.1}..{p50_hi:.1}] | {p99:.1}ms [{p99_lo:.1}..{p99_hi:.1}] |",
                c.runs,
                c.passed,
                s * 100.0,
                s_lo * 100.0,
                s_hi * 100.0,
            );
        }
        md.push('\n');
        md
    }
}

pub(crate) fn millis(ms: Option<f64>) -> String {
    ms.map_or("-".to_owned(), |ms| format!("{ms:.1}ms"))
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), LabError> {
    let tmp = path.with_extension("tmp");
    let io = |cause| LabError::Io {
        path: path.to_owned(),
        cause,
    };
    std::fs::write(&tmp, bytes).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// Now, UTC, to the nanosecond: `2026-11-23T19:03:37.123456789Z`.
fn now_text() -> String {
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    record::format_timestamp(now_ns)
}

/// Now, UTC, to the second: when a plan started.
pub fn started_now() -> String {
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    record::format_timestamp(now_s.saturating_mul(1_000_000_000))
}

/// Appends a line to `log.txt`: time, what ran, verdict, why.
pub fn log_line(dir: &Path, line: &str) -> Result<(), LabError> {
    let path = dir.join("log.txt");
    let mut file = std::fs::File::options()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|cause| LabError::Io {
            path: path.clone(),
            cause,
        })?;
    writeln!(file, "{} {line}", now_text()).map_err(|cause| LabError::Io { path, cause })
}

/// Secret header values (any header whose name [`units::redact::is_secret_name`] flags:
/// `Authorization`, `Cookie`, `X-Api-Key`, `X-Auth-Token`, ...) and URL passwords and
/// secret query parameters ([`units::redact_url`]) become `REDACTED`, so a run folder can
/// be shared. Headers are found as `Name: value` anywhere in the plan's text (inside
/// TOML strings, where a target's lines are joined by `\n`).
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (colon, _) in text.match_indices(": ") {
        if colon < at {
            continue;
        }
        let name_start = text[..colon]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .map_or(0, |i| i + 1);
        let name = &text[name_start..colon];
        if name.is_empty() || !units::redact::is_secret_name(name) {
            continue;
        }
        let value_start = colon + 2;
        // The value ends at the end of the line, a TOML string's quote or its `\n`.
        let value_end = text[value_start..]
            .find(['"', '\'', '\n'])
            .into_iter()
            .chain(text[value_start..].find("\\n"))
            .min()
            .map_or(text.len(), |i| value_start + i);
        if text[value_start..value_end].trim().is_empty() {
            continue;
        }
        out.push_str(&text[at..value_start]);
        out.push_str(units::REDACTED);
        at = value_end;
    }
    out.push_str(&text[at..]);
    units::redact_url(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted() {
        let rows = [
            (
                r#"targets = ["GET http://h/\nAuthorization: bearer abc\nX-Trace: 1"]"#,
                r#"targets = ["GET http://h/\nAuthorization: REDACTED\nX-Trace: 1"]"#,
            ),
            (
                r#"headers = ["Cookie: a=b; c=d"]"#,
                r#"headers = ["Cookie: REDACTED"]"#,
            ),
            ("x-api-key: k\nname = 1", "x-api-key: REDACTED\nname = 1"),
            (
                "url = \"postgres://u:pw@127.0.0.1/db\"",
                "url = \"postgres://u:REDACTED@127.0.0.1/db\"",
            ),
            (
                "plain = \"http://127.0.0.1:8080/\"",
                "plain = \"http://127.0.0.1:8080/\"",
            ),
            (
                "# an Authorization: header goes here",
                "# an Authorization: REDACTED",
            ),
        ];
        for (text, want) in rows {
            assert_eq!(redact(text), want, "{text}");
        }
    }

    #[test]
    fn matrix_cells_have_the_median_and_spread_of_their_repeats() {
        let row = |rate: f64, replicas: &str, p99: f64, verdict: StepVerdict| StepRow {
            variant: "a".to_owned(),
            params: [("replicas".to_owned(), replicas.to_owned())].into(),
            rate_asked: Some(rate),
            p99_ms: Some(p99),
            success: 1.0,
            verdict,
            ..StepRow::default()
        };
        let steps = [
            row(100.0, "1", 30.0, StepVerdict::Pass),
            row(100.0, "2", 5.0, StepVerdict::Pass),
            row(100.0, "1", 10.0, StepVerdict::Fail),
            row(100.0, "1", 20.0, StepVerdict::Pass),
            row(100.0, "1", 1.0, StepVerdict::Failed),
        ];
        let cells = cell_stats(&steps);
        assert_eq!(cells.len(), 2);
        assert_eq!(
            (cells[0].runs, cells[0].passed, cells[0].p99_ms),
            (3, 2, [20.0, 10.0, 30.0])
        );
        assert_eq!((cells[1].runs, cells[1].p99_ms), (1, [5.0, 5.0, 5.0]));
        assert_eq!(spread(vec![4.0, 1.0, 3.0, 2.0]), [2.5, 1.0, 4.0]);
        let summary = RunSummary {
            mode: Mode::Matrix,
            cells,
            ..RunSummary::default()
        };
        let md = summary.markdown();
        assert!(md.contains("| a | 1 | 100/s | 3 | 2 |"), "{md}");
        assert!(md.contains("20.0ms [10.0..30.0]"), "{md}");
    }

    #[test]
    fn markdown_has_the_improvement_and_step_tables() {
        let summary = RunSummary {
            plan: "p".to_owned(),
            mode: Mode::Sweep,
            complete: true,
            variants: vec![
                VariantResult {
                    variant: "ruby".to_owned(),
                    max_rate_held: Some(256.0),
                    how: "sweep".to_owned(),
                    ..VariantResult::default()
                },
                VariantResult {
                    variant: "go".to_owned(),
                    max_rate_held: Some(1024.0),
                    how: "sweep".to_owned(),
                    ..VariantResult::default()
                },
            ],
            steps: vec![StepRow {
                step: "000-ruby-256".to_owned(),
                variant: "ruby".to_owned(),
                rate_asked: Some(256.0),
                requests: 2560,
                success: 1.0,
                p50_ms: Some(1.26),
                verdict: StepVerdict::Pass,
                ..StepRow::default()
            }],
            ..RunSummary::default()
        };
        let md = summary.markdown();
        assert!(md.contains("| ruby | 256 | 1.00x | sweep |"), "{md}");
        assert!(md.contains("| go | 1024 | 4.00x | sweep |"), "{md}");
        assert!(
            md.contains("| 000-ruby-256 | ruby | 256/s | 0.0 | 100.00% | 1.3ms |"),
            "{md}"
        );
    }

    #[test]
    fn a_sweep_of_users_answers_in_users() {
        let variant = |name: &str, users: Option<u64>| VariantResult {
            variant: name.to_owned(),
            max_users_held: users,
            how: "sweep".to_owned(),
            ..VariantResult::default()
        };
        let summary = RunSummary {
            plan: "p".to_owned(),
            mode: Mode::Sweep,
            variants: vec![variant("pool-10", Some(20)), variant("pool-40", Some(70))],
            ..RunSummary::default()
        };
        let md = summary.markdown();
        assert!(
            md.contains("| variant | most users held | improvement | how |"),
            "{md}"
        );
        assert!(
            md.contains("| pool-10 | 20 users | 1.00x | sweep |"),
            "{md}"
        );
        assert!(
            md.contains("| pool-40 | 70 users | 3.50x | sweep |"),
            "{md}"
        );
    }
}
